//===- ApproximateMath.h - f32 transcendentals as GPU approximations -*- C++
//-*-===//
//
// The kernels' exp2, log2 and tanh are the hardware approximations
// (ex2.approx.ftz, lg2.approx, tanh.approx), emitted as LLVM intrinsic calls:
// convert-gpu-to-nvvm turns math ops into libdevice calls, which the
// kernels do not need, but leaves intrinsic calls alone. One definition for
// the mma.sync emitters and the GPU tile level's lowering.
//
//===----------------------------------------------------------------------===//

#ifndef FA_CONVERSION_APPROXIMATEMATH_H
#define FA_CONVERSION_APPROXIMATEMATH_H

#include "mlir/IR/Builders.h"

namespace mlir {
namespace fa {

enum class ApproximateFn { Exp2, Log2, Tanh };

/// fn(x) for an f32 `x`.
Value emitApproximateMath(OpBuilder &b, Location loc, ApproximateFn fn,
                          Value x);

/// 2^x for an f32 `x` on the FMA/ALU pipes, without the MUFU unit: 2^j * p(f)
/// with j = floor(x), f = x - j and p a cubic (relative error below 1e-4),
/// the exponent added to p's bits; exactly 0 for x below -127 (and -inf).
Value emitExp2OnFma(OpBuilder &b, Location loc, Value x);

} // namespace fa
} // namespace mlir

#endif // FA_CONVERSION_APPROXIMATEMATH_H
