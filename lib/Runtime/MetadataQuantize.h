//===- MetadataQuantize.h - A quantization's .meta keys ---------*- C++ -*-===//

#ifndef FA_LIB_RUNTIME_METADATAQUANTIZE_H
#define FA_LIB_RUNTIME_METADATAQUANTIZE_H

#include "fa/Runtime/Metadata.h"

#include <map>
#include <string>

namespace fa::rt::detail {

/// kind = quantize, after its lines were read into `m` (`seenOnLine`: each
/// key's line): its keys and only those, consistent with each other; fills
/// the attention fields a quantization implies (seq_kv, head_dim_v,
/// out_dtype).
Status finishQuantize(KernelMetadata &m,
                      const std::map<std::string, int> &seenOnLine);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATAQUANTIZE_H
