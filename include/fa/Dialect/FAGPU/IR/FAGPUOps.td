//===- FAGPUOps.td - Ops of the GPU tile level -------------*- tablegen -*-===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPUOPS_TD
#define FA_DIALECT_FAGPU_IR_FAGPUOPS_TD

include "fa/Dialect/FAGPU/IR/FAGPUAttrs.td"
include "fa/Dialect/FAGPU/IR/FAGPUTypes.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def FAGPU_ReductionKind : I32EnumAttr<"ReductionKind", "a row reduction",
    [I32EnumAttrCase<"max", 0>, I32EnumAttrCase<"sum", 1>]> {
  let cppNamespace = "::mlir::fagpu";
  let genSpecializedAttr = 0;
}
def FAGPU_ReductionKindAttr
    : EnumAttr<FAGPU_Dialect, FAGPU_ReductionKind, "reduction"> {
  let assemblyFormat = "$value";
}

class FAGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<FAGPU_Dialect, mnemonic, traits>;

def FAGPU_RegisterTile : RankedTensorOf<[AnyType]>;

def FAGPU_AllocSharedOp : FAGPU_Op<"alloc_shared"> {
  let summary = "A tile of the block's shared memory";
  let description = [{
    Reserves a tile in the kernel's dynamic shared memory (1024-byte
    aligned). The lowering places tiles one after another and records the
    total on the kernel as `fa.shared_bytes`.
  }];
  let results = (outs FAGPU_SharedTile:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def FAGPU_CopyToSharedOp : FAGPU_Op<"copy_to_shared"> {
  let summary = "Copy rows of a global matrix into a shared tile";
  let description = [{
    `dest[i, j] = source[row + i, j]` for `row + i < limit`, else 0, by every
    thread of the block (16-byte accesses). It starts once every thread is
    done with the tile's previous contents, and when it returns the tile is
    visible to every thread and to the tensor cores' asynchronous reads (a
    synchronous copy; pipelining passes replace it with asynchronous ones).
  }];
  let arguments = (ins AnyMemRef:$source, Index:$row, Index:$limit,
                       FAGPU_SharedTile:$dest);
  let assemblyFormat = [{
    $source `[` $row `]` `limit` $limit `into` $dest attr-dict `:`
    type($source) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def FAGPU_StageOp : FAGPU_Op<"stage", [Pure]> {
  let summary = "One stage of a ring of shared tiles";
  let description = [{
    `fagpu.stage %ring[%i]` is stage `i` (0 <= i < stages) of a 3-D
    `!fagpu.smem<S x R x C ...>` ring, a plain 2-D shared tile.
  }];
  let arguments = (ins FAGPU_SharedTile:$ring, Index:$index);
  let results = (outs FAGPU_SharedTile:$result);
  let assemblyFormat = [{
    $ring `[` $index `]` attr-dict `:` qualified(type($ring)) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

def FAGPU_AsyncCopyToSharedOp : FAGPU_Op<"async_copy_to_shared"> {
  let summary = "Start copying rows of a global matrix into a shared tile";
  let description = [{
    The copy of `fagpu.copy_to_shared` (rows at or past `limit` zero-filled),
    issued asynchronously by every thread of the block and added to the
    thread's open copy group; `fagpu.commit_shared_copies` closes the group,
    `fagpu.wait_shared_copies` waits for groups. Nothing orders it with
    other reads or writes of the tile: the pipelining that emits it does.
  }];
  let arguments = (ins AnyMemRef:$source, Index:$row, Index:$limit,
                       FAGPU_SharedTile:$dest);
  let assemblyFormat = [{
    $source `[` $row `]` `limit` $limit `into` $dest attr-dict `:`
    type($source) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def FAGPU_CommitSharedCopiesOp : FAGPU_Op<"commit_shared_copies"> {
  let summary = "Close the thread's open group of asynchronous copies";
  let description = [{
    Groups complete in the order they are committed; an empty group is
    allowed (it keeps the group count of every iteration the same).
  }];
  let assemblyFormat = "attr-dict";
}

def FAGPU_WaitSharedCopiesOp : FAGPU_Op<"wait_shared_copies"> {
  let summary = "Wait until at most `pending` copy groups are in flight";
  let description = [{
    Waits for the thread's copy groups but the newest `pending`, then makes
    the landed tiles visible to every thread of the block and to the tensor
    cores' asynchronous reads (a proxy fence and a block barrier).
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>]>:$pending);
  let assemblyFormat = "`pending` `=` $pending attr-dict";
}

def FAGPU_MmaOp : FAGPU_Op<"mma", [Pure]> {
  let summary = "acc + A · B on the tensor cores";
  let description = [{
    `result = acc + a · b` with f32 accumulation. `acc` and the result are
    register tiles [M, N] in an accumulator layout, which picks the
    instruction: `#fagpu.wgmma_acc` (wgmma.mma_async, Hopper) or
    `#fagpu.mma_sync_acc` (mma.sync.m16n8k16). `a` is [M, K], from shared
    memory or from registers in the family's A layout; `b` is a shared tile,
    [K, N], or [N, K] with `transpose_b` (K contiguous, as K is for QKᵀ).
  }];
  let arguments = (ins AnyType:$a, FAGPU_SharedTile:$b,
                       FAGPU_RegisterTile:$acc, UnitAttr:$transpose_b);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc (`transpose_b` $transpose_b^)? attr-dict `:`
    qualified(type($a)) `,` qualified(type($b)) `,` type($acc) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_ReduceRowsOp : FAGPU_Op<"reduce_rows", [Pure]> {
  let summary = "Max or sum of each row of a register tile";
  let description = [{
    `result[i] = reduce_j source[i, j]` over the row; the result has the
    `#fagpu.rows<L>` layout of the source's layout L. Lowered as a reduction
    over the thread's registers of a row, then butterfly shuffles over the
    lanes that split the row.
  }];
  let arguments = (ins FAGPU_ReductionKindAttr:$kind,
                       FAGPU_RegisterTile:$source);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $kind $source attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_ExpandRowsOp : FAGPU_Op<"expand_rows", [Pure]> {
  let summary = "Broadcast per-row values along the columns";
  let description = [{
    `result[i, j] = source[i]`; the source is in the `#fagpu.rows<L>` layout
    of the result's layout L, so no data moves between threads.
  }];
  let arguments = (ins FAGPU_RegisterTile:$source);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $source attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_TileCoordsOp : FAGPU_Op<"tile_coords", [Pure]> {
  let summary = "The row or column index of each element";
  let description = [{
    `result[i, j] = i` (dim 0) or `j` (dim 1), as i32 or index, in the
    result's layout:
    masks are built from these with `arith` (one mask semantics for every
    layout).
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>,
                                               IntMaxValue<1>]>:$dim);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = "`dim` `=` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def FAGPU_ConvertLayoutOp : FAGPU_Op<"convert_layout", [Pure]> {
  let summary = "The same tile in another register layout";
  let description = [{
    Moves a tile between layouts whose threads hold the same elements (for
    example the WGMMA accumulator of P becoming the register A operand of
    P·V): a permutation of each thread's registers, no data exchange.
  }];
  let arguments = (ins FAGPU_RegisterTile:$source);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $source attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_StoreTileOp : FAGPU_Op<"store_tile"> {
  let summary = "Store a register tile to rows of a global matrix";
  let description = [{
    `dest[row + i, j] = value[i, j]` (or `dest[row + i] = value[i]` for a
    1-D tile) for `row + i < limit`; each element is written once, by one of
    the threads that hold it.
  }];
  let arguments = (ins FAGPU_RegisterTile:$value, AnyMemRef:$dest,
                       Index:$row, Index:$limit);
  let assemblyFormat = [{
    $value `,` $dest `[` $row `]` `limit` $limit attr-dict `:` type($value)
    `,` type($dest)
  }];
  let hasVerifier = 1;
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUOPS_TD
