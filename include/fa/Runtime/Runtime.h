//===- Runtime.h - FlashMLIR GPU runtime ------------------------*- C++ -*-===//
//
// The host side of FlashMLIR's GPU kernels: metadata parsing, the CUDA driver
// (loaded with dlopen, never linked), module/kernel loading, a kernel cache
// and validated attention launches. Plain C++17, no MLIR/LLVM, no exceptions;
// link the FARuntime library.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_RUNTIME_H
#define FA_RUNTIME_RUNTIME_H

#include "fa/Runtime/Attention.h"
#include "fa/Runtime/Driver.h"
#include "fa/Runtime/FloatConvert.h"
#include "fa/Runtime/Kernel.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Runtime/KernelParams.h"
#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/Quantize.h"
#include "fa/Runtime/Sha256.h"
#include "fa/Runtime/Status.h"
#include "fa/Runtime/TensorMap.h"

#endif // FA_RUNTIME_RUNTIME_H
