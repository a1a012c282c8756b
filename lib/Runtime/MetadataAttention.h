//===- MetadataAttention.h - An attention kernel's .meta checks -*- C++ -*-===//

#ifndef FA_LIB_RUNTIME_METADATAATTENTION_H
#define FA_LIB_RUNTIME_METADATAATTENTION_H

#include "fa/Runtime/Metadata.h"

#include <map>
#include <string>
#include <string_view>

namespace fa::rt::detail {

/// The keys a kernel with runtime shapes takes from the call.
bool isCallShapeKey(std::string_view key);

/// An attention kernel's (kind = forward or backward) flags after its lines
/// were read into `m` (`seenOnLine`: each key's line) and its required keys
/// were all seen: runtime shapes and the keys they leave to the call,
/// varlen, FP8 inputs and their descales, determinism, the head ratio.
Status checkAttentionFlags(KernelMetadata &m,
                           const std::map<std::string, int> &seenOnLine);

/// Each launch's parameters (a forward's, or a backward's three) against
/// what the kernel kind, its flags and its tensor maps allow and need.
Status checkLaunchParameters(const KernelMetadata &m,
                             const std::map<std::string, int> &seenOnLine);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATAATTENTION_H
