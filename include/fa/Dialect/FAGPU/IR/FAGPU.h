//===- FAGPU.h - FlashMLIR GPU tile level -----------------------*- C++ -*-===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPU_H
#define FA_DIALECT_FAGPU_IR_FAGPU_H

#include "fa/Dialect/FAGPU/IR/TileLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "fa/Dialect/FAGPU/IR/FAGPUAttrInterfaces.h.inc"
#include "fa/Dialect/FAGPU/IR/FAGPUDialect.h.inc"
#include "fa/Dialect/FAGPU/IR/FAGPUEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUTypes.h.inc"
#define GET_OP_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUOps.h.inc"

namespace mlir {
namespace fagpu {

/// The distributed layout of a register tile, or null.
DistributedLayoutAttr getLayout(Type type);
/// The layout function of a register tile (its layout must be set).
TileLayout getTileLayout(RankedTensorType type);

/// Dynamic shared memory one block can have on sm_80 (163 KiB is sm_86/89's)
/// and sm_90: 227 KiB.
constexpr int64_t kMaxSharedBytesPerBlock = 227 * 1024;

/// The most buffers fagpu-warp-specialize gives a tile copied once per tile
/// (Q): more are never loaded ahead of use.
constexpr int64_t kMaxTileBuffers = 8;

/// Threads of a warpgroup.
constexpr int64_t kWarpgroupThreads = 128;
/// Hardware named barriers: 0 is the block's (gpu.barrier), 1 + w is
/// warpgroup w's turn (fagpu-pingpong), kWarpgroupSyncBarrier + w the syncs
/// of warpgroup w alone (`sync(warpgroup)`), kProducerSyncBarrier and
/// kConsumerSyncBarrier the block-scope syncs inside a
/// fagpu.warp_specialize's producer and consumers regions; 16 in all.
constexpr int64_t kProducerSyncBarrier = 6;
constexpr int64_t kConsumerSyncBarrier = 7;
constexpr int64_t kWarpgroupSyncBarrier = 8;

/// Shared tiles are 1024-byte aligned (swizzled TMA/WGMMA tiles need it).
constexpr int64_t kSharedTileAlignment = 1024;

/// Places the shared tiles allocated under `kernel` one after another in its
/// dynamic shared memory, then its mbarrier arrays: calls `place` with each
/// alloc_shared / alloc_barriers and its byte offset, and returns the bytes
/// the kernel needs.
int64_t
placeSharedTiles(Operation *kernel,
                 function_ref<void(Operation *, int64_t)> place = nullptr);

/// The most ring stages, from 2 up to `wanted`, whose shared memory
/// `fixedBytes + stages * bytesPerStage` fits `maxBytes`: 2 where not even 2
/// fit (the caller reports it), `wanted` up to 2 or where a stage costs
/// nothing. Computed rather than counted down from `wanted`, which a pass
/// option sets to any int64 (stages=2^40 counted for hours, 2^55 overflowed).
int64_t deepestRingThatFits(int64_t wanted, int64_t fixedBytes,
                            int64_t bytesPerStage, int64_t maxBytes);

/// True for the accumulator layouts that pick a matrix instruction.
inline bool isWgmmaFamily(Attribute layout) {
  return isa<WgmmaAccLayoutAttr, WgmmaALayoutAttr, WgmmaA8LayoutAttr,
             WgmmaA8PairsLayoutAttr>(layout);
}

} // namespace fagpu
} // namespace mlir

#endif // FA_DIALECT_FAGPU_IR_FAGPU_H
