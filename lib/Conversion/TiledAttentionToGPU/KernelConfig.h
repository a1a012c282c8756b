//===- KernelConfig.h - What an attention kernel is built for --*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_KERNELCONFIG_H
#define FA_LIB_CONVERSION_KERNELCONFIG_H

#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace mlir {
namespace fa {

/// Everything a kernel is specialised on, read off the tiled IR.
struct AttentionKernelConfig {
  std::string name;
  Type elementType; ///< f16 or bf16
  int64_t batch, headsQ, headsKV, seqQ, seqKV, headDim, headDimV;
  int64_t blockQ, blockKV;
  /// Query rows per warp: 16 (one m16 tile) or 32 (two tiles sharing every
  /// K/V fragment the warp loads, FA2's choice for head dims up to 128).
  int64_t rowsPerWarp = 16;
  double scale;
  bool causal;
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap;
  /// Packed sequences (varlen): the grid's z is the call's sequence count.
  bool varlen = false;

  int64_t mTiles() const { return rowsPerWarp / 16; }
  int64_t warps() const { return blockQ / rowsPerWarp; }
  int64_t threads() const { return warps() * 32; }
  int64_t numQBlocks() const { return (seqQ + blockQ - 1) / blockQ; }
  /// Batch or sequence lengths known at run time only (ShapedType::kDynamic
  /// in batch / seqQ / seqKV): the grid's x and z are then too.
  bool hasRuntimeShapes() const {
    return ShapedType::isDynamic(batch) || ShapedType::isDynamic(seqQ) ||
           ShapedType::isDynamic(seqKV);
  }
  /// The launch grid: (Q blocks, query heads, batch), kDynamic where the
  /// lengths are known at run time only (packed sequences: (Q blocks of the
  /// longest, query heads, sequences)).
  SmallVector<int64_t, 3> grid() const {
    return {ShapedType::isDynamic(seqQ) ? ShapedType::kDynamic : numQBlocks(),
            headsQ, varlen ? ShapedType::kDynamic : batch};
  }
  /// Shared tiles pad each row by 8 elements (16 bytes) so that the eight
  /// row addresses of one ldmatrix fall in different banks.
  int64_t rowPitch(int64_t cols) const { return cols + 8; }
  /// Dynamic shared memory of the forward kernel.
  int64_t sharedBytes() const;
};

/// The tensor.extract_slice a tile was cut by (through tensor.pad), or
/// null.
inline tensor::ExtractSliceOp sliceOfTile(Value tile) {
  if (auto pad = tile.getDefiningOp<tensor::PadOp>())
    tile = pad.getSource();
  return tile.getDefiningOp<tensor::ExtractSliceOp>();
}

/// The whole tensor a tile was cut from (through tensor.pad and
/// tensor.extract_slice), or null.
inline Value sourceOfTile(Value tile) {
  if (tensor::ExtractSliceOp slice = sliceOfTile(tile))
    return slice.getSource();
  return nullptr;
}

/// The kernel argument type of a tensor: a memref of its shape.
inline MemRefType memrefTypeOf(Type tensorType) {
  auto tensor = cast<RankedTensorType>(tensorType);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// Reads the kernel configuration off a tile op (fa.online_attention tile
/// or fa.attention_grad_tile) inside the forall of a tiling pass.
template <typename TileOp>
FailureOr<AttentionKernelConfig> readKernelConfig(TileOp tile, StringRef name) {
  Value query = sourceOfTile(tile.getQuery());
  Value key = sourceOfTile(tile.getKey());
  Value value = sourceOfTile(tile.getValue());
  if (!query || !key || !value)
    return tile.emitError() << "the GPU conversions expect "
                               "attention as tiled by fa-tile-attention or "
                               "fa-tile-attention-grad";
  auto queryType = cast<RankedTensorType>(query.getType());
  ArrayRef<int64_t> q = queryType.getShape();
  ArrayRef<int64_t> k = cast<RankedTensorType>(key.getType()).getShape();
  ArrayRef<int64_t> v = cast<RankedTensorType>(value.getType()).getShape();
  AttentionKernelConfig config;
  config.name = name.str();
  config.elementType = queryType.getElementType();
  config.batch = q[0];
  config.headsQ = q[1];
  config.seqQ = q[2];
  config.headDim = q[3];
  config.headsKV = k[1];
  config.seqKV = k[2];
  config.headDimV = v[3];
  config.blockQ = tile.getQuery().getType().getDimSize(0);
  config.blockKV = tile.getKey().getType().getDimSize(0);
  config.scale = *asDouble(tile.getScale());
  config.causal = tile.getCausal();
  if (std::optional<ArrayRef<int64_t>> window = tile.getWindow())
    config.window = std::make_pair((*window)[0], (*window)[1]);
  config.softcap = asDouble(tile.getSoftcap());
  return config;
}

/// Creates an empty kernel `name` (entry block with the arguments) at the end
/// of `module`, with the launch attributes a runtime reads: fa.kind,
/// fa.grid, fa.block (threads x 1 x 1), fa.shared_bytes, and the config's
/// problem attributes (fa.scale, fa.causal, fa.window, fa.softcap,
/// fa.block_q, fa.block_kv, fa.rows_per_warp).
gpu::GPUFuncOp createKernelFunc(OpBuilder &b, Location loc,
                                gpu::GPUModuleOp module, StringRef name,
                                TypeRange arguments, StringRef kind,
                                ArrayRef<int64_t> grid, int64_t threads,
                                int64_t sharedBytes,
                                const AttentionKernelConfig &config);

/// Heads and batch index grid dims y and z (at most 65535 each); empty
/// string when they fit (a runtime batch is the runtime's to check).
std::string checkGridLimits(const AttentionKernelConfig &config);

/// `kernels`, or (first use) a new gpu.module of kernels at the end of
/// `module`, which becomes a container module.
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module,
                                         gpu::GPUModuleOp &kernels);

/// FA2's shape choice for the mma.sync forward: 32 rows per warp for
/// blockQ >= 128 and head dims up to 128, else 16.
int64_t defaultRowsPerWarp(int64_t blockQ, int64_t headDim, int64_t headDimV);

/// Places `kernel`'s shared tiles and records fa.shared_bytes; when they do
/// not fit a block, erases the kernel and reports it at `at` (the
/// attention op's location: the op itself may be gone, decomposed or moved
/// into the kernel) as "cannot lower to the `what`: ..." followed by `hint`.
LogicalResult placeKernelSharedTiles(gpu::GPUFuncOp kernel, Location at,
                                     StringRef what, StringRef hint = "");

/// The workgroup (shared) memory space attribute.
Attribute workgroupSpace(MLIRContext *ctx);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_KERNELCONFIG_H
