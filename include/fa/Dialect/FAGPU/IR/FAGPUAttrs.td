//===- FAGPUAttrs.td - Register layouts of GPU tiles -------*- tablegen -*-===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPUATTRS_TD
#define FA_DIALECT_FAGPU_IR_FAGPUATTRS_TD

include "fa/Dialect/FAGPU/IR/FAGPUDialect.td"
include "mlir/IR/AttrTypeBase.td"

def FAGPU_DistributedLayoutInterface
    : AttrInterface<"DistributedLayoutAttr"> {
  let cppNamespace = "::mlir::fagpu";
  let description = [{
    A register layout of a tile: where each element lives among the threads
    of a block. The layout function is the `TileLayout` it returns.
  }];
  let methods = [
    InterfaceMethod<"Why a tile of `shape` cannot have this layout (empty "
                    "when it can).", "std::string", "checkShape",
                    (ins "::llvm::ArrayRef<int64_t>":$shape)>,
    InterfaceMethod<"The layout function of a tile of `shape` (checked).",
                    "::mlir::fagpu::TileLayout", "getTileLayout",
                    (ins "::llvm::ArrayRef<int64_t>":$shape)>,
    InterfaceMethod<"Warps of the block that hold the tile.", "int64_t",
                    "getWarps">,
  ];
}

class FAGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<FAGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// A tensor-core layout parametrised by the warps that split the tile's rows.
class FAGPU_TensorCoreLayout<string name, string attrMnemonic, string summaryText>
    : FAGPU_Attr<name, attrMnemonic,
                 [DeclareAttrInterfaceMethods<FAGPU_DistributedLayoutInterface>]> {
  let summary = summaryText;
  let parameters = (ins "int64_t":$warps);
  let assemblyFormat = "`<` `warps` `=` $warps `>`";
  let genVerifyDecl = 1;
}

def FAGPU_MmaSyncAccLayout : FAGPU_TensorCoreLayout<"MmaSyncAccLayout",
    "mma_sync_acc", "mma.sync.m16n8k16 accumulator fragments"> {
  let description = [{
    f32 C/D fragments of `mma.sync.m16n8k16`; warps own equal contiguous
    row blocks. Rows: a multiple of 16 per warp; columns: of 8.
  }];
}
def FAGPU_MmaSyncAccColsLayout : FAGPU_Attr<"MmaSyncAccColsLayout",
    "mma_sync_acc_cols",
    [DeclareAttrInterfaceMethods<FAGPU_DistributedLayoutInterface>]> {
  let summary = "mma.sync accumulators whose warps split rows and columns";
  let description = [{
    f32 C/D fragments of `mma.sync.m16n8k16` where `columns` groups of
    warps split the columns of a tile whose rows do not give every warp 16
    of its own: warp w holds rows [(w % R) H, (w % R + 1) H) (R = warps /
    columns, H = rows / R, a multiple of 16) of columns [(w / R) C, (w / R
    + 1) C) (C = cols / columns, a multiple of 8), each with the
    #fagpu.mma_sync_acc fragments of its part. The mma.sync backward's dQ:
    64 query rows over the 8 warps of a 128-key block (FlashAttention 2's
    64 x 128).
  }];
  let parameters = (ins "int64_t":$warps, "int64_t":$columns);
  let assemblyFormat = "`<` `warps` `=` $warps `,` `columns` `=` $columns `>`";
  let genVerifyDecl = 1;
}
def FAGPU_MmaSyncALayout : FAGPU_TensorCoreLayout<"MmaSyncALayout",
    "mma_sync_a", "mma.sync.m16n8k16 A operand fragments"> {
  let description = [{
    16-bit A fragments of `mma.sync.m16n8k16` (a0..a7 per k16 step).
  }];
}
def FAGPU_MmaSyncBLayout : FAGPU_TensorCoreLayout<"MmaSyncBLayout",
    "mma_sync_b", "mma.sync.m16n8k16 B operand fragments"> {
  let description = [{
    16-bit B fragments of `mma.sync.m16n8k16` of a [K x N] tile; every warp
    holds all of it.
  }];
}
def FAGPU_WgmmaAccLayout : FAGPU_TensorCoreLayout<"WgmmaAccLayout",
    "wgmma_acc", "wgmma.m64nNk16 accumulator fragments"> {
  let description = [{
    f32 D fragments of `wgmma.mma_async.m64nNk16`: each warpgroup owns 64
    rows, warp w of it rows 16 w .. 16 w + 15. `warps` is a multiple of 4.
  }];
}
def FAGPU_WgmmaAccColsLayout : FAGPU_TensorCoreLayout<"WgmmaAccColsLayout",
    "wgmma_acc_cols", "wgmma.m64nNk16 accumulators split along the columns"> {
  let description = [{
    f32 D fragments of `wgmma.mma_async.m64nNk16` where the warpgroups split
    the columns of one 64-row tile: warpgroup g holds columns
    [g N / G, (g + 1) N / G) of all 64 rows (G = warps / 4), each with the
    #fagpu.wgmma_acc fragments of its slice. The backward's S, dP and dQ
    tiles: 64 query rows whose 128 keys (or head-dim columns) two
    warpgroups share, beside dK and dV whose rows they split.
  }];
}
def FAGPU_WgmmaALayout : FAGPU_TensorCoreLayout<"WgmmaALayout",
    "wgmma_a", "wgmma register A operand fragments"> {
  let description = [{
    16-bit A operand of `wgmma.mma_async` taken from registers: per warp,
    the mma.sync A fragments of its 16 rows.
  }];
}

def FAGPU_WgmmaA8Layout
    : FAGPU_TensorCoreLayout<
          "WgmmaA8Layout", "wgmma_a8",
          "wgmma register A operand fragments, 8-bit elements"> {
  let description = [{
    8-bit (e4m3) A operand of `wgmma.mma_async...k32` taken from registers:
    per warp its 16 rows, per k32 step four 32-bit registers of four
    elements each: row g, columns 4 t .. 4 t + 3 (t = lane % 4, g = lane /
    4), then row g + 8, then both again 16 columns on. Not the
    accumulator's placement (its pairs are columns 2 t, 2 t + 1): a
    conversion from it moves elements between the lanes of a quad.
  }];
}

def FAGPU_WgmmaA8PairsLayout
    : FAGPU_TensorCoreLayout<
          "WgmmaA8PairsLayout", "wgmma_a8_pairs",
          "wgmma register A operand fragments, 8-bit elements, keys in "
          "pairs"> {
  let description = [{
    The 8-bit A operand of `#fagpu.wgmma_a8` read with its k index
    permuted within each 32 columns (FlashAttention 3, section 3.3): the
    instruction's k position `4 t + 2 h + i` (+ 16 for the second word
    pair) holds column `2 t + 8 h + i` (+ 16). Lane t thus holds the
    columns the accumulator gives it (pairs 2 t, 2 t + 1 every 8 columns),
    so a conversion from the accumulator stays in each thread's registers.
    The B operand it multiplies must have its k rows in the same order:
    `fagpu.transpose_shared ... pair_keys` writes such a Vᵀ.
  }];
}

def FAGPU_TransposedLayout : FAGPU_Attr<"TransposedLayout", "transposed",
    [DeclareAttrInterfaceMethods<FAGPU_DistributedLayoutInterface>]> {
  let summary = "A tile held as its transpose in the `parent` layout";
  let description = [{
    Element (i, j) of an [R x C] tile lives where `parent` puts element
    (j, i) of a [C x R] tile. FlashAttention 3's SdP_swapAB: the backward
    computes Sᵀ = K Qᵀ and dPᵀ = V dOᵀ as WGMMA accumulators (the keys on
    the instruction's M side, split by the warpgroups) and treats them as S
    and dP in `#fagpu.transposed<#fagpu.wgmma_acc<...>>`: the elementwise
    softmax gradient is unchanged, the per-query statistics (LSE, delta)
    follow the accumulator's columns, and Pᵀ and dSᵀ (`fagpu.transpose`,
    no data moved) are register-A operands of dV += Pᵀ dO and dK += dSᵀ Q.
  }];
  let parameters = (ins "::mlir::fagpu::DistributedLayoutAttr":$parent);
  let assemblyFormat = "`<` $parent `>`";
}

def FAGPU_RowsLayout : FAGPU_Attr<"RowsLayout", "rows",
    [DeclareAttrInterfaceMethods<FAGPU_DistributedLayoutInterface>]> {
  let summary = "Per-row values of a 2-D register layout";
  let description = [{
    The layout of a 1-D tile holding one value per row of a 2-D tile in the
    `parent` layout (a row reduction's result, a running max or sum): each
    thread holds the rows its parent registers touch; the lanes and warps
    that split the parent's columns hold copies. With `partial = true` they
    hold parts instead, whose sum is the row's value (a running row sum
    kept per lane: `fagpu.accumulate_rows`, `fagpu.complete_rows`).
  }];
  let parameters = (ins "::mlir::fagpu::DistributedLayoutAttr":$parent,
      DefaultValuedParameter<"bool", "false">:$partial);
  let builders = [AttrBuilder<
      (ins "::mlir::fagpu::DistributedLayoutAttr":$parent), [{
      return $_get($_ctxt, parent, /*partial=*/false);
    }]>];
  let assemblyFormat = "`<` $parent (`,` `partial` `=` $partial^)? `>`";
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUATTRS_TD
