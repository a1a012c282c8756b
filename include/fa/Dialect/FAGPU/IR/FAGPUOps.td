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

def FAGPU_SyncScope : I32EnumAttr<"SyncScope",
    "the threads a shared-memory write is published to",
    [I32EnumAttrCase<"block", 0>, I32EnumAttrCase<"warpgroup", 1>,
     I32EnumAttrCase<"warp", 2>]> {
  let cppNamespace = "::mlir::fagpu";
  let genSpecializedAttr = 0;
}
def FAGPU_SyncScopeAttr : EnumAttr<FAGPU_Dialect, FAGPU_SyncScope, "sync"> {
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

// Not Pure: it reads its shared tiles, whose contents copies change (two
// products of the same tile with a copy between are two products).
def FAGPU_MmaOp : FAGPU_Op<"mma"> {
  let summary = "acc + A · B on the tensor cores";
  let description = [{
    `result = acc + a · b` with f32 accumulation. `acc` and the result are
    register tiles [M, N] in an accumulator layout, which picks the
    instruction: `#fagpu.wgmma_acc` (wgmma.mma_async, Hopper) or
    `#fagpu.mma_sync_acc` (mma.sync.m16n8k16). `a` is [M, K], from shared
    memory or from registers in the family's A layout (mma.sync reads a
    shared A into registers with `ldmatrix` at each product: Q, which every
    KV block multiplies, stays in shared memory); `b` is a shared tile,
    [K, N], or [N, K] with `transpose_b` (K contiguous, as K is for QKᵀ).
    With `transpose_a` (WGMMA, 16-bit operands) `a` is a shared tile [K, M]
    read as its transpose (M contiguous): the backward's Pᵀ·dO and dSᵀ·Q
    read P and dS where the forward-shaped product left them.

    With `async` (WGMMA only) the product is issued and the op returns at
    once: its result may only be read through `fagpu.mma_wait`, so that
    the executing warps can do other work (hand the tensor cores to another
    warpgroup) while it runs.
  }];
  let arguments = (ins Arg<AnyType, "", [MemRead]>:$a,
      Arg<FAGPU_SharedTile, "", [MemRead]>:$b, FAGPU_RegisterTile:$acc,
      UnitAttr:$transpose_b, UnitAttr:$async, UnitAttr:$transpose_a);
  let results = (outs FAGPU_RegisterTile:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$a,
                   "::mlir::Value":$b, "::mlir::Value":$acc,
                   "bool":$transpose_b), [{
      build($_builder, $_state, result, a, b, acc, transpose_b,
            /*async=*/false, /*transpose_a=*/false);
    }]>
  ];
  let assemblyFormat = [{
    $a `,` $b `,` $acc (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? (`async` $async^)?
    attr-dict `:`
    qualified(type($a)) `,` qualified(type($b)) `,` type($acc) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_MmaWaitOp : FAGPU_Op<"mma_wait",
    [AllTypesMatch<["pending", "result"]>]> {
  let summary = "Wait for the warpgroup's asynchronous products";
  let description = [{
    Waits until the `fagpu.mma async` that produced `pending` has completed
    and returns its result, now safe to read. Products complete in the
    order they were issued; `in_flight` (default 0) is how many products
    the warpgroup issued after this one that may still be running when the
    wait returns (the product of the next block, issued before this one's
    softmax, keeps the tensor cores busy meanwhile).
  }];
  let arguments = (ins FAGPU_RegisterTile:$pending,
                       DefaultValuedAttr<ConfinedAttr<I64Attr,
                           [IntMinValue<0>]>, "0">:$in_flight);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $pending (`in_flight` `=` $in_flight^)? attr-dict `:` type($pending)
  }];
  let hasVerifier = 1;
}

def FAGPU_AfterIssueOp : FAGPU_Op<"after_issue",
    [AllTypesMatch<["source", "result"]>]> {
  let summary = "A register tile read only once a product has been issued";
  let description = [{
    Returns `source` unchanged, held back until the `fagpu.mma async` that
    yields `issued` has been issued: the computation on the result runs on
    the CUDA cores while that product runs on the tensor cores, instead of
    wherever the backend would put it (FlashAttention 3/4 rescale O between
    QKᵀ's issue and P·V's). It orders, it does not wait: `issued` is still
    in flight afterwards. Lowered as an empty volatile asm per register,
    after the product's.
  }];
  let arguments = (ins FAGPU_RegisterTile:$source,
                       FAGPU_RegisterTile:$issued);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $source `,` $issued attr-dict `:` type($source) `,` type($issued)
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
  let hasCanonicalizer = 1;
}

def FAGPU_AccumulateRowsOp
    : FAGPU_Op<"accumulate_rows", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "A running row sum kept in per-lane parts";
  let description = [{
    `result[i] = scale[i] * acc[i] + sum_j source[i, j]`, where `acc` and
    the result hold each row's sum in parts (`#fagpu.rows<L, partial =
    true>` of the source's layout L: each thread adds the elements it holds,
    no data moves between threads) and `scale` whole rows (`#fagpu.rows<L>`).
    Scaling each part scales the sum, so a KV loop's row sums l = alpha l +
    rowsum(P) need the lanes' parts added only once, after the loop
    (`fagpu.complete_rows`): FlashAttention 2's deferred row-sum reduction,
    made by `fagpu-defer-row-sums`.
  }];
  let arguments = (ins FAGPU_RegisterTile:$acc, FAGPU_RegisterTile:$scale,
      FAGPU_RegisterTile:$source);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $source `scaled` $scale `into` $acc attr-dict `:` type($source) `,`
    type($scale) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_CompleteRowsOp : FAGPU_Op<"complete_rows", [Pure]> {
  let summary = "Add the per-lane parts of row sums";
  let description = [{
    `result[i]` is the sum of the parts of row i (`#fagpu.rows<L, partial =
    true>` -> `#fagpu.rows<L>`): butterfly shuffles over the lanes that
    split the rows of L, as in `fagpu.reduce_rows sum`.
  }];
  let arguments = (ins FAGPU_RegisterTile:$source);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $source attr-dict `:` type($source) `->` type($result)
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

def FAGPU_WarpAnyOp : FAGPU_Op<"warp_any", [Pure]> {
  let summary = "Whether some element a warp holds is true";
  let description = [{
    In each thread: true iff some element of `predicate` held by a thread of
    the same warp (in the tile's layout) is true. Unlike the tile ops' other
    scalars the value may differ between warps (it is uniform within one),
    so it may only guard work whose result does not depend on it, e.g. a
    multiply by factors that are all exactly 1 where it is false
    (`fagpu-skip-unit-rescales`). Lowered as an OR of the thread's
    registers and `vote.sync.any`. `rarely` says the result is expected
    false (`llvm.expect`): a branch on it then stays a branch, where LLVM
    would otherwise compute the guarded tile op anyway and select.
  }];
  let arguments = (ins FAGPU_RegisterTile:$predicate, UnitAttr:$rarely);
  let results = (outs I1:$result);
  let assemblyFormat =
      "(`rarely` $rarely^)? $predicate attr-dict `:` type($predicate)";
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

def FAGPU_TransposeOp : FAGPU_Op<"transpose", [Pure]> {
  let summary = "A register tile's transpose, in the same registers";
  let description = [{
    `result[j, i] = source[i, j]` where the result's layout is the
    transpose of the source's (`#fagpu.transposed<L>` of `L`, or `L` of
    `#fagpu.transposed<L>`): every thread holds the same elements in the
    same registers, so nothing moves. The backward's Sᵀ computed as a WGMMA
    accumulator becomes S, and P and dS become the register A operands Pᵀ
    and dSᵀ.
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
    the threads that hold it. With `accumulate` (f32) each element is added
    to the destination atomically instead: blocks that share rows of the
    destination (the backward's dQ, one partial sum per KV block) sum into
    it.
  }];
  let arguments = (ins FAGPU_RegisterTile:$value, AnyMemRef:$dest,
                       Index:$row, Index:$limit, UnitAttr:$accumulate);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$value, "::mlir::Value":$dest,
                   "::mlir::Value":$row, "::mlir::Value":$limit), [{
      build($_builder, $_state, value, dest, row, limit,
            /*accumulate=*/false);
    }]>
  ];
  let assemblyFormat = [{
    $value `,` $dest `[` $row `]` `limit` $limit (`accumulate` $accumulate^)?
    attr-dict `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FAGPU_LoadTileOp : FAGPU_Op<"load_tile"> {
  let summary = "Load rows of a global matrix into a register tile";
  let description = [{
    `result[i, j] = source[row + i, j]` (or `result[i] = source[row + i]`
    for a 1-D tile) for `row + i < limit`, `padding` past it (0 when
    absent): every thread loads the elements its registers hold (per-row
    statistics such as the backward's LSE and delta; the backward pads LSE
    with +inf, so that rows past a packed sequence's end, which read the
    next sequence's queries, get P = 0).
  }];
  let arguments = (ins AnyMemRef:$source, Index:$row, Index:$limit,
      OptionalAttr<F64Attr>:$padding);
  let results = (outs FAGPU_RegisterTile:$result);
  let assemblyFormat = [{
    $source `[` $row `]` `limit` $limit attr-dict `:` type($source) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_TransposeSharedOp : FAGPU_Op<"transpose_shared"> {
  let summary = "Write the transpose of a shared tile into another";
  let description = [{
    `dest[j, i] = source[i, j]` for 8-bit tiles, the executing threads
    sharing the work in 4 x 4 blocks; then, as `fagpu.store_to_shared`,
    the tile is published to the block (inside a `fagpu.warp_specialize`,
    to its consumer warpgroups) and to the async proxy, and before writing
    the threads wait until nobody reads its previous contents. WGMMA takes
    8-bit operands K-major only: V ([keys, Dv], Dv contiguous) becomes Vᵀ
    for P·V this way.

    With `pair_keys`, the source rows come in the order of the
    `#fagpu.wgmma_a8_pairs` operand's k index: `dest[j, 32 c + 4 t + 2 h +
    i (+ 16)] = source[32 c + 2 t + 8 h + i (+ 16), j]`.
  }];
  let arguments = (ins FAGPU_SharedTile:$source, FAGPU_SharedTile:$dest,
      UnitAttr:$pair_keys);
  let assemblyFormat = [{
    $source `,` $dest (`pair_keys` $pair_keys^)? attr-dict `:`
    qualified(type($source)) `,` qualified(type($dest))
  }];
  let extraClassDeclaration = [{
    /// The source row that destination column `col` holds: `col` itself,
    /// or with pair_keys its key-pair position.
    static int64_t sourceRowOf(int64_t col, bool pairKeys) {
      if (!pairKeys)
        return col;
      int64_t chunk = col - col % 32, k = col % 32;
      int64_t t = (k % 16) / 4, h = (k % 4) / 2, i = k % 2;
      return chunk + (k / 16) * 16 + 2 * t + 8 * h + i;
    }
  }];
  let hasVerifier = 1;
}

def FAGPU_StoreToSharedOp : FAGPU_Op<"store_to_shared"> {
  let summary = "Write a register tile into a shared tile";
  let description = [{
    `dest[i, j] = value[i, j]` (a 16-bit or f32 tile; the shared tile's
    rows may be wider than the value's, padding that spreads rows over the
    banks), then makes the tile visible to its readers and to the tensor
    cores and bulk copies (the async proxy): a WGMMA operand read
    transposed, such as the backward's P for Pᵀ·dO, or a tile that
    `fagpu.reduce_to_global` adds into global memory. The threads first
    wait until nobody reads the tile's previous contents.

    `sync` says whom the writes are published to: the whole block (the
    default: a block barrier before and after), or, with `sync(warpgroup)`,
    each writing warpgroup alone (a named barrier of its 128 threads), valid
    where every part of the tile is read only by the warpgroup that wrote it
    until the tile is written again, or, with `sync(warp)`, each writing
    warp alone (its lanes synchronised), valid where the tile's readers are
    told by an mbarrier arrival of each warp (fagpu-warp-specialize's
    hand-off of a reduction to the producer). `unread` leaves out the
    leading wait:
    valid where a block barrier already separates every earlier read of the
    tile from this op. fagpu-narrow-shared-syncs sets both where it can
    prove them.
  }];
  let arguments = (ins FAGPU_RegisterTile:$value, FAGPU_SharedTile:$dest,
                       DefaultValuedAttr<FAGPU_SyncScopeAttr,
                           "::mlir::fagpu::SyncScope::block">:$sync,
                       UnitAttr:$unread);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$value, "::mlir::Value":$dest), [{
      build($_builder, $_state, value, dest, ::mlir::fagpu::SyncScope::block,
            /*unread=*/false);
    }]>
  ];
  let assemblyFormat = [{
    $value `,` $dest (`sync` `=` `` $sync^)? (`unread` $unread^)? attr-dict
    `:` type($value) `,` qualified(type($dest))
  }];
  let hasVerifier = 1;
}

def FAGPU_ReduceToGlobalOp : FAGPU_Op<"reduce_to_global"> {
  let summary = "Start adding a shared tile into rows of a global matrix";
  let description = [{
    `dest[row + i, j] += tile[i, j]` (f32) for `row + i < limit` and every
    column j of `dest` (the tile's rows may be wider: padding), summed in
    global memory by the copy engine: one bulk reduction
    (`cp.reduce.async.bulk ... .add.f32`) per row and column band, the
    columns cut into `bands` equal bands, band b of each row issued by a
    thread of warpgroup b. Blocks that share rows of `dest` sum into it
    (the backward's dQ, one partial sum per KV block).

    The tile must have been published to the issuing threads
    (`fagpu.store_to_shared`: its bands' writers are the warpgroups that
    issue them). The reductions read the tile asynchronously: it may be
    written again only after `fagpu.wait_shared_reads` (and a barrier: the
    next store_to_shared's leading one), and the kernel may end only after
    one.
  }];
  let arguments = (ins FAGPU_SharedTile:$tile, AnyMemRef:$dest, Index:$row,
                       Index:$limit,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$bands);
  let assemblyFormat = [{
    $tile `,` $dest `[` $row `]` `limit` $limit `bands` `=` $bands attr-dict
    `:` qualified(type($tile)) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FAGPU_WaitSharedReadsOp : FAGPU_Op<"wait_shared_reads"> {
  let summary = "Wait until the thread's bulk reductions have read their "
                "shared tiles";
  let description = [{
    Each executing thread waits until every `fagpu.reduce_to_global` (or
    `fagpu.tma_reduce`) it issued but the last `pending` has finished
    reading shared memory (the sums themselves may still be in flight); a
    thread that issued none goes on at once. A barrier after it then frees
    the tiles for every thread.
  }];
  let arguments = (ins DefaultValuedAttr<ConfinedAttr<I64Attr,
                           [IntMinValue<0>, IntMaxValue<63>]>, "0">:$pending);
  let assemblyFormat = "(`pending` `=` $pending^)? attr-dict";
}

def FAGPU_WaitGlobalSumsOp : FAGPU_Op<"wait_global_sums"> {
  let summary = "Wait until the thread's bulk reductions have added into "
                "global memory";
  let description = [{
    Each executing thread waits until every `fagpu.reduce_to_global` (or
    `fagpu.tma_reduce`) it issued but the last `pending` has completed: its
    shared tile read and its sums written to global memory
    (`fagpu.wait_shared_reads` waits for the reads only). A
    `fagpu.pass_turn` after it then hands the next block sums that have
    landed: the deterministic backward's dQ.
  }];
  let arguments = (ins DefaultValuedAttr<ConfinedAttr<I64Attr,
                           [IntMinValue<0>, IntMaxValue<63>]>, "0">:$pending);
  let assemblyFormat = "(`pending` `=` $pending^)? attr-dict";
}

//===----------------------------------------------------------------------===//
// Turns: sections that blocks run in a fixed order
//===----------------------------------------------------------------------===//

def FAGPU_WaitTurnOp : FAGPU_Op<"wait_turn"> {
  let summary = "Wait until a counter in global memory reaches a turn";
  let description = [{
    The first thread of the executing group (the block, or its
    `fagpu.warp_specialize` region) loads `counters[indices]` with acquire
    semantics at GPU scope until it equals `turn`; then the group syncs. The
    global writes of every block that passed the turn before are then
    visible to the whole group. With `fagpu.pass_turn` after a section of
    global sums, blocks add in the order of their turns: run to run, the
    same sums in the same order (the deterministic backward's dQ).
  }];
  let arguments = (ins MemRefOf<[I32]>:$counters, Variadic<Index>:$indices,
                       Index:$turn);
  let assemblyFormat = [{
    $counters `[` $indices `]` `,` $turn attr-dict `:` type($counters)
  }];
  let hasVerifier = 1;
}

def FAGPU_PassTurnOp : FAGPU_Op<"pass_turn"> {
  let summary = "Let the next block have its turn";
  let description = [{
    The executing group syncs (its global writes before this op are done),
    then its first thread adds 1 to `counters[indices]` with release
    semantics at GPU scope, which makes those writes visible to the block
    whose `fagpu.wait_turn` sees the new count.
  }];
  let arguments = (ins MemRefOf<[I32]>:$counters, Variadic<Index>:$indices);
  let assemblyFormat = [{
    $counters `[` $indices `]` attr-dict `:` type($counters)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// mbarriers, TMA and warp specialization
//===----------------------------------------------------------------------===//

def FAGPU_AllocBarriersOp : FAGPU_Op<"alloc_barriers"> {
  let summary = "An array of mbarriers in the block's shared memory";
  let description = [{
    Reserves `count` 8-byte mbarrier objects in the kernel's dynamic shared
    memory (placed after the shared tiles).
  }];
  let results = (outs FAGPU_Barriers:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def FAGPU_InitBarriersOp : FAGPU_Op<"init_barriers"> {
  let summary = "Initialise every mbarrier of an array; the block then syncs";
  let description = [{
    Executed by every thread of the block, before any other use of the
    barriers: one thread initialises barrier i to expect `arrivals[i]`
    arrivals per phase, then the initialisation is fenced and the block
    synchronises, so that every thread (and TMA) sees it.
  }];
  let arguments = (ins FAGPU_Barriers:$barriers,
                       DenseI64ArrayAttr:$arrivals);
  let assemblyFormat = [{
    $barriers `arrivals` `=` $arrivals attr-dict `:` qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

def FAGPU_ArriveExpectBytesOp : FAGPU_Op<"arrive_expect_bytes"> {
  let summary = "Arrive once on an mbarrier, announcing bytes still to land";
  let description = [{
    One thread of the executing warp group arrives on barrier `index` and
    raises its pending byte count by `bytes`: the phase completes when the
    asynchronous copies issued on it (`fagpu.tma_load`) have delivered them.
  }];
  let arguments = (ins FAGPU_Barriers:$barriers, Index:$index,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$bytes);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $bytes attr-dict `:`
    qualified(type($barriers))
  }];
}

def FAGPU_TmaLoadOp : FAGPU_Op<"tma_load"> {
  let summary = "Start a TMA copy of a tile whose bytes land on an mbarrier";
  let description = [{
    `tile[i, j] = tensor[b, h, row + i, j]` (zero past the tensor's bounds),
    issued by one thread of the executing warp group as one
    `cp.async.bulk.tensor` per box of columns. The bytes complete on barrier
    `index`, which someone must have told to expect them
    (`fagpu.arrive_expect_bytes`); readers wait on that barrier.
  }];
  let arguments = (ins FAGPU_TensorMap:$map, Variadic<Index>:$coords,
                       FAGPU_SharedTile:$tile, FAGPU_Barriers:$barriers,
                       Index:$index);
  let assemblyFormat = [{
    $map `[` $coords `]` `into` $tile `,` $barriers `[` $index `]` attr-dict
    `:` qualified(type($map)) `,` qualified(type($tile)) `,`
    qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

def FAGPU_TmaReduceOp : FAGPU_Op<"tma_reduce"> {
  let summary = "Start adding a shared tile into a global tensor through TMA";
  let description = [{
    `tensor[b, h, row + i, j] += tile[i, j]` (f32) for every row of the
    tile inside the tensor (TMA drops the rest of a box), summed in global
    memory by the copy engine: one `cp.reduce.async.bulk.tensor ... .add`
    per box of columns. The columns are cut into `bands` equal bands, band
    g issued by one thread of warpgroup g, which commits its reductions as
    one bulk group. Blocks that share rows of the tensor sum into it (the
    backward's dQ, one partial sum per KV block).

    The tile is in the map's 128-byte swizzle, so that the threads'
    register pairs land in different banks (a plain f32 tile takes every
    row of a warp's store in the same banks). As for
    `fagpu.reduce_to_global`: the tile must have been published to the
    issuing threads and the async proxy (`fagpu.store_to_shared`), may be
    written again only after `fagpu.wait_shared_reads` and a barrier, and
    the kernel may end only after one.
  }];
  let arguments = (ins FAGPU_TensorMap:$map, Variadic<Index>:$coords,
                       FAGPU_SharedTile:$tile,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$bands);
  let assemblyFormat = [{
    $map `[` $coords `]` `from` $tile `bands` `=` $bands attr-dict
    `:` qualified(type($map)) `,` qualified(type($tile))
  }];
  let hasVerifier = 1;
}

def FAGPU_WaitBarrierOp : FAGPU_Op<"wait_barrier"> {
  let summary = "Wait for a phase of an mbarrier to complete";
  let description = [{
    Every executing thread waits until the phase of barrier `index` with the
    parity of `phase` (phase % 2) has completed; what the phase's arrivals
    released (and the bytes TMA delivered on it) is then visible.
  }];
  let arguments = (ins FAGPU_Barriers:$barriers, Index:$index, Index:$phase);
  let assemblyFormat = [{
    $barriers `[` $index `]` `phase` $phase attr-dict `:`
    qualified(type($barriers))
  }];
}

def FAGPU_ArriveBarrierOp : FAGPU_Op<"arrive_barrier"> {
  let summary = "Each warp arrives once on an mbarrier";
  let description = [{
    Lane 0 of every executing warp arrives on barrier `index` (release
    semantics), after the warp's earlier reads of what the barrier guards:
    a barrier that all warps of a group release expects one arrival per
    warp.
  }];
  let arguments = (ins FAGPU_Barriers:$barriers, Index:$index);
  let assemblyFormat = [{
    $barriers `[` $index `]` attr-dict `:` qualified(type($barriers))
  }];
}

def FAGPU_WarpSpecializeOp : FAGPU_Op<"warp_specialize",
    [NoTerminator, SingleBlock, RecursiveMemoryEffects]> {
  let summary = "Split the block into a producer and consumer warpgroups";
  let description = [{
    The first `producer_warpgroups` warpgroups of the block run the
    `producer` region, the next `consumer_warpgroups` the `consumers`
    region; each first resizes its registers with `setmaxnreg` (down to
    `producer_registers`, up to `consumer_registers`). Inside a region,
    thread and warp positions (layouts, single-thread issue) count from the
    region's first thread, so the consumers' tiles keep the layouts they had
    when the whole block computed. The regions synchronise with each other
    only through mbarriers: no block-wide barrier may appear in them, and a
    block-scope sync of an op inside one (`fagpu.store_to_shared`'s) is a
    named barrier over that region's threads.

    With a non-empty `reducer` region (one producer warpgroup), the
    producer warpgroup's first warp runs `producer`, which may then hold
    only ops that one thread issues and any number wait on (TMA loads,
    expected bytes, barrier waits, stage views, arith and scf), and its
    second warp runs `reducer` (positions count from thread 32; a
    block-scope sync in it is a warp sync): the backward's dQ reductions,
    whose waits (for the compute warps' tiles, for their turn) then never
    hold up the loads. The other two warps go to the end.

    With a non-empty `transposer` region instead (one producer warpgroup,
    whose `producer` then runs on its first warp alone as above), the other
    three warps run `transposer` (positions count from thread 32; a
    block-scope sync in it is a named barrier of its 96 threads): the FP8
    forward's V tiles transposed for WGMMA (FlashAttention 3 uses the
    producer's idle warps so), off the compute warps' path.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<1>]>:$producer_warpgroups,
                       ConfinedAttr<I64Attr, [IntMinValue<24>, IntMaxValue<256>]>:$producer_registers,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$consumer_warpgroups,
                       ConfinedAttr<I64Attr, [IntMinValue<24>, IntMaxValue<256>]>:$consumer_registers);
  let regions = (region SizedRegion<1>:$producer, MaxSizedRegion<1>:$reducer,
      MaxSizedRegion<1>:$transposer, SizedRegion<1>:$consumers);
  let assemblyFormat = [{
    `producer` `(` `warpgroups` `=` $producer_warpgroups `,` `registers` `=`
    $producer_registers `)` $producer (`reducer` $reducer^)?
    (`transposer` $transposer^)?
    `consumers` `(` `warpgroups` `=` $consumer_warpgroups `,` `registers` `=`
    $consumer_registers `)` $consumers attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Threads of the block: 128 per warpgroup of both regions.
    int64_t getBlockThreads() {
      return 128 * (getProducerWarpgroups() + getConsumerWarpgroups());
    }
    /// Whether the producer's second warp runs a reducer region.
    bool hasReducer() { return !getReducer().empty(); }
    /// Whether the producer's warps 1-3 run a transposer region.
    bool hasTransposer() { return !getTransposer().empty(); }
    /// Whether one warp can run `op` of a producer region: it only issues
    /// (from one thread) or waits.
    static bool runsOnOneProducerWarp(Operation *op);
  }];
}

def FAGPU_TileGridOp : FAGPU_Op<"tile_grid"> {
  let summary = "The kernel's tiles, where the launch decides them";
  let description = [{
    `fagpu.tile_grid %x, %y, %z` in a kernel written a block per tile (the
    block ids index its tiles) states the tile grid, x * y * z tiles,
    where `fa.grid` cannot: with runtime shapes the extents are the call's
    and `fa.grid` has dynamic entries, so the operands compute them from
    the kernel's own arguments (e.g. ceil(Nq / block_q) from a
    `memref.dim`). `fagpu-persistent-grid` loops over these tiles; a block
    per tile launch needs nothing from it, so the lowering drops it. At
    most one per kernel (fagpu-persistent-grid takes it at the entry).
  }];
  let arguments = (ins Index:$x, Index:$y, Index:$z);
  let assemblyFormat = "$x `,` $y `,` $z attr-dict";
  let hasVerifier = 1;
}

def FAGPU_WarpgroupIdOp : FAGPU_Op<"warpgroup_id", [Pure]> {
  let summary = "The executing warpgroup's index in its group";
  let description = [{
    0, 1, ... counted from the first warpgroup of the enclosing
    `fagpu.warp_specialize` region (of the block outside one).
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
}

def FAGPU_NamedBarrierSyncOp : FAGPU_Op<"named_barrier_sync"> {
  let summary = "Wait at a hardware named barrier";
  let description = [{
    The executing warps wait at barrier `id` (1 to 15; 0 is the block's)
    until `threads` threads have arrived or synced on it.
  }];
  let arguments = (ins Index:$id, ConfinedAttr<I64Attr, [IntMinValue<32>]>:$threads);
  let assemblyFormat = "$id `,` `threads` `=` $threads attr-dict";
  let hasVerifier = 1;
}

def FAGPU_NamedBarrierArriveOp : FAGPU_Op<"named_barrier_arrive"> {
  let summary = "Arrive at a hardware named barrier without waiting";
  let description = [{
    The executing warps count toward barrier `id`'s `threads` and go on.
  }];
  let arguments = (ins Index:$id, ConfinedAttr<I64Attr, [IntMinValue<32>]>:$threads);
  let assemblyFormat = "$id `,` `threads` `=` $threads attr-dict";
  let hasVerifier = 1;
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUOPS_TD
