//===- Passes.h - FlashMLIR conversion passes -------------------*- C++ -*-===//

#ifndef FA_CONVERSION_PASSES_H
#define FA_CONVERSION_PASSES_H

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace fa {

#define GEN_PASS_DECL
#include "fa/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fa/Conversion/Passes.h.inc"

/// Kernel attribute listing the parameters that are TMA descriptors
/// (fa-convert-fagpu-to-nvvm sets it, fa-finalize-nvvm-kernels makes them
/// by-value grid constants).
constexpr llvm::StringLiteral kTensorMapArgsAttr = "fagpu.tensor_map_args";
/// On a kernel: (argument, dim) pairs of the runtime sizes that
/// fa-pass-runtime-sizes passes as index arguments, in order.
constexpr llvm::StringLiteral kRuntimeSizesAttr = "fa.runtime_sizes";

/// On a kernel: the name of each size of kRuntimeSizesAttr's order (the
/// compiler's .meta names them: batch, seq_q, seq_kv, seq_offsets). Sizes
/// of one name are one value at every launch, so fa-pass-runtime-sizes
/// appends one argument per distinct name, in order of first appearance.
constexpr llvm::StringLiteral kRuntimeSizeNamesAttr = "fa.runtime_size_names";

/// The (argument, dim) pairs that fa-pass-runtime-sizes appends, in order,
/// for a kernel whose arguments have `argumentTypes`: every dynamic size of
/// every memref argument (one appended argument each, or one per distinct
/// name where the kernel has kRuntimeSizeNamesAttr). The compiler's .meta
/// names the same list.
SmallVector<std::pair<unsigned, int64_t>>
runtimeSizeOperands(TypeRange argumentTypes);

/// Options of the GPU lowering: target chip and PTX features.
struct GPULoweringOptions : public PassPipelineOptions<GPULoweringOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target SM, e.g. sm_80, sm_90"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features, e.g. +ptx80"),
                               llvm::cl::init("+ptx80")};
  Option<int64_t> optLevel{*this, "opt-level",
                           llvm::cl::desc("LLVM optimization level"),
                           llvm::cl::init(3)};
  Option<int64_t> exp2OnFmaEvery{
      *this, "exp2-on-fma-every",
      llvm::cl::desc("fa-convert-fagpu-to-nvvm: every N-th exponential of a "
                     "tile on the FMA pipe (0: none)"),
      llvm::cl::init(0)};
  Option<bool> descriptorsAtUse{
      *this, "descriptors-at-use",
      llvm::cl::desc("fa-convert-fagpu-to-nvvm: WGMMA descriptors built "
                     "where each product is issued"),
      llvm::cl::init(false)};
  Option<bool> matrixStores{
      *this, "matrix-stores",
      llvm::cl::desc("fa-convert-fagpu-to-nvvm: 16-bit accumulator tiles "
                     "into shared memory by stmatrix"),
      llvm::cl::init(false)};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("gpu-module-to-binary format: isa (PTX) or bin (cubin "
                     "through ptxas); empty stops at the LLVM dialect"),
      llvm::cl::init("isa")};
};

/// gpu.module with nvgpu/gpu/vector/memref ops -> NVVM/LLVM dialect ->
/// PTX or cubin embedded in a gpu.binary.
void buildGPULoweringPipeline(OpPassManager &pm,
                              const GPULoweringOptions &options);

/// Registers `fa-gpu-lower-to-binary`.
void registerFAConversionPipelines();

} // namespace fa
} // namespace mlir

#endif // FA_CONVERSION_PASSES_H
