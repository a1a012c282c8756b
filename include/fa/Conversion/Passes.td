//===- Passes.td - FlashMLIR conversion passes -------------*- tablegen -*-===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTiledAttentionToGPU : Pass<"fa-convert-tiled-attention-to-gpu",
                                      "::mlir::ModuleOp"> {
  let summary = "Lower tiled attention to a GPU kernel on mma.sync fragments";
  let description = [{
    Turns each function whose body is a tiled attention forward (the
    `scf.forall` made by `fa-tile-attention`) into a `gpu.func` kernel in a
    `gpu.module`: the forall becomes the grid (Q block, head, batch); one
    thread block of Br / 16 warps owns a Q tile, each warp 16 rows. K/V tiles
    are staged in shared memory with `cp.async` (zero-fill past the sequence
    end), fragments are read with `ldmatrix`, QKᵀ and P·V run on
    `mma.sync.m16n8k16` (f32 accumulate), and the online softmax runs on the
    accumulator fragments with quad shuffles for row reductions. The
    masked / unmasked / masked KV loop split of the tiled IR is kept.

    The host function is removed: the kernel carries what a launcher needs as
    attributes (`fa.grid`, `fa.block`, `fa.shared_bytes`, `fa.kind`, ...).
    Portable to sm_80 and later.
  }];
  let options = [
    Option<"rowsPerWarp", "rows-per-warp", "int64_t", "0",
           "Query rows per warp: 16 or 32 (0: 32 for block-q >= 128 and "
           "head dims up to 128, else 16)">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

def FinalizeNVVMKernels : Pass<"fa-finalize-nvvm-kernels",
                               "::mlir::gpu::GPUModuleOp"> {
  let summary = "Fix-ups on NVVM kernels before PTX generation";
  let description = [{
    Runs on a `gpu.module` lowered to the LLVM dialect. `convert-gpu-to-nvvm`
    declares the dynamic shared memory of `gpu.dynamic_shared_memory` as an
    internal zero-sized global, which the NVPTX backend "demotes" to a
    1-byte static `.shared` variable; kernels then index past it. This pass
    gives such globals external linkage so they print as
    `.extern .shared .align 16 .b8 name[]`, the dynamic shared window.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // FA_CONVERSION_PASSES_TD
