//===- FAOps.h - FlashMLIR attention ops ------------------------*- C++ -*-===//

#ifndef FA_DIALECT_FA_IR_FAOPS_H
#define FA_DIALECT_FA_IR_FAOPS_H

#include "fa/Dialect/FA/IR/FADialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.h.inc"

namespace mlir {
namespace fa {
/// The value of an optional F64Attr as a double.
inline std::optional<double> asDouble(std::optional<llvm::APFloat> value) {
  if (!value)
    return std::nullopt;
  return value->convertToDouble();
}
} // namespace fa
} // namespace mlir

#endif // FA_DIALECT_FA_IR_FAOPS_H
