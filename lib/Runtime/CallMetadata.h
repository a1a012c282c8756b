//===- CallMetadata.h - The metadata one call runs with ---------*- C++ -*-===//
//
// A kernel built for one shape runs every call with its own metadata; a
// runtime-shapes (or varlen) kernel with its metadata instantiated for the
// call's sizes (KernelMetadata::instantiate). Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_CALLMETADATA_H
#define FA_RUNTIME_CALLMETADATA_H

#include "fa/Runtime/Attention.h"
#include "fa/Runtime/Kernel.h"

#include <memory>
#include <optional>

namespace fa::rt {

/// The longest key sequence of a call (a varlen backward's grid).
inline int64_t longestKeys(const AttentionArgs &) { return 0; }
inline int64_t longestKeys(const AttentionBackwardArgs &a) {
  return a.maxSeqKV;
}

/// The sizes instantiate() takes, from a call's arguments.
template <typename Args> CallMetadataCache::Sizes callSizes(const Args &a) {
  return {a.batch, a.seqQ, a.seqKV, a.sequences, a.maxSeqQ, longestKeys(a)};
}

/// The metadata a call of `a` runs with, in `out`: `m` itself for a kernel
/// built for one shape (no copy on the launch path), else `m` instantiated
/// for the call's shape into `shaped`.
template <typename Args>
Status metadataForCall(const KernelMetadata &m, const Args &a,
                       std::optional<KernelMetadata> &shaped,
                       const KernelMetadata *&out) {
  out = &m;
  if (!m.runtimeShapes)
    return Status::success();
  const CallMetadataCache::Sizes n = callSizes(a);
  StatusOr<KernelMetadata> instance =
      m.instantiate(n[0], n[1], n[2], n[3], n[4], n[5]);
  if (!instance.ok())
    return instance.status();
  shaped = std::move(*instance);
  out = &*shaped;
  return Status::success();
}

/// The same for a launch of `kernel`: a runtime-shapes kernel's metadata for
/// the call's sizes comes from its cache of recent calls (held in `shaped`),
/// so a repeated shape copies nothing.
template <typename Args>
Status metadataForLaunch(const Kernel &kernel, const Args &a,
                         std::shared_ptr<const KernelMetadata> &shaped,
                         const KernelMetadata *&out) {
  out = &kernel.metadata();
  if (!out->runtimeShapes)
    return Status::success();
  StatusOr<std::shared_ptr<const KernelMetadata>> instance =
      kernel.calls().instantiate(*out, callSizes(a));
  if (!instance.ok())
    return instance.status();
  shaped = std::move(*instance);
  out = shaped.get();
  return Status::success();
}

} // namespace fa::rt

#endif // FA_RUNTIME_CALLMETADATA_H
