//===- MetadataQuantize.h - A quantization's .meta checks -------*- C++ -*-===//

#ifndef FA_LIB_RUNTIME_METADATAQUANTIZE_H
#define FA_LIB_RUNTIME_METADATAQUANTIZE_H

#include "fa/Runtime/Metadata.h"

namespace fa::rt::detail {

/// A quantization ("kind": "quantize") after its keys were read into `m`
/// (the key table let only a quantization's through, and all of those it
/// requires): the keys consistent with each other; fills the attention
/// fields a quantization implies (seq_kv, head_dim_v, out_dtype).
Status finishQuantize(KernelMetadata &m);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATAQUANTIZE_H
