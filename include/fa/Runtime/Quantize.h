//===- Quantize.h - Launching fa.quantize's kernels -------------*- C++ -*-===//
//
// quantize() runs a quantization kernel set (kind = quantize: fa.quantize
// compiled by fa-convert-quantize-to-gpu): x [batch, heads, seq, head_dim]
// in bf16 or f16 to e4m3 values and one f32 descale per (batch, group),
// after the kernel's Hadamard rotation if it has one. Validation is host
// code only: a bad call returns an error and launches nothing.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_QUANTIZE_H
#define FA_RUNTIME_QUANTIZE_H

#include "fa/Runtime/Kernel.h"
#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/Status.h"

#include <cuda.h>

#include <cstddef>

namespace fa::rt {

/// One quantization's tensors, dense row-major: x [batch, heads, seq,
/// head_dim] of the kernel's dtype, out the same shape in e4m3 (one byte
/// each), descale [batch, groups] f32.
struct QuantizeArgs {
  CUdeviceptr x = 0, out = 0, descale = 0;
};

/// Bytes of the workspace a call of `m` needs (the i32 [batch, groups]
/// amax, which quantize() zeroes).
size_t quantizeWorkspaceBytes(const KernelMetadata &m);

/// Checks a call without touching the driver: a quantization kernel,
/// non-null pointers, x and out 16-byte aligned, descale and the workspace
/// 4-byte aligned, outputs that overlap no other tensor.
Status validateQuantize(const KernelMetadata &m, const QuantizeArgs &args,
                        CUdeviceptr workspace);

/// Validates, then on `stream`: zeroes the workspace, launches the amax
/// kernel, then the scale kernel (asynchronously).
Status quantize(const Kernel &kernel, const QuantizeArgs &args,
                CUdeviceptr workspace, CUstream stream);

} // namespace fa::rt

#endif // FA_RUNTIME_QUANTIZE_H
