//===- PassRuntimeSizes.cpp - Runtime sizes as kernel arguments -----------===//
//
// A bare-pointer kernel argument carries no sizes; runtime shapes need them.
// Passes.td has the contract.
//
//===----------------------------------------------------------------------===//

#include "fa/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace fa {
#define GEN_PASS_DEF_PASSRUNTIMESIZES
#include "fa/Conversion/Passes.h.inc"
} // namespace fa
} // namespace mlir

using namespace mlir;

SmallVector<std::pair<unsigned, int64_t>>
fa::runtimeSizeOperands(TypeRange argumentTypes) {
  SmallVector<std::pair<unsigned, int64_t>> sizes;
  for (auto [index, type] : llvm::enumerate(argumentTypes))
    if (auto memref = dyn_cast<MemRefType>(type))
      for (int64_t d = 0; d < memref.getRank(); ++d)
        if (memref.isDynamicDim(d))
          sizes.push_back({unsigned(index), d});
  return sizes;
}

namespace {

struct PassRuntimeSizesPass
    : fa::impl::PassRuntimeSizesBase<PassRuntimeSizesPass> {
  void runOnOperation() override {
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>())
      if (kernel.isKernel() && failed(rewrite(kernel)))
        return signalPassFailure();
  }

  LogicalResult rewrite(gpu::GPUFuncOp kernel) {
    MLIRContext *ctx = kernel.getContext();
    Location loc = kernel.getLoc();
    SmallVector<std::pair<unsigned, int64_t>> dynamicSizes =
        fa::runtimeSizeOperands(kernel.getArgumentTypes());
    SmallVector<unsigned> flattened;
    for (auto [arg, dim] : dynamicSizes) {
      if (!flattened.empty() && flattened.back() == arg)
        continue;
      auto type = cast<MemRefType>(kernel.getArgumentTypes()[arg]);
      if (!type.getLayout().isIdentity())
        return kernel.emitError()
               << "fa-pass-runtime-sizes: argument #" << arg
               << " has runtime sizes and a non-identity layout: " << type;
      flattened.push_back(arg);
    }
    if (flattened.empty())
      return success();

    // The sizes, appended: one argument per size, or per distinct name.
    SmallVector<std::string> names;
    if (auto named =
            kernel->getAttrOfType<ArrayAttr>(fa::kRuntimeSizeNamesAttr)) {
      for (Attribute name : named)
        if (auto text = dyn_cast<StringAttr>(name))
          names.push_back(text.str());
      if (names.size() != dynamicSizes.size())
        return kernel.emitError()
               << "fa-pass-runtime-sizes: " << fa::kRuntimeSizeNamesAttr
               << " must name each of the " << dynamicSizes.size()
               << " runtime sizes with a string";
    }
    llvm::StringMap<Value> byName;
    SmallVector<Value> sizeArgs;
    for (size_t i = 0; i < dynamicSizes.size(); ++i) {
      if (!names.empty())
        if (Value same = byName.lookup(names[i])) {
          sizeArgs.push_back(same);
          continue;
        }
      unsigned index = kernel.getNumArguments();
      if (failed(kernel.insertArgument(index, IndexType::get(ctx),
                                       DictionaryAttr::get(ctx), loc)))
        return failure();
      sizeArgs.push_back(kernel.getArgument(index));
      if (!names.empty())
        byName[names[i]] = sizeArgs.back();
    }
    SmallVector<int64_t> record;
    for (auto [arg, dim] : dynamicSizes) {
      record.push_back(arg);
      record.push_back(dim);
    }
    kernel->setAttr(fa::kRuntimeSizesAttr, DenseI64ArrayAttr::get(ctx, record));

    // Each flattened argument: the pointer as memref<?xT>, the view rebuilt.
    OpBuilder b = OpBuilder::atBlockBegin(&kernel.getBody().front());
    auto next = sizeArgs.begin();
    for (unsigned index : flattened) {
      BlockArgument arg = kernel.getArgument(index);
      auto type = cast<MemRefType>(arg.getType());
      SmallVector<OpFoldResult> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        sizes.push_back(type.isDynamicDim(d)
                            ? OpFoldResult(*next++)
                            : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
      // Row-major strides: the product of the inner sizes (attributes while
      // those are static, as the view's type has them).
      SmallVector<OpFoldResult> strides(type.getRank());
      OpFoldResult stride = b.getIndexAttr(1);
      for (int64_t d = type.getRank() - 1; d >= 0; --d) {
        strides[d] = stride;
        if (d == 0)
          break;
        std::optional<int64_t> inner = getConstantIntValue(stride);
        std::optional<int64_t> size = getConstantIntValue(sizes[d]);
        if (inner && size)
          stride = b.getIndexAttr(*inner * *size);
        else if (inner == 1)
          stride = sizes[d];
        else {
          Value size = getValueOrCreateConstantIndexOp(b, loc, sizes[d]);
          Value inner = getValueOrCreateConstantIndexOp(b, loc, stride);
          stride = OpFoldResult(arith::MulIOp::create(b, loc, size, inner));
        }
      }
      // The bare-pointer convention takes static shapes only: the pointer
      // is typed as one element; the view below is what the body reads.
      auto flat =
          MemRefType::get({1}, type.getElementType(),
                          MemRefLayoutAttrInterface(), type.getMemorySpace());
      arg.setType(flat);
      auto view = memref::ReinterpretCastOp::create(
          b, loc, type, arg, b.getIndexAttr(0), sizes, strides);
      arg.replaceAllUsesExcept(view.getResult(), view);
    }
    SmallVector<Type> inputs(kernel.getBody().front().getArgumentTypes());
    kernel.setFunctionType(FunctionType::get(ctx, inputs, {}));
    return success();
  }
};

} // namespace
