//===- MetadataInstantiate.cpp - One call's metadata of a kernel ----------===//
//
// A runtime-shapes (or varlen) kernel's metadata made concrete for one
// call: its batch, lengths and grid (fa/Runtime/Metadata.h).
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Limits.h"
#include "fa/Runtime/Metadata.h"

#include <string>

namespace fa::rt {

StatusOr<KernelMetadata>
KernelMetadata::instantiate(int64_t batchSize, int64_t queries, int64_t keys,
                            int64_t numSequences, int64_t longest) const {
  if (!runtimeShapes)
    return *this;
  if (batchSize < 1 || queries < 1 || keys < 1)
    return Status::error(
        "batch and sequence lengths must be positive, got batch " +
        std::to_string(batchSize) + ", seq_q " + std::to_string(queries) +
        ", seq_kv " + std::to_string(keys));
  if (varlen && batchSize != 1)
    return Status::error("packed sequences (varlen) take batch-1 tensors, "
                         "got batch " +
                         std::to_string(batchSize));
  if (varlen && (numSequences < 1 || longest < 1 || longest > queries))
    return Status::error(
        "packed sequences (varlen) need at least one sequence and a longest "
        "query sequence in [1, seq_q = " +
        std::to_string(queries) + "], got " + std::to_string(numSequences) +
        " sequences, max_seqlen_q " + std::to_string(longest));
  const int64_t rows = varlen ? longest : queries;
  const int64_t gridZ = varlen ? numSequences : batchSize;
  const int64_t qBlocks = rows / blockQ + (rows % blockQ != 0);
  if (qBlocks > kMaxGridX || headsQ > kMaxGridYZ || gridZ > kMaxGridYZ)
    return Status::error("grid (" + std::to_string(qBlocks) + ", " +
                         std::to_string(headsQ) + ", " + std::to_string(gridZ) +
                         ") exceeds the launch limits (x at most " +
                         std::to_string(kMaxGridX) + ", y and z at most " +
                         std::to_string(kMaxGridYZ) + ")");
  KernelMetadata m = *this;
  m.runtimeShapes = false;
  m.batch = batchSize;
  m.seqQ = queries;
  m.seqKV = keys;
  if (varlen) {
    m.sequences = numSequences;
    m.maxSeqQ = longest;
  }
  m.grid = {uint32_t(qBlocks), uint32_t(headsQ), uint32_t(gridZ)};
  return m;
}

} // namespace fa::rt
