//===- Passes.td - Passes on the GPU tile level ------------*- tablegen -*-===//

#ifndef FA_DIALECT_FAGPU_TRANSFORMS_PASSES_TD
#define FA_DIALECT_FAGPU_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PipelineSharedCopies : Pass<"fagpu-pipeline-shared-copies",
                                 "::mlir::gpu::GPUModuleOp"> {
  let summary = "Multi-buffer the shared tiles a loop copies and prefetch "
                "them iterations ahead";
  let description = [{
    For each `scf.for` (step 1) whose body starts its work with
    `fagpu.copy_to_shared` into tiles allocated outside the loop, the tiles
    become rings of S buffers (`stages`, or fewer when they would not fit
    `max-shared-bytes`; at least 2) and the copies asynchronous: before the
    loop the first S - 1 iterations' copies are issued (one commit group
    each, skipped past the loop's end); iteration i computes on
    `fagpu.stage %ring[(i - lb) % S]` and issues the copies of iteration
    i + S - 1. With S = 2 the issue precedes the wait for iteration i's
    tiles and a barrier ends each iteration (the issue refills the stage
    iteration i - 1 read); with S >= 3 the wait (whose barrier ends every
    thread's reads of iteration i - 1) comes first, so no barrier is needed
    in the loop, only one after it (the next loop's prologue refills
    stages). Copy operands are recomputed for the later iteration from their
    backward slice in the loop body. The loop's `fagpu.load_tile`s (per-row
    statistics in registers) are carried one iteration ahead the same way:
    iteration lb's rows loaded before the loop, iteration i + 1's at the top
    of iteration i. Inside a `fagpu.warp_specialize` (whose producer loads
    the tiles through TMA) a loop with row loads and no copies gets the
    row prefetch alone.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "2",
           "Buffers per tile (2: double buffering)">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", "232448",
           "Shared memory a block can have (227 KiB on sm_90); a kernel "
           "whose rings would need more keeps its synchronous copies (a "
           "remark says so)">,
  ];
  let dependentDialects = ["::mlir::fagpu::FAGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
}

def PersistentGrid : Pass<"fagpu-persistent-grid",
                           "::mlir::gpu::GPUModuleOp"> {
  let summary = "A fixed grid of blocks that loop over the kernel's tiles";
  let description = [{
    Each kernel whose grid (`fa.grid = [X, Y, Z]`) has a block per tile
    becomes a persistent kernel: `blocks` blocks (at most X * Y * Z), each
    looping (an `scf.for` over rounds, marked `fagpu.tiles`) with the
    kernel's body, after its shared allocations and constants, as the
    loop's body. Round r gives block b the tile `t = r * B + b` (B =
    grid_dim.x), odd rounds `t = r * B + B - 1 - b`, while t < X * Y * Z:
    a block with a long tile (a causal mask's last Q blocks) in one round
    gets a short one in the next. The block ids the body read become `t`
    split into (t % X, t / X % Y, t / (X * Y)), the order in which a block
    per tile's blocks start: the tiles of a round share few (batch, head)
    pairs and so their K/V in L2.

    A block thus pays its launch, barrier set-up and pipeline fill once,
    and fagpu-warp-specialize can load the next tile while the compute
    warpgroups finish the current one (FlashAttention 3's persistent
    scheduler, static). The grid does not change what is computed: any
    number of launched blocks gives the same result.

    With runtime shapes (`fa.grid` has dynamic x or z) the kernel states its
    tiles, `fagpu.tile_grid %x, %y, %z` at its entry, computed from its
    arguments (e.g. ceil(Nq / block_q) from a `memref.dim`); those ops stay
    before the loop, which runs over x * y * z tiles, the statement is
    consumed, `fa.grid` stays the call's tile grid and
    `fa.persistent_blocks = blocks` tells the runtime to launch
    min(blocks, tiles) blocks along x for each call.
  }];
  let options = [
    Option<"blocks", "blocks", "int64_t", "132",
           "Blocks of the persistent grid (one per SM: 132 on an H100 or "
           "H200 SXM)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
}

def WarpSpecialize : Pass<"fagpu-warp-specialize",
                           "::mlir::gpu::GPUModuleOp"> {
  let summary = "A TMA producer warpgroup feeding the compute warpgroups "
                "through mbarrier rings";
  let description = [{
    FlashAttention 3's split of the block. In each kernel whose shared tiles
    are filled by `fagpu.copy_to_shared` from row slices of its tensor
    arguments (once before the KV loops, or at the top of each KV loop):

    - every copied argument gets a `!fagpu.tensor_map` parameter (boxes of
      the tile's rows by 128 bytes), and the copies become `fagpu.tma_load`
      whose bytes complete on mbarriers; rows past the tensor's end read as
      zero, as the copies' `limit` asked;
    - the tiles copied in loops become rings of `stages` buffers (fewer if
      they would not fit `max-shared-bytes`, at least 2), with one "full"
      and one "empty" barrier per tile and stage;
    - a `fagpu.warp_specialize` splits the block: one producer warpgroup
      (`setmaxnreg` down to `producer-registers`) walks the same KV loops
      issuing only the loads — it waits for a stage to be empty, announces
      its bytes and starts the copies — while the warpgroups that computed
      before (`setmaxnreg` up to `consumer-registers`) run the kernel's
      computation unchanged, waiting for each tile's "full" barrier just
      before its first use and releasing its stage (one arrival per warp)
      right after its last use: K after QKᵀ, V after P·V, so the producer
      refills K's stage while P·V still reads V;
    - a counter carried through all KV loops names the stage (`it % S`) and
      the phase parity (`it / S`), so consecutive loops continue one ring.

    Loop bounds and copy coordinates computed before the loops stay before
    the split, shared by both sides. The kernel's block grows by the
    producer warpgroup.

    In a persistent kernel (an `scf.for` marked `fagpu.tiles`, from
    fagpu-persistent-grid) the tile loop's body plays the kernel's: each
    side gets its own tile loop (the producer recomputes the per-tile
    coordinates), both carry the ring counter and the tile's round, and
    each tile copied once per tile (Q) gets an "empty" barrier too: the
    compute warpgroups release it after its last use, and the producer
    waits for that before loading the next tile's. With `tile-buffers` > 1
    such a tile gets that many buffers where they fit beside the rings (a full and an
    empty barrier each, the buffer `round % B`, the phase `round / B`), so
    that the producer loads tile t + 1's while tile t computes on its own.

    In the backward the copying loops (Q and dO per Q block) sit in a loop
    over the query heads of the block's KV head (GQA), with K and V copied
    once before it: each side runs that loop, the producer recomputing the
    head's coordinates, and it carries the ring counter. Inside the split,
    block-scope syncs of the compute code (`fagpu.store_to_shared`'s, the
    issue of `fagpu.tma_reduce`) become a named barrier over the consumer
    warpgroups (`kConsumerSyncBarrier`) in the lowering.

    With `hand-off-reductions`, the TMA reduction of a staging tile that
    each copying loop stores and adds into global memory (the backward's
    dQ, from fagpu-tma-reductions) moves to the producer: the tile becomes
    a two-stage ring with a "full" barrier (one arrival per compute warp)
    and an "empty" one (the reducer warp's) per stage, indexed by the ring
    counter. The compute warps wait for the stage to be empty, store into
    it (`sync(warp)`: no block-wide barrier) and arrive on "full"; the
    producer warpgroup's second warp (the split's `reducer` region, its
    first keeping the loads) runs the same loops and, for each iteration,
    waits for its "full", issues its reduction, waits for the copy engine
    to have read the previous stage and arrives on its "empty". The compute
    warps never wait for the copy engine. Where the second stage does not
    fit `max-shared-bytes` beside two stages of the loops' rings, the
    reduction stays where it is.

    A reduction in a turn (`fagpu.wait_turn` before its store,
    `fagpu.wait_global_sums` and `fagpu.pass_turn` after it: the
    deterministic backward's dQ) moves with its turn. The reducer passes
    each turn once the sums have landed; with `pipeline-turns`, only after
    it has taken the next iteration's turn and issued its reduction, so
    that the wait for the sums overlaps the wait for the next turn (the
    loop's last turn passes after the loop). That halves each block's
    hold on a turn but makes a block wait for the next iteration's turn of
    the block before it: it pays where blocks start their loops at
    different iterations (a causal or windowed backward) and loses where
    they all start together.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "2", "Buffers per ring">,
    Option<"producerRegisters", "producer-registers", "int64_t", "24",
           "setmaxnreg of the producer warpgroup">,
    Option<"consumerRegisters", "consumer-registers", "int64_t", "0",
           "setmaxnreg of the compute warpgroups; 0: what the register file "
           "leaves beside the producer, at most 240">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", "232448",
           "Shared memory a block can have (227 KiB on sm_90)">,
    Option<"tileBuffers", "tile-buffers", "int64_t", "1",
           "Buffers of each tile a persistent kernel copies once per tile "
           "(Q); fewer where they would not fit (the compiler asks for "
           "two, docs/perf/README.md)">,
    Option<"handOffReductions", "hand-off-reductions", "bool", "false",
           "The copying loops' TMA reductions of a staging tile issued by "
           "the producer from a two-stage ring">,
    Option<"pipelineTurns", "pipeline-turns", "bool", "false",
           "A handed-off reduction's turn passes after the next turn is "
           "taken (causal and windowed backwards)">,
  ];
  let dependentDialects = ["::mlir::fagpu::FAGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
}

def TransposeInProducer
    : Pass<"fagpu-transpose-in-producer", "::mlir::gpu::GPUModuleOp"> {
  let summary = "The producer warpgroup's idle warps transpose the tiles "
                "that the compute warpgroups transposed";
  let description = [{
    After `fagpu-warp-specialize`: where the consumer region of a
    `fagpu.warp_specialize` (one producer warpgroup, no reducer) transposes
    a stage of a TMA-loaded ring into a tile of its own
    (`fagpu.transpose_shared %ring_stage, %tile`, the FP8 forward's V), the
    transposition moves to a `transposer` region, which runs on the
    producer warpgroup's warps 1-3 (FlashAttention 3's placement):

    - the tile becomes a ring of the source ring's stages, with a "full"
      and an "empty" mbarrier per stage appended to the kernel's array;
    - the transposer walks the producer's loops (a clone of them without
      the loads): for each load of the source ring it waits for the stage
      to be full and for its own stage to be empty, transposes, releases
      the source stage (whose "empty" barrier now counts the transposer's
      three warps) and announces its stage as full;
    - the consumers wait for the transposed stage instead of the source
      one, read it in their product and release it after.

    The compute warpgroups' loop is then the one of 16-bit operands, so
    `fagpu-overlap-softmax` and `fagpu-pingpong` apply to it.
  }];
  let dependentDialects = ["::mlir::fagpu::FAGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def PingPong : Pass<"fagpu-pingpong", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Compute warpgroups take turns on the tensor cores";
  let description = [{
    FlashAttention 3's ping-pong schedule. In the consumer region of a
    `fagpu.warp_specialize` with W >= 2 warpgroups, every `fagpu.mma` in a
    loop becomes a turn: warpgroup w waits at named barrier 1 + w, issues
    its product, then hands the turn to warpgroup (w + 1) % W by arriving at
    that one's barrier (two warpgroups, 256 threads, per barrier); adjacent
    asynchronous products (fagpu-overlap-softmax's QKᵀ and P·V) make one
    turn. The products of the warpgroups thus alternate, and each warpgroup's softmax
    runs while the next one's product occupies the tensor cores. The last
    warpgroup gives warpgroup 0 its first turn before the loops; warpgroup
    0 takes back the last turn after them, so every barrier phase
    completes.
  }];
  let dependentDialects = ["::mlir::fagpu::FAGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def TmaReductions : Pass<"fagpu-tma-reductions", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Add the backward's dQ tiles through TMA from swizzled "
                "shared tiles";
  let description = [{
    Each `fagpu.reduce_to_global` whose tile is allocated for it alone (only
    `fagpu.store_to_shared` and reductions use it; f32, at most 256 rows of
    a multiple of 32 columns, as many as the destination's) and whose
    destination is whole rows of one matrix of a dense kernel argument,
    rows [row, min(row + tile rows, row count)) (the tiling's cut at the
    tensor's end), becomes a `fagpu.tma_reduce` through a new tensor-map
    parameter of that argument (`fagpu.tensor_map_of`, boxes of the tile's
    rows x 32 columns), and its tile takes the 128-byte swizzle, so that a
    warp's register pairs no longer land in the same banks. A reduction
    whose limit is not provably the row count (a runtime length read from
    another argument, the end of a packed sequence) goes the same way if
    the destination argument is written by nothing but these reductions:
    the value stored into its tile (by the last `fagpu.store_to_shared`
    before the reduction in its block) first has its rows at and past
    `limit - row` replaced by zeros (`fagpu.tile_coords`, `arith.select`),
    so adding the whole box changes no other row. Others stay.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SinkPastLoops : Pass<"fagpu-sink-past-loops", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Move values computed before a loop and used only after it "
                "to their first use";
  let description = [{
    In every block of the module's kernels, a side-effect-free op without
    regions whose uses all lie in its own block, the first after a loop
    (`LoopLikeOpInterface`) that follows the op, moves to just before that
    first use; ops are visited last first, so the operands of a moved op
    follow it. Constants stay. A persistent kernel's tile coordinates for
    the epilogue (the output's row offset, head and batch) then no longer
    stay live through the KV loop, where the registers are scarce.
  }];
}

def DeferRowSums : Pass<"fagpu-defer-row-sums", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Keep a KV loop's running row sums in per-lane parts";
  let description = [{
    A KV loop carrying the online softmax's row sums as
    `l' = alpha * l + fagpu.reduce_rows sum (P)` (either operand order)
    carries them instead in per-lane parts,
    `l' = fagpu.accumulate_rows P scaled alpha into l`, and the loop's
    result becomes `fagpu.complete_rows` of the parts: the lanes' shuffles
    run once after the loop, not once a KV block (FlashAttention 2's
    deferred reduction). The parts start from zero; a loop whose sums start
    from another loop's carries that loop's parts on. Loops whose sums
    start elsewhere, or whose carried sum has another use, are left alone.
  }];
}

def SkipUnitRescales
    : Pass<"fagpu-skip-unit-rescales", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Skip multiplying a tile by rescale factors where a warp's "
                "are all 1";
  let description = [{
    Each `arith.mulf` of a KV loop's accumulator (an `scf.for` region
    argument or a `fagpu.mma_wait` result) by `fagpu.expand_rows` of a
    `math.exp2` (the online softmax's rescale of O by 2^(m - m')) becomes

        %any = fagpu.warp_any (factors != 1)
        scf.if %any { arith.mulf } else { the unscaled tile }

    The result is the same either way (x * 1 = x): a warp whose rows all
    kept their running max skips the multiply. It pays with a rescale
    threshold (`fa.online_attention`'s `rescale_threshold`, which makes
    such factors exactly 1 almost always); without one the vote is a cost.
    Run it after the passes that move the rescale (`fagpu-overlap-softmax`,
    `fagpu-pingpong`).
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def OverlapSoftmax : Pass<"fagpu-overlap-softmax", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Compute the softmax of block j while P·V of block j - 1 "
                "runs (software-pipelined KV loops)";
  let description = [{
    FlashAttention 3's intra-warpgroup overlap. For each KV loop in the
    consumer region of a `fagpu.warp_specialize` whose body computes
    S = QKᵀ (accumulator from outside the loop), a softmax, and then
    O' = P·V + rescale(O) from a V ring stage (wait, stage, product, empty
    arrival) with O' yielded, the loop becomes:

    - under `lb < ub` (an empty loop stays empty): iteration lb's QKᵀ,
      softmax and rescale;
    - a loop over lb + 1 .. ub that carries P_{j-1} and the rescaled
      accumulator: it waits for V_{j-1}, issues QKᵀ of block j and P·V of
      block j - 1 back to back (`fagpu.mma async`), waits for S_j alone
      (`in_flight = 1`), computes the softmax while P·V runs, then waits
      for P·V, releases V_{j-1}'s stage and rescales;
    - after it, the last block's P·V and release.

    Loops of any other shape are left alone, and so are loops that do not
    release K's stage between QKᵀ and V's wait: an iteration holds V_{j-1}
    and K_j, and with one release per stage after P·V the producer could
    not load ahead of two stages (fagpu-warp-specialize releases each tile
    after its own last use).

    With `rescale-before-product` (FlashAttention 3/4's RescaleOBeforeGemm)
    the loop carries O as P·V left it and block j - 1's row factors (the
    rescale's per-row inputs; their `fagpu.expand_rows` go with it): O is
    scaled after QKᵀ of block j is issued and before P·V of block j - 1,
    so the multiplications run under QKᵀ instead of after P·V's wait; the
    last block's rescale precedes its P·V after the loop.
  }];
  let options = [
    Option<"rescaleBeforeProduct", "rescale-before-product", "bool", "false",
           "Scale O under QKᵀ of block j, before P·V of block j - 1">,
  ];
  let dependentDialects = ["::mlir::fagpu::FAGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def AsyncProducts : Pass<"fagpu-async-products", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Issue WGMMA products early and wait for them late";
  let description = [{
    In each block that holds synchronous WGMMA products (`fagpu.mma` with a
    `#fagpu.wgmma_acc` or `#fagpu.wgmma_acc_cols` accumulator), each product
    moves up past the ops before it that it does not depend on: ops free of
    memory effects that define none of its operands, `fagpu.load_tile`, and
    writes of shared tiles it does not read; not past another product (they
    keep their order) nor any other effect on memory. It then becomes
    `async`, and a `fagpu.mma_wait` (`in_flight` = the products issued after
    it) goes right before the first op that uses its result, writes a shared
    tile it reads, or has another effect on memory (a fence), or before the
    block's terminator. Waiting for a product waits for the older ones too
    (products complete in issue order), so they are waited for there as
    well. The backward then runs dP = dO Vᵀ under the exponentials of P,
    and dV, dK and dQ back to back.

    With `hoist-stage-waits`, first each `fagpu.wait_barrier` whose
    following `fagpu.stage` views are read by products alone moves up, with
    those views and the pure ops they need, to just after the wait before
    it, unless an arrival lies between the two (another thread may wait for
    it): the backward's dO stage is then waited for beside Q's, and
    dP = dO Vᵀ issues with S = Q Kᵀ instead of after P's store. A ring stage
    fills without this thread's help, so the earlier wait cannot deadlock.
    It holds S and dP in registers together: on the H200 the backward gains
    2-5 % at head dim 64 and loses 7-9 % at 128, where it spills.
  }];
  let options = [
    Option<"hoistStageWaitsOption", "hoist-stage-waits", "bool", "false",
           "Wait for product-only ring stages right after the wait before">,
  ];
}

def NarrowSharedSyncs : Pass<"fagpu-narrow-shared-syncs",
                              "::mlir::gpu::GPUModuleOp"> {
  let summary = "Drop or shrink the barriers around fagpu.store_to_shared "
                "where the IR proves them wider than needed";
  let description = [{
    For each shared tile (a plain `fagpu.alloc_shared`, not a ring) that
    `fagpu.store_to_shared` writes:

    - `sync(warpgroup)` on all its stores when they all write with one
      ownership (which warpgroups hold each element, from the value's
      layout) and every other use reads, in each warpgroup, only elements
      that warpgroup alone wrote: a `fagpu.mma` (warpgroup g computes the
      accumulator elements it holds, reading A's rows or Aᵀ's columns and
      B's columns or Bᵀ's rows of them) or a `fagpu.reduce_to_global`
      (band b issued by warpgroup b). Any other use keeps the block scope.
    - `unread` on a store when, walking back over everything that can run
      before it (the loops around it: their previous iteration and the way
      in; loops and ifs before it: their bodies, and around them), a block
      barrier (`gpu.barrier`, `fagpu.wait_shared_copies`,
      `fagpu.copy_to_shared`, `fagpu.init_barriers`, a block-scope
      `fagpu.store_to_shared`'s trailing one) comes before any read of the
      tile: a use, the wait of a product that reads it, or a
      `fagpu.wait_shared_reads` where bulk reductions (`fagpu.reduce_to_global`,
      `fagpu.tma_reduce`) read it: the copy engine reads until the issuing
      thread's wait, which the others pass at once. Inside a
      `fagpu.warp_specialize` region only the scope can narrow: the walk
      stops at the region.

    The backward's P and dS stores thus lose the leading block barrier that
    the loop's closing one makes redundant, and P (read only by its own
    warpgroup's dV product) publishes to its warpgroup alone.
  }];
  let dependentDialects = ["::mlir::fagpu::FAGPUDialect"];
}

#endif // FA_DIALECT_FAGPU_TRANSFORMS_PASSES_TD
