//===- MetadataQuantize.cpp - A quantization's .meta checks ---------------===//
//
// The checks between the keys of a quantization's .meta ("kind":
// "quantize"; which keys it has, and their types, are the key table's in
// Metadata.cpp).
//
//===----------------------------------------------------------------------===//

#include "MetadataQuantize.h"

namespace fa::rt {

Status detail::finishQuantize(KernelMetadata &m) {
  if (m.isFP8())
    return Status::error("\"dtype\": a quantization's input is bf16 or f16");
  if (m.headsQ % m.headsKV != 0)
    return Status::error(
        "\"heads\": " + std::to_string(m.headsQ) +
        " is not a multiple of \"groups\": " + std::to_string(m.headsKV));
  if (m.args != std::vector<std::string>{"x", "amax", "out", "descale"})
    return Status::error("\"args\": a quantization's scale kernel takes "
                         "[\"x\", \"amax\", \"out\", \"descale\"]");
  if (m.pre.args != std::vector<std::string>{"x", "amax"})
    return Status::error("\"pre\".\"args\": a quantization's amax kernel "
                         "takes [\"x\", \"amax\"]");
  if (m.pre.entry == m.entry)
    return Status::error(
        "\"entry\" and \"pre\".\"entry\" must name two kernels");
  if (m.chipVersion() < 89)
    return Status::error("\"chip\": e4m3 conversion needs sm_89 or later");
  m.seqKV = m.seqQ;
  m.headDimV = m.headDim;
  m.outDtype = m.dtype;
  return Status::success();
}

} // namespace fa::rt
