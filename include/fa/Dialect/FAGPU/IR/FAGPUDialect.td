//===- FAGPUDialect.td - FlashMLIR GPU tile level ----------*- tablegen -*-===//
//
// The GPU tile level: the tiled attention's math on tiles whose placement in
// registers or shared memory is an attribute of their type. Moving a kernel
// between mma.sync and WGMMA changes layouts and one lowering, not the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPUDIALECT_TD
#define FA_DIALECT_FAGPU_IR_FAGPUDIALECT_TD

include "mlir/IR/OpBase.td"

def FAGPU_Dialect : Dialect {
  let name = "fagpu";
  let cppNamespace = "::mlir::fagpu";
  let summary = "Attention tiles with register and shared-memory layouts";
  let description = [{
    Register tiles are ranked tensors whose encoding is a distributed layout
    attribute (`#fagpu.wgmma_acc<warps = 4>`, `#fagpu.mma_sync_a<...>`,
    `#fagpu.rows<...>`): each layout owns one layout function (a
    `TileLayout`: register, lane, warp -> row, column), which every lowering
    asks. Shared-memory tiles have the type `!fagpu.smem<RxCxT, swizzle = S>`.
    Elementwise math on register tiles is plain `arith`/`math` on these
    tensors; row reductions, broadcasts, coordinates, layout conversions,
    copies and matrix products are ops of this dialect.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::gpu::GPUDialect"];
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUDIALECT_TD
