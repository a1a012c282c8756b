//===- Passes.td - FlashMLIR conversion passes -------------*- tablegen -*-===//

#ifndef FA_CONVERSION_PASSES_TD
#define FA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTiledAttentionToFAGPU
    : Pass<"fa-convert-tiled-attention-to-fagpu", "::mlir::ModuleOp"> {
  let summary = "Lower the tiled attention forward to the GPU tile level "
                "(WGMMA or mma.sync layouts)";
  let description = [{
    Takes each function tiled by `fa-tile-attention` and turns it into a
    `gpu.func` kernel at the GPU tile level, carrying the IR over op by op:
    the forall is the grid ((batch, head, Q block) = block ids (z, y, x)),
    the padded Q/K/V tiles become 128-byte-swizzled shared tiles filled by
    `fagpu.copy_to_shared`, the masked / unmasked / masked KV loops stay, and
    the math is the tile ops' decomposition (the one definition the CPU path
    runs): tile-sized `linalg.generic`s become the same `arith`/`math` ops on
    register tiles in the WGMMA accumulator layout, `fagpu.mma` for the
    contractions (QKᵀ from shared tiles, P·V with P from registers),
    `fagpu.reduce_rows` / `fagpu.expand_rows` for row statistics,
    `fagpu.tile_coords` for the mask's positions. O and LSE are stored with
    `fagpu.store_tile`. The kernel carries the launch attributes of the
    mma.sync kernels (same argument ABI: q, k, v, o, lse). Block-q 64 or 128
    (one or two consumer warpgroups); head dims multiples of 64 up to 256.
    FP8 (f8E4M3FN) operands: P is rounded to e4m3 for P·V and V transposed
    in shared memory (WGMMA reads 8-bit operands K-major only); with
    `pair-fp8-keys` P keeps the accumulator's registers as the
    `#fagpu.wgmma_a8_pairs` operand and Vᵀ's keys follow (`pair_keys`).

    With `mma-sync` the same IR gets the mma.sync layouts, the portable
    kernel (sm_80 and later): `#fagpu.mma_sync_acc` tiles over warps of 16
    or 32 query rows (`rows-per-warp`), Q read from its shared tile by each
    QKᵀ (ldmatrix), P in `#fagpu.mma_sync_a` (the accumulator's registers);
    f16 / bf16, block-kv a multiple of 16 up to 256, head dims multiples of
    16 up to 256.
  }];
  let options =
      [Option<"pairFP8Keys", "pair-fp8-keys", "bool", "false",
              "FP8 P·V: P's keys in pairs (no shuffles), Vᵀ permuted to match "
              "(FlashAttention 3's register permutation)">,
       Option<"mmaSync", "mma-sync", "bool", "false",
              "mma.sync layouts instead of WGMMA's (sm_80 / sm_89: the "
              "#fagpu.mma_sync_acc accumulator, Q read from its shared tile "
              "by each product, P from registers)">,
       Option<"rowsPerWarp", "rows-per-warp", "int64_t", "0",
              "with mma-sync: query rows a warp owns (16 or 32; 0: 32 for "
              "128-row Q blocks up to head dim 128, else 16, FA2's choice)">,
  ];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect"
  ];
}

def ConvertTiledAttentionGradToFAGPU
    : Pass<"fa-convert-tiled-attention-grad-to-fagpu", "::mlir::ModuleOp"> {
  let summary = "Lower the tiled attention backward to the GPU tile level "
                "(WGMMA layouts)";
  let description = [{
    Takes each function tiled by `fa-tile-attention-grad` and turns it into
    the backward's kernels: the forall's (batch, KV head) and its loop over
    KV blocks become the main kernel's grid (block ids z, y, x), so a block
    keeps its KV block's dK and dV in registers (the WGMMA accumulator
    layout, one warpgroup) while it walks the group's query heads and the
    visible Q blocks. The math is the grad tiles' decomposition, carried op
    by op: `fagpu.mma` from shared Q, K, V, dO tiles; P and dS from
    registers (dQ = dS K) or through `fagpu.store_to_shared` and
    `transpose_a` (dV += Pᵀ dO, dK += dSᵀ Q); LSE and delta as per-row
    register tiles (`fagpu.load_tile`). dQ, summed over KV blocks, is added
    into dq_acc (`dq-reduction`): `atomic` adds it from registers
    (`fagpu.store_tile accumulate`, vector reductions); `bulk` (head dims
    up to 128: the f32 staging tile does not fit beside the others above)
    writes each dQ tile into a shared tile, whose rows are dq_acc's back to
    back, and adds it with one bulk reduction (`fagpu.reduce_to_global`,
    FlashAttention 3's copy engine), which the next tile's store and the
    kernel's end wait for; `auto`, the measured choice, is `bulk` where it
    fits and `atomic` above (the compiler then runs
    `fagpu-tma-reductions`, with which the H200 measured bulk 1-3 % faster
    than atomic at head dims 64 and 128). delta = rowsum(dO ∘ O)
    and dQ's cast are the row kernels NAME_pre and NAME_post; the main
    kernel takes the mma.sync backward's arguments (q, k, v, dO, lse,
    delta, dq_acc, dk, dv). Block-q 64, block-kv 64 or 128, head dims 64,
    128 or 256, static shapes.

    `mma-sync`: the same kernel in mma.sync layouts (sm_80 and up, the
    portable path), as FlashAttention 2 computes it: S and dP transposed
    (Sᵀ = K Qᵀ in `#fagpu.transposed<#fagpu.mma_sync_acc>`), each warp
    owning 16 keys of the block (block-kv = 16 x warps) and their rows of
    dK and dV; Pᵀ and dSᵀ register A operands; dQ = dS K from dSᵀ in shared
    memory, read transposed (ldmatrix.trans), 16 query rows a warp
    (block-q a multiple of block-kv), added with f32 atomics.
  }];
  let options = [
    Option<"dqReduction", "dq-reduction", "std::string", "\"auto\"",
           "How dQ is summed into dq_acc: auto, bulk or atomic">,
    Option<"mmaSync", "mma-sync", "bool", "false",
           "mma.sync layouts (#fagpu.mma_sync_acc, transposed scores), dQ "
           "by atomics: the portable kernel (sm_80)">,
    Option<"transposeScores", "transpose-scores", "bool", "false",
           "S and dP computed transposed (Sᵀ = K Qᵀ) in a #fagpu.transposed "
           "accumulator layout: Pᵀ and dSᵀ are register A operands "
           "(FlashAttention 3's SdP_swapAB)">,
  ];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::NVVM::NVVMDialect"
  ];
}

def ConvertQuantizeToGPU
    : Pass<"fa-convert-quantize-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower fa.quantize to two GPU kernels (amax, then scale)";
  let description = [{
    Turns each function whose body is one `fa.quantize` of its argument
    (static shapes, head dim 64 to 256 in steps of 64) into two `gpu.func`
    kernels in a `gpu.module`, over the rows of the `[B, H, N, D]` input:
    a warp takes a row, each lane D / 32 contiguous elements (one vector
    load); the grid is (row blocks of 64, groups, batch), so that a thread
    block's rows lie in one (batch, group) block.

    - `NAME_amax(x, amax)`: each block's largest `|y|` into `amax`
      (`[B, G]` i32, zeroed by the launcher): the bits of `|y|` (the sign
      bit cleared; non-negative floats order as integers), their maximum
      over the warp's rows and lanes, one `atomic_rmw maxs` per warp.
    - `NAME(x, amax, output, descale)`: `output` (the e4m3 bytes) is
      `cvt.rn.satfinite.e4m3x2` of `clamp(y * 448 / amax)` with `amax`
      floored at 1e-12; `descale[b, g] = amax / 448`.

    With `rotate(seed = s)`, `y = x diag(signs) Hd / sqrt(D)` is computed
    as the Walsh-Hadamard butterfly on each lane's registers: the signs
    flip the floats' sign bits (a constant mask per register, bit `lane`),
    log2(D / 32) stages inside the lane, five across lanes by
    `gpu.shuffle xor`; each kernel recomputes it. The signs and bounds are
    the op's (`QuantizeOp::hadamardSign`, `kE4M3Max`, `kMinAmax`), the
    ones `fa-decompose-quantize` uses. The host function is removed; the
    kernels carry `fa.kind`, `fa.grid`, `fa.block` and `fa.shared_bytes`
    for the launcher.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
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

def PassRuntimeSizes : Pass<"fa-pass-runtime-sizes",
                             "::mlir::gpu::GPUModuleOp"> {
  let summary = "Kernel arguments with runtime sizes: a pointer and the "
                "sizes as scalar arguments";
  let description = [{
    Kernels take their memrefs as bare pointers (the runtime passes one
    device address per tensor), which carry no sizes. A kernel argument
    whose sizes are known at launch only (`memref<?x16x?x128xbf16>`,
    runtime shapes) becomes the same pointer typed `memref<1xbf16>` (the
    bare-pointer convention takes static shapes only) plus one `index`
    argument per dynamic size, appended after all other arguments in
    argument order, then size order; the body rebuilds the N-D view with
    `memref.reinterpret_cast` (row-major strides, products of the sizes)
    and reads only that. The kernel records the sizes
    as `fa.runtime_sizes = [argument, dim, argument, dim, ...]` for the
    runtime, which passes them as 64-bit integers. Where the kernel has
    `fa.runtime_size_names` (a string per size, as the compiler's .meta
    names them: sizes of one name are one value at every launch), sizes of
    one name share one appended argument, in order of first appearance:
    the views of q, dO and dq_acc then compute their strides from one
    sequence length. Static arguments and other kernels are left as they
    are.
  }];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"
  ];
}

def ConvertFAGPUToNVVM : Pass<"fa-convert-fagpu-to-nvvm",
                               "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower the GPU tile level (fagpu) to per-thread NVVM code";
  let description = [{
    Register tiles (tensors with a `#fagpu` layout) become each thread's
    registers, a vector in the layout's register order; every op asks the
    tile's layout function where its elements are. Elementwise `arith` and
    `math` ops run on those vectors (`exp2`, `log2`, `tanh` as the hardware
    approximations); `fagpu.reduce_rows` combines a thread's registers of a
    row and then shuffles across the lanes that split it; `fagpu.mma` with a
    `#fagpu.wgmma_acc` accumulator becomes `wgmma.mma_async` (shared A and B
    through matrix descriptors of the tiles' swizzle; register A through the
    register-A instruction); shared tiles are placed 1024-byte aligned in the
    kernel's dynamic shared memory, whose size is recorded on the kernel as
    `fa.shared_bytes`.

    With `exp2-on-fma-every=N` (N > 0), every N-th element of a tile's
    `math.exp2` is computed on the FMA pipe instead (2^floor(x) times a
    cubic in x - floor(x), relative error below 1e-4; exactly 0 below
    -127), so that the exponentials of the softmax share the FMA and MUFU
    pipes (FlashAttention 4's trick, for kernels whose MUFU is the limit).
  }];
  let options = [
    Option<"exp2OnFmaEvery", "exp2-on-fma-every", "int64_t", "0",
           "Compute every N-th exponential of a tile on the FMA pipe (0: "
           "none)">,
    Option<"descriptorsAtUse", "descriptors-at-use", "bool", "false",
           "Build each WGMMA descriptor where its product is issued, not "
           "once before a loop (the backward: K and V's descriptors would "
           "hold 48 registers at head dim 128)">,
    Option<"matrixStores", "matrix-stores", "bool", "false",
           "Store 16-bit accumulator tiles into shared memory with "
           "stmatrix.x4 (four register pairs an instruction, one address "
           "register for them) instead of one 32-bit store a pair. The "
           "compiler's choice: the backward at head dims 65-128, where the "
           "registers it frees let dP be issued beside S (alone it measured "
           "2-6 % slower on the H200; docs/perf/README.md)">
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::vector::VectorDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect"
  ];
}

#endif // FA_CONVERSION_PASSES_TD
