//===- MetadataAttention.h - An attention kernel's .meta checks -*- C++ -*-===//

#ifndef FA_LIB_RUNTIME_METADATAATTENTION_H
#define FA_LIB_RUNTIME_METADATAATTENTION_H

#include "fa/Runtime/Metadata.h"

namespace fa::rt::detail {

/// An attention kernel's (kind forward or backward) flags after its keys
/// were read into `m` (`outDtypeGiven`: whether it has "out_dtype"):
/// runtime shapes, varlen, FP8 inputs and their descales, determinism, the
/// head ratio.
Status checkAttentionFlags(KernelMetadata &m, bool outDtypeGiven);

/// Each launch's parameters (a forward's, or a backward's three) against
/// what the kernel kind, its flags and its tensor maps allow and need.
Status checkLaunchParameters(const KernelMetadata &m);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATAATTENTION_H
