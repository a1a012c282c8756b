//===- Passes.td - FlashMLIR passes ------------------------*- tablegen -*-===//

#ifndef FA_TRANSFORMS_PASSES_TD
#define FA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertToOnlineAttention : Pass<"fa-convert-to-online-attention"> {
  let summary = "Rewrite fa.attention into the online-softmax form";
  let description = [{
    Replaces each `fa.attention` with an `fa.online_attention` over whole
    tensors, whose running max (-inf), sum (0) and accumulator (0) start from
    fills, followed by `fa.normalize`, which produces O = acc / sum and the
    log-sum-exp. The softmax scale is resolved (1/sqrt(D) by default) and
    written on the online op.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def TileAttention : Pass<"fa-tile-attention"> {
  let summary = "Tile the online-softmax form: Q blocks parallel, KV blocks "
                "as a reduction";
  let description = [{
    Turns a whole-tensor `fa.online_attention` and its `fa.normalize` into an
    `scf.forall` over (batch, query head, Q block) whose body runs the KV
    blocks as `scf.for` loops of tile-level `fa.online_attention`, then
    normalizes the tile and inserts O and LSE. KV blocks that causal or
    window masks hide from every row of the Q block are skipped; blocks
    visible to every row run `unmasked`; only boundary blocks are masked.
    Ragged edges are padded and masked. Batch and sequence lengths may be
    dynamic (runtime shapes): the grid and every bound are then computed
    from `tensor.dim` of the operands; head counts and head dims must be
    static.
  }];
  let options =
      [Option<"blockQ", "block-q", "int64_t", "64",
              "Query rows per tile (Br); a power of two or a multiple of 16">,
       Option<"blockKV", "block-kv", "int64_t", "64",
              "Keys per tile (Bc); a power of two or a multiple of 16">,
       Option<"rescaleThreshold", "rescale-threshold", "double", "0",
              "Raise a row's running max only where a tile's scores exceed it "
              "by more than this (base 2; the tile ops' rescale_threshold); 0 "
              "raises it at every larger score">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect"];
}

def TileAttentionGrad : Pass<"fa-tile-attention-grad"> {
  let summary = "Tile fa.attention_grad: delta pre-pass, KV blocks outside, "
                "Q blocks inside";
  let description = [{
    Rewrites `fa.attention_grad` into: `delta = rowsum(dO * O)`; an
    `scf.forall` over (batch, KV head) whose body walks the KV blocks, and
    for each keeps f32 dK/dV tile accumulators while it walks the query
    heads of the group and the visible Q blocks with `fa.attention_grad_tile`
    (recomputing P from LSE); dQ accumulates in f32 across KV blocks and is
    cast to the element type at the end. Skipping and masking of blocks
    follow `fa-tile-attention`. With `scale-grads-once` the tile ops leave
    the softmax scale out of dS (`unscaled_grads`) and the casts of dK
    (after each KV block) and dQ (at the end) multiply by it.
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", "64",
           "Query rows per tile (Br); a power of two">,
    Option<"blockKV", "block-kv", "int64_t", "64",
           "Keys per tile (Bc); a power of two">,
    Option<"scaleGradsOnce", "scale-grads-once", "bool", "false",
           "Apply the softmax scale to dQ and dK once, after their sums "
           "(the tile ops' unscaled_grads), instead of to every dS tile">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::affine::AffineDialect"];
}

def DecomposeAttention : Pass<"fa-decompose-attention"> {
  let summary = "Decompose tile-level attention ops into tile-sized linalg";
  let description = [{
    Lowers tile-level `fa.online_attention`, `fa.normalize` and
    `fa.attention_grad_tile` into `linalg.generic` ops on `[Br, Bc]`,
    `[Br, D]` and `[Br]` tiles: QKᵀ, scale and softcap with log2(e) folded
    in, the causal/window/bounds mask (only on tiles not marked
    `unmasked`), row max, the 2^(m - m') rescale, exp2, row sum and the P·V
    update; and for the backward, P recomputed from LSE, dV, dP, dS, dQ, dK.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def DecomposeQuantize : Pass<"fa-decompose-quantize"> {
  let summary = "Decompose fa.quantize into linalg on tensors";
  let description = [{
    Lowers `fa.quantize` over `[B, H, N, D]` into `linalg.generic` ops in
    the `[B, G, H/G, N, D]` space of its blocks: the f32 values (with
    `rotate`, a contraction with the constant `diag(signs) Hd / sqrt(D)`),
    each block's amax, its descale `amax / 448`, and the e4m3 values
    `truncf(clamp(y * 448 / amax, -448, 448))`. The portable form, for the
    host; GPUs take their own kernel.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def ExpandFP8Conversions : Pass<"fa-expand-fp8-conversions"> {
  let summary = "Expand f8E4M3FN <-> float conversions into integer "
                "arithmetic";
  let description = [{
    LLVM has no FP8 type, so a host lowering cannot translate
    `arith.extf` from `f8E4M3FN`. This pass decodes the byte instead (sign,
    4-bit exponent with bias 7, 3-bit mantissa, subnormals, the one NaN
    encoding per sign), exactly, to f32, then extends or truncates to the
    result type (f16 and bf16 hold every e4m3 value exactly); and encodes
    `arith.truncf` to `f8E4M3FN` from f32 (f16 and bf16 via f32), rounded
    to nearest even, NaN past 464 (448's rounding boundary) as APFloat's
    conversion has it. Scalars and vectors.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // FA_TRANSFORMS_PASSES_TD
