//===- ForwardKernel.h - Attention forward as an mma.sync kernel -*- C++ -*-===//

#ifndef FA_LIB_CONVERSION_FORWARDKERNEL_H
#define FA_LIB_CONVERSION_FORWARDKERNEL_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

#include <optional>
#include <string>

namespace mlir {
namespace fa {

/// Everything the forward kernel is specialised on, read off the tiled IR.
struct ForwardKernelConfig {
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

  int64_t mTiles() const { return rowsPerWarp / 16; }
  int64_t warps() const { return blockQ / rowsPerWarp; }
  int64_t threads() const { return warps() * 32; }
  int64_t numQBlocks() const { return (seqQ + blockQ - 1) / blockQ; }
  /// Shared tiles pad each row by 8 elements (16 bytes) so that the eight
  /// row addresses of one ldmatrix fall in different banks.
  int64_t rowPitch(int64_t cols) const { return cols + 8; }
  int64_t sharedBytes() const;
};

/// FA2's shape choice: 32 rows per warp for blockQ >= 128 and head dims up to
/// 128, else 16.
int64_t defaultRowsPerWarp(int64_t blockQ, int64_t headDim, int64_t headDimV);

/// Checks the limits of the mma.sync kernel; empty string when supported.
std::string checkForwardKernelConfig(const ForwardKernelConfig &config);

/// Emits the kernel into `module` and returns it, with the launch
/// attributes (fa.grid, fa.block, fa.shared_bytes, ...) set.
gpu::GPUFuncOp emitForwardKernel(OpBuilder &b, Location loc,
                                 gpu::GPUModuleOp module,
                                 const ForwardKernelConfig &config);

} // namespace fa
} // namespace mlir

#endif // FA_LIB_CONVERSION_FORWARDKERNEL_H
