//===- MetadataQuantize.cpp - A quantization's .meta keys -----------------===//
//
// The checks a `kind = quantize` .meta gets after parsing (Metadata.cpp
// reads the lines; the key table there knows every key of both kinds).
//
//===----------------------------------------------------------------------===//

#include "MetadataQuantize.h"

#include <algorithm>
#include <iterator>

namespace fa::rt {
namespace {

/// The keys of a quantization (kind = quantize) and whether each is
/// required.
const std::pair<const char *, bool> kQuantizeKeys[] = {
    {"kind", true},           {"entry", true},     {"chip", true},
    {"dtype", true},          {"batch", true},     {"heads", true},
    {"groups", true},         {"seq", true},       {"head_dim", true},
    {"rotation_seed", false}, {"grid", true},      {"block", true},
    {"shared_bytes", true},   {"args", true},      {"pre_entry", true},
    {"pre_grid", true},       {"pre_block", true}, {"pre_shared_bytes", true},
    {"pre_args", true},       {"compiler", false}};

} // namespace

Status detail::finishQuantize(KernelMetadata &m,
                              const std::map<std::string, int> &seenOnLine) {
  auto at = [&](const char *key) {
    auto it = seenOnLine.find(key);
    return " (line " + std::to_string(it->second) + ")";
  };
  for (const auto &[key, line] : seenOnLine)
    if (std::none_of(std::begin(kQuantizeKeys), std::end(kQuantizeKeys),
                     [&](const auto &k) { return key == k.first; }))
      return Status::error("line " + std::to_string(line) + ": key '" + key +
                           "' is not a quantization's (kind = quantize" +
                           at("kind") + ")");
  std::string missing;
  for (const auto &[key, required] : kQuantizeKeys)
    if (required && !seenOnLine.count(key))
      missing += (missing.empty() ? "" : ", ") + std::string(key);
  if (!missing.empty())
    return Status::error(
        "missing required key" +
        std::string(missing.find(',') == std::string::npos ? "" : "s") +
        " for a quantization (kind = quantize" + at("kind") + "): " + missing);
  if (m.isFP8())
    return Status::error("dtype" + at("dtype") +
                         ": a quantization's input is bf16 or f16");
  if (m.headsQ % m.headsKV != 0)
    return Status::error("heads = " + std::to_string(m.headsQ) + at("heads") +
                         " is not a multiple of groups = " +
                         std::to_string(m.headsKV) + at("groups"));
  if (m.args != std::vector<std::string>{"x", "amax", "out", "descale"})
    return Status::error("args" + at("args") +
                         ": a quantization's scale kernel takes "
                         "x,amax,out,descale");
  if (m.pre.args != std::vector<std::string>{"x", "amax"})
    return Status::error("pre_args" + at("pre_args") +
                         ": a quantization's amax kernel takes x,amax");
  if (m.pre.entry == m.entry)
    return Status::error("entry" + at("entry") + " and pre_entry" +
                         at("pre_entry") + " must name two kernels");
  if (m.chipVersion() < 89)
    return Status::error("chip" + at("chip") +
                         ": e4m3 conversion needs sm_89 or later");
  m.seqKV = m.seqQ;
  m.headDimV = m.headDim;
  m.outDtype = m.dtype;
  return Status::success();
}

} // namespace fa::rt
