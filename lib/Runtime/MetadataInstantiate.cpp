//===- MetadataInstantiate.cpp - One call's metadata of a kernel ----------===//
//
// A runtime-shapes (or varlen) kernel's metadata made concrete for one
// call: its batch, lengths and grid (fa/Runtime/Metadata.h).
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Limits.h"
#include "fa/Runtime/Metadata.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace fa::rt {

namespace {

Status gridError(const Dim3 &grid) {
  return Status::error("grid (" + std::to_string(grid.x) + ", " +
                       std::to_string(grid.y) + ", " + std::to_string(grid.z) +
                       ") exceeds the launch limits (x at most " +
                       std::to_string(kMaxGridX) + ", y and z at most " +
                       std::to_string(kMaxGridYZ) + ")");
}

/// (ceil(rows / per), y, z), or an error past the launch limits.
StatusOr<Dim3> gridOf(int64_t rows, int64_t per, int64_t y, int64_t z) {
  const int64_t x = rows / per + (rows % per != 0);
  if (x > kMaxGridX || y > kMaxGridYZ || z > kMaxGridYZ)
    return gridError({uint32_t(std::min<int64_t>(x, UINT32_MAX)), uint32_t(y),
                      uint32_t(std::min<int64_t>(z, UINT32_MAX))});
  return Dim3{uint32_t(x), uint32_t(y), uint32_t(z)};
}

} // namespace

StatusOr<KernelMetadata>
KernelMetadata::instantiate(int64_t batchSize, int64_t queries, int64_t keys,
                            int64_t numSequences, int64_t longest,
                            int64_t longestKeys) const {
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
  const bool backward = kind == KernelKind::Backward;
  if (varlen && backward && (longestKeys < 1 || longestKeys > keys))
    return Status::error("a varlen backward needs the longest key sequence "
                         "in [1, seq_kv = " +
                         std::to_string(keys) + "], got max_seqlen_k " +
                         std::to_string(longestKeys));
  KernelMetadata m = *this;
  m.runtimeShapes = false;
  m.batch = batchSize;
  m.seqQ = queries;
  m.seqKV = keys;
  if (varlen) {
    m.sequences = numSequences;
    m.maxSeqQ = longest;
    m.maxSeqKV = longestKeys;
  }
  const int64_t gridZ = varlen ? numSequences : batchSize;
  // The forward: a block per Q block (of the longest sequence). The
  // backward: a block per KV block (of the longest sequence), and row
  // kernels of a warp per query row over every row.
  StatusOr<Dim3> grid =
      backward ? gridOf(varlen ? longestKeys : keys, blockKV, headsKV, gridZ)
               : gridOf(varlen ? longest : queries, blockQ, headsQ, gridZ);
  if (!grid.ok())
    return grid.status();
  m.grid = *grid;
  // A persistent kernel: its blocks loop over those tiles (at most
  // kMaxGridYZ^2 * kMaxGridX of them: no overflow in 64 bits).
  if (persistentBlocks > 0 && !backward) {
    const int64_t tiles = int64_t(m.grid.x) * m.grid.y * m.grid.z;
    m.grid = {uint32_t(std::min(persistentBlocks, tiles)), 1, 1};
  }
  if (backward)
    for (LaunchSpec *rows : {&m.pre, &m.post}) {
      StatusOr<Dim3> rowGrid = gridOf(
          queries, std::max<int64_t>(rows->block.x / 32, 1), headsQ, batchSize);
      if (!rowGrid.ok())
        return rowGrid.status();
      rows->grid = *rowGrid;
    }
  return m;
}

} // namespace fa::rt
