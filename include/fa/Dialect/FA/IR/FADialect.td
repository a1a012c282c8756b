//===- FADialect.td - FlashMLIR attention dialect ----------*- tablegen -*-===//
//
// The `fa` dialect: attention as first-class ops, from the whole-tensor op a
// user writes down to the tile-level ops that the kernel lowerings consume.
//
//===----------------------------------------------------------------------===//

#ifndef FA_DIALECT_FA_IR_FADIALECT_TD
#define FA_DIALECT_FA_IR_FADIALECT_TD

include "mlir/IR/OpBase.td"

def FA_Dialect : Dialect {
  let name = "fa";
  let cppNamespace = "::mlir::fa";
  let summary = "Scaled dot-product attention, forward and backward";
  let description = [{
    Ops at three levels, each lowered by its own pass:

    * `fa.attention` / `fa.attention_grad`: whole-tensor forward and backward
      attention on `[B, H, N, D]` tensors, with causal masking, a sliding
      window, logit soft-capping, GQA/MQA and FP8 descale operands.
    * `fa.online_attention` + `fa.normalize`: the online-softmax form that
      carries the running row max, row sum and unnormalised accumulator.
    * `fa.online_attention` and `fa.attention_grad_tile` on 2-D tiles inside
      the loops made by the tiling passes; these are decomposed into
      tile-sized `linalg` ops or lowered to GPU fragments.

    All ops have value (tensor) semantics.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

class FA_Op<string mnemonic, list<Trait> traits = []>
    : Op<FA_Dialect, mnemonic, traits>;

#endif // FA_DIALECT_FA_IR_FADIALECT_TD
