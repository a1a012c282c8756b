//===- FAOps.td - FlashMLIR attention ops -------------------*- tablegen -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_TD
#define FA_DIALECT_FA_IR_FAOPS_TD

include "fa/Dialect/FA/IR/FADialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

// Element types that attention operands may carry.
def FA_ElementType : AnyTypeOf<[F32, F16, BF16, F8E4M3FN]>;
def FA_Tensor : RankedTensorOf<[FA_ElementType]>;
def FA_F32Tensor : RankedTensorOf<[F32]>;
def FA_SeqStarts : 1DTensorOf<[I32]>;
// A descale factor of FP8 operands: per (batch, KV head) on whole tensors,
// one f32 on a tile.
def FA_Descale : AnyTypeOf<[F32, FA_F32Tensor]>;

// Packed variable-length sequences (varlen): `cu_seqlens_q/k` hold B + 1
// running offsets (int32, the first 0), so that sequence b owns query rows
// [cu_seqlens_q[b], cu_seqlens_q[b + 1]) and key rows [cu_seqlens_k[b],
// cu_seqlens_k[b + 1]) of tensors whose batch dim is 1; `max_seqlen_q/k`
// bound every sequence's lengths (they size the grid).
defvar FA_VarlenOperands = (ins Optional<FA_SeqStarts>:$cu_seqlens_q,
                                Optional<FA_SeqStarts>:$cu_seqlens_k,
                                Optional<Index>:$max_seqlen_q,
                                Optional<Index>:$max_seqlen_k);

// The assembly of FA_VarlenOperands: all four or none.
defvar FA_VarlenFormat = [{
  (`seqlens` `(` $cu_seqlens_q^ `,` $cu_seqlens_k `max` $max_seqlen_q `,`
    $max_seqlen_k `:` type($cu_seqlens_q) `,` type($cu_seqlens_k) `)`)?
}];

// Attributes shared by every op that computes scores. `scale` is the softmax
// scale (1/sqrt(D) when absent on `fa.attention`); `window` is (left, right)
// with -1 for an unbounded side; `softcap` caps logits as c * tanh(s / c).
defvar FA_ScoreAttrs = (ins OptionalAttr<F64Attr>:$scale,
                            UnitAttr:$causal,
                            OptionalAttr<DenseI64ArrayAttr>:$window,
                            OptionalAttr<F64Attr>:$softcap);

// The shared tail of the assembly formats that print FA_ScoreAttrs.
defvar FA_ScoreAttrsFormat = [{
  (`scale` `=` $scale^)? (`causal` $causal^)? (`window` $window^)?
  (`softcap` `=` $softcap^)?
}];

//===----------------------------------------------------------------------===//
// Whole-tensor ops
//===----------------------------------------------------------------------===//

def FA_AttentionOp : FA_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention, forward";
  let description = [{
    `O = softmax(mask(softcap(scale * Q Kᵀ))) V` per batch and query head,
    plus the natural-log log-sum-exp of each query row (`-inf` for a row
    that sees no key). Shapes: Q `[B, Hq, Nq, D]`, K `[B, Hkv, Nk, D]`,
    V `[B, Hkv, Nk, Dv]`, O `[B, Hq, Nq, Dv]`, LSE `[B, Hq, Nq]` f32. Query
    head `h` reads KV head `h / (Hq / Hkv)` (GQA; MQA when Hkv = 1).

    Masks are bottom-right aligned when Nq != Nk (FlashAttention >= 2.1):
    with `shift = Nk - Nq`, `causal` keeps keys `j <= i + shift`, and
    `window [l, r]` keeps `i + shift - l <= j <= i + shift + r`. A causal
    op may carry a window only as `[l, 0]` (a local causal window).

    FP8 (`f8E4M3FN`) operands need `descale(%q_descale, %k_descale,
    %v_descale)`, each `[B, Hkv]` f32, and produce a bf16 or f16 output.

    `seqlens(%cu_q, %cu_k max %max_q, %max_k : ...)` makes the op varlen:
    B sequences packed along N of batch-1 tensors, each attending to its
    own keys only, its masks bottom-right aligned on its own lengths. LSE
    rows and O rows that belong to no sequence are left undefined.

    ```mlir
    %o, %lse = fa.attention %q, %k, %v
        seqlens(%cu_q, %cu_k max %mq, %mk : tensor<5xi32>, tensor<5xi32>)
        causal : tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>,
                 tensor<1x8x?x128xbf16>
        -> tensor<1x8x?x128xbf16>, tensor<1x8x?xf32>
    ```

    ```mlir
    %o, %lse = fa.attention %q, %k, %v causal window [256, 0]
        : tensor<2x8x1024x128xbf16>, tensor<2x2x1024x128xbf16>,
          tensor<2x2x1024x128xbf16>
        -> tensor<2x8x1024x128xbf16>, tensor<2x8x1024xf32>
    ```
  }];
  let arguments = !con((ins FA_Tensor:$query, FA_Tensor:$key,
                            FA_Tensor:$value,
                            Variadic<FA_F32Tensor>:$descales),
                       FA_VarlenOperands, FA_ScoreAttrs);
  let results = (outs FA_Tensor:$output, FA_F32Tensor:$lse);
  let assemblyFormat = !strconcat(
    "$query `,` $key `,` $value "
    "(`descale` `(` $descales^ `:` type($descales) `)`)? ", FA_VarlenFormat,
    FA_ScoreAttrsFormat,
    [{ attr-dict `:` type($query) `,` type($key) `,` type($value)
       `->` type($output) `,` type($lse) }]);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, or 1/sqrt(D) when it is absent.
    double getEffectiveScale();
    /// Whether the sequences are packed (the `seqlens` operands).
    bool isVarlen() { return static_cast<bool>(getCuSeqlensQ()); }
  }];
}

def FA_AttentionGradOp : FA_Op<"attention_grad", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention, backward";
  let description = [{
    Gradients of `fa.attention` with respect to Q, K and V, given the
    forward's output O, its log-sum-exp LSE and the output gradient dO.
    dK and dV of a KV head sum the contributions of every query head of its
    group. Masks, scale and softcap mean what they mean on `fa.attention`.
    `deterministic` asks for gradients that are bitwise equal run to run:
    a lowering that sums dQ from parallel KV blocks adds their parts in
    the order of the blocks. `seqlens(...)` makes it varlen, as on
    `fa.attention`; gradient rows that belong to no sequence are undefined.
    `grad_lse(%dlse)` adds the gradient of a loss that also reads LSE (its
    shape): since dLSE/dS = P, it folds into the row term of dS,
    dS = P ∘ (dP - (rowsum(dO ∘ O) - dLSE)).

    ```mlir
    %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse causal
        : tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16>,
          tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16>,
          tensor<1x4x128x64xf16>, tensor<1x4x128xf32>
        -> tensor<1x4x128x64xf16>, tensor<1x4x128x64xf16>,
           tensor<1x4x128x64xf16>
    ```
  }];
  let arguments =
      !con((ins FA_Tensor:$query, FA_Tensor:$key, FA_Tensor:$value,
               FA_Tensor:$output, FA_Tensor:$grad_output, FA_F32Tensor:$lse,
               Optional<FA_F32Tensor>:$grad_lse),
           FA_VarlenOperands, FA_ScoreAttrs, (ins UnitAttr:$deterministic));
  let results = (outs FA_Tensor:$grad_query, FA_Tensor:$grad_key,
                      FA_Tensor:$grad_value);
  let assemblyFormat = !strconcat([{
    $query `,` $key `,` $value `,` $output `,` $grad_output `,` $lse
    (`grad_lse` `(` $grad_lse^ `:` type($grad_lse) `)`)?
  }],
                                  FA_VarlenFormat, FA_ScoreAttrsFormat,
                                  [{ (`deterministic` $deterministic^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) `,`
    type($output) `,` type($grad_output) `,` type($lse) `->`
    type($grad_query) `,` type($grad_key) `,` type($grad_value)
  }]);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the attribute, or 1/sqrt(D) when it is absent.
    double getEffectiveScale();
    /// Whether the sequences are packed (the `seqlens` operands).
    bool isVarlen() { return static_cast<bool>(getCuSeqlensQ()); }
  }];
}

//===----------------------------------------------------------------------===//
// Online-softmax form
//===----------------------------------------------------------------------===//

def FA_OnlineAttentionOp : FA_Op<"online_attention", [Pure,
    AttrSizedOperandSegments,
    AllTypesMatch<["acc", "result_acc"]>,
    AllTypesMatch<["max", "result_max"]>,
    AllTypesMatch<["sum", "result_sum"]>]> {
  let summary = "One online-softmax step: fold K/V into running max, sum, acc";
  let description = [{
    Folds the keys and values into the running state of each query row:

        s   = mask(softcap(scale * q kᵀ)) * log2(e)      (base 2)
        m'  = max(m, rowmax(s))
        l'  = 2^(m - m') l + rowsum(2^(s - m'))
        A'  = 2^(m - m') A + 2^(s - m') v

    `max` is kept in base-2 units; `fa.normalize` turns the final state into
    O = A / l and LSE = (m + log2 l) ln 2.

    Rank-4 operands (`[B, H, N, D]`, GQA allowed) are the whole-tensor form
    made from `fa.attention`, varlen (`seqlens(...)`) as it is. Rank-2 operands (`[Br, D]`, `[Bc, D]`) are one
    tile inside the tiling loops; a tile names where it sits,
    `tile(%q_start, %kv_start, %q_len, %kv_len)`: the global row of its first
    query and key and the valid sequence lengths. Keys at or past `kv_len` are
    masked; query rows at or past `q_len` are padding whose results are
    dropped. `unmasked` promises that every key of the tile is in bounds and
    visible to every valid row, so no mask code is needed. `keys_in_bounds`
    promises that the sequence end needs no mask of its own: every key of
    the tile is before `kv_len`, or the band hides the keys past it from
    every valid row. The causal / window band still masks. (The tiler says
    so where the KV length is static and a multiple of the block, and where
    the band's upper edge ends at the last key: causal, or a window's right
    bound 0, where row i < q_len sees keys below
    i + 1 + kv_len - q_len <= kv_len.)

    FP8 (`f8E4M3FN`) operands take `descale(%q_descale, %k_descale)`, which
    multiply the scores: `s = mask(softcap(scale dq dk q kᵀ)) log2(e)` —
    `[B, Hkv]` f32 tensors on whole tensors, one f32 each on a tile (the
    tile's KV head). Descales must be positive. V's descale applies to O,
    on `fa.normalize`.

    `rescale_threshold = τ` (base-2 units, τ >= 0; a tile's attribute)
    raises a row's running max only where the tile's scores exceed it by
    more than τ (FlashAttention 4's conditional rescale):

        m̂  = max(m, rowmax(s)),   m' = m̂ > m + τ ? m̂ : m

    The max is only the exponentials' offset, so O, l and LSE are those of
    the exact step; the terms 2^(s - m') stay at most 2^τ, and where a row's
    max stays, 2^(m - m') = 1 exactly: a kernel may skip multiplying A by it
    (`fagpu-skip-unit-rescales`).
  }];
  let arguments =
      !con((ins FA_Tensor:$query, FA_Tensor:$key, FA_Tensor:$value,
               FA_F32Tensor:$acc, FA_F32Tensor:$max, FA_F32Tensor:$sum,
               Variadic<FA_Descale>:$descales, Variadic<Index>:$tile_position),
           FA_VarlenOperands, FA_ScoreAttrs,
           (ins UnitAttr:$unmasked, UnitAttr:$keys_in_bounds,
               OptionalAttr<F32Attr>:$rescale_threshold));
  let results = (outs FA_F32Tensor:$result_acc, FA_F32Tensor:$result_max,
                      FA_F32Tensor:$result_sum);
  let assemblyFormat = !strconcat([{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
      type($value) `)`
    `outs` `(` $acc `,` $max `,` $sum `:` type($acc) `,` type($max) `,`
      type($sum) `)`
    (`descale` `(` $descales^ `:` type($descales) `)`)?
    (`tile` `(` $tile_position^ `)`)?
  }],
                                  FA_VarlenFormat, FA_ScoreAttrsFormat,
                                  [{ (`unmasked` $unmasked^)?
    (`keys_in_bounds` $keys_in_bounds^)?
    (`rescale_threshold` `=` $rescale_threshold^)? attr-dict }]);
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isTile() { return getQuery().getType().getRank() == 2; }
    /// Whether the sequences are packed (the `seqlens` operands).
    bool isVarlen() { return static_cast<bool>(getCuSeqlensQ()); }
  }];
}

def FA_NormalizeOp : FA_Op<"normalize", [Pure]> {
  let summary = "Final step of online softmax: O = acc / sum, LSE";
  let description = [{
    Turns the running state of `fa.online_attention` into the output
    `O = acc / sum` (cast to the output element type, 0 for a row with an
    empty sum) and the natural-log `LSE = (max + log2(sum)) * ln 2`
    (`-inf` for an empty row). Works on whole tensors and on tiles.
    `descale(%v_descale)` (FP8 values) scales O: `O = v_descale acc / sum`;
    a `[B, Hkv]` f32 tensor on whole tensors (query head `h` takes KV head
    `h / (H / Hkv)`'s), one f32 on a tile.
  }];
  let arguments = (ins FA_F32Tensor:$acc, FA_F32Tensor:$max, FA_F32Tensor:$sum,
      Optional<FA_Descale>:$descale);
  let results = (outs FA_Tensor:$output, FA_F32Tensor:$lse);
  let assemblyFormat = [{
    $acc `,` $max `,` $sum (`descale` `(` $descale^ `:` type($descale) `)`)?
    attr-dict `:` type($acc) `,` type($max) `,` type($sum) `->`
    type($output) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def FA_QuantizeOp : FA_Op<"quantize", [Pure]> {
  let summary = "e4m3 quantization per (batch, head group), optionally after "
                "a random Hadamard rotation";
  let description = [{
    Turns a `[B, H, N, D]` tensor into e4m3 values and the `[B, G]` f32
    descales that `fa.attention`'s `descale(...)` takes (G divides H; heads
    `g H/G ... (g+1) H/G - 1` share block (b, g)): with `y` the input, or
    with `rotate(seed = s)` the input rotated along D,
    `y = x diag(signs) Hd / sqrt(D)` (Hd the Sylvester Hadamard matrix,
    `Hd[i][j] = (-1)^popcount(i & j)`, `signs[i] = hadamardSign(s, i)`, so
    D is a power of two),
    `descale[b, g] = amax / 448` with `amax` the block's largest `|y|`
    (at least 1e-12) and `output = e4m3(clamp(y * (448 / amax), -448,
    448))` rounded to nearest even.

    The rotation is orthogonal: Q and K rotated with the same seed keep
    `Q Kᵀ`, while outliers spread over the head dim, which shrinks the
    quantization error (FlashAttention 3's incoherent processing). V is
    quantized without it (P V would change).
  }];
  let arguments = (ins RankedTensorOf<[F32, F16, BF16]>:$input,
      OptionalAttr<I64Attr>:$rotation_seed);
  let results = (outs RankedTensorOf<[F8E4M3FN]>:$output,
      FA_F32Tensor:$descale);
  let assemblyFormat = [{
    $input (`rotate` `(` `seed` `=` $rotation_seed^ `)`)? attr-dict `:`
    type($input) `->` type($output) `,` type($descale)
  }];
  let extraClassDeclaration = [{
    /// The largest finite e4m3 value, which each block's amax maps to.
    static constexpr double kE4M3Max = 448.0;
    /// The floor of a block's amax (an all-zero block's descale).
    static constexpr double kMinAmax = 1e-12;
    /// The rotation's sign of head-dim index `i` for `seed`: +1 or -1 (the
    /// top bit of a 64-bit mix of both). Every lowering takes its signs
    /// from here, as constants.
    static double hadamardSign(int64_t seed, int64_t i);
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward tile
//===----------------------------------------------------------------------===//

def FA_AttentionGradTileOp : FA_Op<"attention_grad_tile", [Pure,
    AllTypesMatch<["grad_query_acc", "result_grad_query"]>,
    AllTypesMatch<["grad_key_acc", "result_grad_key"]>,
    AllTypesMatch<["grad_value_acc", "result_grad_value"]>]> {
  let summary = "Backward of one (query tile, key tile) pair";
  let description = [{
    Recomputes `P = 2^(s - LSE log2 e)` for a `[Br, Bc]` tile from the saved
    log-sum-exp and accumulates, in f32,

        dV += Pᵀ dO;   dP = dO Vᵀ;   dS = P ∘ (dP - delta)
        dQ += scale dS' K;   dK += scale dS'ᵀ Q

    where `delta = rowsum(dO ∘ O)` and `dS'` is dS chained through the
    softcap's tanh. Position operands and `unmasked` mean what they mean on
    `fa.online_attention`. With `unscaled_grads` dQ and dK accumulate
    without the factor `scale` (`dQ += dS' K`, `dK += dS'ᵀ Q`), which the
    caller applies once to their sums: FlashAttention 3's form, one
    multiply per element of dQ and dK instead of one per element of every
    dS tile. `deterministic` carries the op's: dQ tiles of a Q block are
    added in the order of their KV blocks.
  }];
  let arguments = !con((ins FA_Tensor:$query, FA_Tensor:$key,
                            FA_Tensor:$value, FA_Tensor:$grad_output,
                            FA_F32Tensor:$lse, FA_F32Tensor:$delta,
                            FA_F32Tensor:$grad_query_acc,
                            FA_F32Tensor:$grad_key_acc,
                            FA_F32Tensor:$grad_value_acc,
                            Index:$q_start, Index:$kv_start, Index:$q_len,
                            Index:$kv_len),
                       FA_ScoreAttrs,
                       (ins UnitAttr:$unmasked, UnitAttr:$unscaled_grads,
                            UnitAttr:$deterministic));
  let results = (outs FA_F32Tensor:$result_grad_query,
                      FA_F32Tensor:$result_grad_key,
                      FA_F32Tensor:$result_grad_value);
  let assemblyFormat = !strconcat([{
    `ins` `(` $query `,` $key `,` $value `,` $grad_output `,` $lse `,` $delta
      `:` type($query) `,` type($key) `,` type($value) `,` type($grad_output)
      `,` type($lse) `,` type($delta) `)`
    `outs` `(` $grad_query_acc `,` $grad_key_acc `,` $grad_value_acc `:`
      type($grad_query_acc) `,` type($grad_key_acc) `,`
      type($grad_value_acc) `)`
    `tile` `(` $q_start `,` $kv_start `,` $q_len `,` $kv_len `)`
  }], FA_ScoreAttrsFormat, [{ (`unmasked` $unmasked^)?
    (`unscaled_grads` $unscaled_grads^)?
    (`deterministic` $deterministic^)? attr-dict }]);
  let hasVerifier = 1;
}

#endif // FA_DIALECT_FA_IR_FAOPS_TD
