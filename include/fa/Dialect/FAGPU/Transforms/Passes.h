//===- Passes.h - Passes on the GPU tile level ------------------*- C++ -*-===//

#ifndef FA_DIALECT_FAGPU_TRANSFORMS_PASSES_H
#define FA_DIALECT_FAGPU_TRANSFORMS_PASSES_H

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace fagpu {

#define GEN_PASS_DECL
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fa/Dialect/FAGPU/Transforms/Passes.h.inc"

} // namespace fagpu
} // namespace mlir

#endif // FA_DIALECT_FAGPU_TRANSFORMS_PASSES_H
