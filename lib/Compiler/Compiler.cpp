//===- Compiler.cpp - Attention config -> GPU kernel, in-process ----------===//

#include "fa/Compiler/Compiler.h"

#include "KernelModules.h"
#include "KernelPipeline.h"
#include "LowerKernels.h"
#include "MetadataText.h"

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"
#include "fa/Dialect/FAGPU/Transforms/Passes.h"
#include "fa/Runtime/Limits.h"
#include "fa/Transforms/Passes.h"

// FA_COMPILER_FINGERPRINT: a hash of the compiler's sources, generated at
// build time (lib/Compiler/CMakeLists.txt).
#include "CompilerFingerprint.inc"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/Extensions/AllExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/GPU/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/InlinerInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/MemRef/IR/MemRefMemorySlot.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Extensions/AllExtensions.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/RuntimeOpVerification.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

#include <cfloat>
#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::fa;

const char *mlir::fa::compilerVersion() {
  return "flashmlir-0.1+" FA_COMPILER_FINGERPRINT;
}

namespace {

/// The dialects the pipeline touches, with the interface implementations and
/// LLVM conversion / translation interfaces that registerAllDialects(),
/// registerAllExtensions() and registerAllToLLVMIRTranslations() attach to
/// them. Naming them (instead of registering everything) keeps AMDGPU, SPIR-V
/// and the other targets out of the compiler, which matters for the static
/// JIT build (FA_STATIC_JIT). A pass that needs another dialect or extension
/// must add it here.
void registerCompilerDialects(DialectRegistry &r) {
  r.insert<FADialect, fagpu::FAGPUDialect, affine::AffineDialect,
           arith::ArithDialect, bufferization::BufferizationDialect,
           cf::ControlFlowDialect, DLTIDialect, func::FuncDialect,
           gpu::GPUDialect, index::IndexDialect, linalg::LinalgDialect,
           LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
           nvgpu::NVGPUDialect, NVVM::NVVMDialect, scf::SCFDialect,
           tensor::TensorDialect, ub::UBDialect, vector::VectorDialect>();

  // External models (as registerAllDialects() attaches them).
  affine::registerValueBoundsOpInterfaceExternalModels(r);
  arith::registerBufferDeallocationOpInterfaceExternalModels(r);
  arith::registerBufferizableOpInterfaceExternalModels(r);
  arith::registerBufferViewFlowOpInterfaceExternalModels(r);
  arith::registerValueBoundsOpInterfaceExternalModels(r);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(r);
  builtin::registerCastOpInterfaceExternalModels(r);
  cf::registerBufferizableOpInterfaceExternalModels(r);
  cf::registerBufferDeallocationOpInterfaceExternalModels(r);
  gpu::registerBufferDeallocationOpInterfaceExternalModels(r);
  gpu::registerValueBoundsOpInterfaceExternalModels(r);
  LLVM::registerInlinerInterface(r);
  NVVM::registerInlinerInterface(r);
  linalg::registerAllDialectInterfaceImplementations(r);
  linalg::registerRuntimeVerifiableOpInterfaceExternalModels(r);
  memref::registerAllocationOpInterfaceExternalModels(r);
  memref::registerBufferViewFlowOpInterfaceExternalModels(r);
  memref::registerRuntimeVerifiableOpInterfaceExternalModels(r);
  memref::registerValueBoundsOpInterfaceExternalModels(r);
  memref::registerMemorySlotExternalModels(r);
  scf::registerBufferDeallocationOpInterfaceExternalModels(r);
  scf::registerBufferizableOpInterfaceExternalModels(r);
  scf::registerValueBoundsOpInterfaceExternalModels(r);
  tensor::registerBufferizableOpInterfaceExternalModels(r);
  tensor::registerInferTypeOpInterfaceExternalModels(r);
  tensor::registerRuntimeVerifiableOpInterfaceExternalModels(r);
  tensor::registerSubsetOpInterfaceExternalModels(r);
  tensor::registerTilingInterfaceExternalModels(r);
  tensor::registerValueBoundsOpInterfaceExternalModels(r);
  vector::registerBufferizableOpInterfaceExternalModels(r);
  vector::registerSubsetOpInterfaceExternalModels(r);
  vector::registerValueBoundsOpInterfaceExternalModels(r);
  NVVM::registerNVVMTargetInterfaceExternalModels(r);

  // Conversion-to-LLVM interfaces and dialect extensions (as
  // registerAllExtensions() attaches them).
  arith::registerConvertArithToLLVMInterface(r);
  cf::registerConvertControlFlowToLLVMInterface(r);
  func::registerAllExtensions(r);
  tensor::registerAllExtensions(r);
  registerConvertFuncToLLVMInterface(r);
  index::registerConvertIndexToLLVMInterface(r);
  registerConvertMathToLLVMInterface(r);
  registerConvertMemRefToLLVMInterface(r);
  registerConvertNVVMToLLVMInterface(r);
  ub::registerConvertUBToLLVMInterface(r);
  gpu::registerConvertGpuToLLVMInterface(r);
  NVVM::registerConvertGpuToNVVMInterface(r);
  vector::registerConvertVectorToLLVMInterface(r);

  // Translation to LLVM IR.
  registerBuiltinDialectTranslation(r);
  registerGPUDialectTranslation(r);
  registerLLVMDialectTranslation(r);
  registerNVVMDialectTranslation(r);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(r);
}

DialectRegistry &registry() {
  static DialectRegistry *instance = [] {
    auto *r = new DialectRegistry();
    registerCompilerDialects(*r);
    return r;
  }();
  return *instance;
}

/// The whole-problem tensors of an attention op, named as in its syntax.
SmallVector<std::pair<Value, StringRef>> problemTensors(Operation *op) {
  if (auto fwd = dyn_cast<AttentionOp>(op))
    return {{fwd.getQuery(), "query"},
            {fwd.getKey(), "key"},
            {fwd.getValue(), "value"},
            {fwd.getOutput(), "output"},
            {fwd.getLse(), "lse"}};
  auto bwd = cast<AttentionGradOp>(op);
  return {{bwd.getQuery(), "query"},
          {bwd.getKey(), "key"},
          {bwd.getValue(), "value"},
          {bwd.getOutput(), "output"},
          {bwd.getGradOutput(), "grad_output"},
          {bwd.getLse(), "lse"},
          {bwd.getGradQuery(), "grad_query"},
          {bwd.getGradKey(), "grad_key"},
          {bwd.getGradValue(), "grad_value"}};
}

/// Refuses, located on `op`, a problem the runtime would refuse at load or
/// launch (fa/Runtime/Limits.h): what compiles must also run. Every size is
/// static and bounded here, before the scale, tiles, grids and shared memory
/// read them (a dynamic head dim gave a NaN scale: MlirInputFuzzer).
LogicalResult checkRuntimeLimits(Operation *op) {
  auto grad = dyn_cast<AttentionGradOp>(op);
  for (auto [value, name] : problemTensors(op)) {
    auto type = cast<RankedTensorType>(value.getType()); // FA_Tensor
    int64_t elements = 1;
    for (auto [d, dim] : llvm::enumerate(type.getShape())) {
      // Runtime shapes: the forward's batch and sequence lengths may be the
      // call's (the runtime bounds them per call), and the rows of the
      // backward's packed sequences; nothing else is.
      if (ShapedType::isDynamic(dim)) {
        if (d == 2 || (d == 0 && !(grad && grad.isVarlen())))
          continue;
        return op->emitError()
               << "only the batch and the sequence lengths (the rows of "
                  "packed sequences) may be runtime sizes; "
               << name << " has type " << type;
      }
      if (dim <= 0)
        return op->emitError()
               << "every dimension must be positive (a GPU grid has no empty "
                  "dimension); "
               << name << " has type " << type;
      std::optional<int64_t> product = llvm::checkedMul(elements, dim);
      if (!product || *product > ::fa::rt::kMaxTensorElements)
        return op->emitError()
               << name << " of type " << type << " has more than 2^31-1 ("
               << ::fa::rt::kMaxTensorElements
               << ") elements; the kernels index with 32 bits";
      elements = *product;
    }
  }

  // The verifier took positive finite values; the .meta file carries them as
  // text that must read back, which a subnormal does not.
  auto checkValue = [&](StringRef name, double value) -> LogicalResult {
    if (::fa::rt::isValidScaleValue(value))
      return success();
    return op->emitError() << name << " = " << llvm::formatv("{0:e16}", value)
                           << " is below the smallest normal double ("
                           << llvm::formatv("{0:e16}", DBL_MIN)
                           << "); the runtime refuses it";
  };
  double scale = isa<AttentionOp>(op)
                     ? cast<AttentionOp>(op).getEffectiveScale()
                     : cast<AttentionGradOp>(op).getEffectiveScale();
  std::optional<double> softcap =
      isa<AttentionOp>(op) ? asDouble(cast<AttentionOp>(op).getSoftcap())
                           : asDouble(cast<AttentionGradOp>(op).getSoftcap());
  if (failed(checkValue("scale", scale)) ||
      (softcap && failed(checkValue("softcap", *softcap))))
    return failure();
  return success();
}

} // namespace

llvm::Expected<CompiledKernel>
mlir::fa::compileSource(llvm::StringRef source, llvm::StringRef bufferName,
                        const AttentionConfig &options, EmitKind emit) {
  if (llvm::Error error = checkChip(options.chip))
    return std::move(error);
  MLIRContext context(registry());
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, bufferName), llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagStream);

  // Located one-line diagnostics; the op dump adds nothing for a user.
  context.printOpOnDiagnostic(false);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return compileError("parsing failed", diagnostics);
  // An implicit module is located at line 0; errors about the input as a
  // whole (pass options, nothing to compile) point at its start instead.
  if (auto loc = dyn_cast<FileLineColLoc>(module->getLoc());
      loc && loc.getLine() == 0)
    (*module)->setLoc(FileLineColLoc::get(&context, bufferName, 1, 1));

  // One problem per compile: the metadata describes one kernel set.
  SmallVector<func::FuncOp> problems;
  module->walk([&](func::FuncOp func) {
    if (func.walk([](Operation *op) {
              return isa<AttentionOp, AttentionGradOp>(op)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            })
            .wasInterrupted())
      problems.push_back(func);
  });
  if (problems.size() > 1) {
    problems[1].emitError()
        << "fa-compile compiles one attention function per input; found "
        << problems.size() << " (first: @" << problems[0].getSymName() << ")";
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  Operation *problem = nullptr;
  module->walk([&](Operation *op) {
    if (!isa<AttentionOp, AttentionGradOp>(op))
      return WalkResult::advance();
    problem = op;
    return WalkResult::interrupt();
  });
  // A quantization (no attention): its own kernels.
  SmallVector<QuantizeOp> quantizations;
  module->walk([&](QuantizeOp op) { quantizations.push_back(op); });
  if (!problem && !quantizations.empty())
    return compileQuantizeModule(*module, context, options, emit, diagnostics,
                                 quantizations);
  if (problem && failed(checkRuntimeLimits(problem)))
    return compileError("compiling to a GPU kernel failed", diagnostics);

  // The op decides the direction and, with its head dims, the default block
  // sizes: a backward file compiled without --backward must not get the
  // forward's blocks.
  AttentionConfig effective = options;
  if (problem) {
    effective.backward = isa<AttentionGradOp>(problem);
    auto query = cast<ShapedType>(problem->getOperand(0).getType());
    auto value = cast<ShapedType>(problem->getOperand(2).getType());
    if (query.getRank() == 4 && value.getRank() == 4) {
      effective.headDim = query.getDimSize(3);
      effective.headDimV = value.getDimSize(3);
    }
    Type element = query.getElementType();
    if (element.isBF16() || element.isF16())
      effective.dtype = element.isBF16() ? "bf16" : "f16";
    else if (isa<Float8E4M3FNType>(element))
      effective.dtype = "e4m3";
    if (auto attention = dyn_cast<AttentionOp>(problem)) {
      effective.varlen = attention.isVarlen();
      effective.runtimeShapes =
          llvm::any_of(problemTensors(problem), [](auto tensor) {
            return !cast<ShapedType>(tensor.first.getType()).hasStaticShape();
          });
      if (!effective.runtimeShapes)
        effective.seqKV = attention.getKey().getType().getDimSize(2);
      effective.causal = attention.getCausal();
      // The band decides the default KV block (defaultBlocks).
      if (auto window = attention.getWindow(); window && window->size() == 2)
        effective.window = std::make_pair((*window)[0], (*window)[1]);
      if (auto softcap = attention.getSoftcap())
        effective.softcap = softcap->convertToDouble();
    }
    // The op says whether its backward is deterministic; a flag that asks
    // for what the op does not say is an error, not ignored.
    auto grad = dyn_cast<AttentionGradOp>(problem);
    effective.deterministic = grad && grad.getDeterministic();
    // Packed sequences, or runtime shapes: the backward's rows are the
    // call's.
    if (grad) {
      effective.varlen = grad.isVarlen();
      effective.runtimeShapes =
          llvm::any_of(problemTensors(problem), [](auto tensor) {
            return !cast<ShapedType>(tensor.first.getType()).hasStaticShape();
          });
    }
    if (options.deterministic && !effective.deterministic) {
      problem->emitError()
          << (grad ? "deterministic was asked for, but this fa.attention_grad "
                     "is not marked deterministic"
                   : "deterministic is the backward's; this is a forward");
      return compileError("compiling to a GPU kernel failed", diagnostics);
    }
  }
  // Deterministic sums (dQ's turns) are the WGMMA backward's.
  if (problem && effective.backward && effective.deterministic &&
      !effective.usesWgmmaBackward()) {
    problem->emitError() << "a deterministic backward needs the WGMMA "
                            "backward (sm_90a); this problem gets "
                         << effective.backwardVariantReason();
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  if (problem && effective.backward && effective.forwardVariant != "auto") {
    problem->emitError() << "forward-variant=" << effective.forwardVariant
                         << " is the forward's; this is a backward";
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  if (problem && !effective.backward && effective.forwardVariant == "wgmma" &&
      !effective.usesWgmmaForward()) {
    problem->emitError() << "the WGMMA forward cannot take this problem: "
                         << effective.forwardVariantReason();
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  if (problem && effective.backward && effective.backwardVariant == "wgmma" &&
      !effective.usesWgmmaBackward()) {
    problem->emitError() << "the WGMMA backward cannot take this problem: "
                         << effective.backwardVariantReason();
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  if (problem && effective.fp8Transpose != "auto" && !effective.isFP8()) {
    problem->emitError() << "fp8-transpose=" << effective.fp8Transpose
                         << " is for e4m3 (FP8) inputs, not "
                         << effective.dtype;
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  // dQ by bulk reductions and the TMA producer are the WGMMA backward's:
  // asked for elsewhere, a located error rather than a flag silently
  // ignored.
  for (auto [asked, flag] :
       {std::pair{effective.dqReduction == "bulk", "dq-reduction=bulk"},
        std::pair{effective.backwardProducer == "on", "backward-producer=on"},
        std::pair{effective.transposeScores, "transpose-scores"}}) {
    if (problem && effective.backward && asked &&
        !effective.usesWgmmaBackward()) {
      problem->emitError() << flag
                           << " needs the WGMMA backward, which this problem "
                              "does not get: "
                           << effective.backwardVariantReason();
      return compileError("compiling to a GPU kernel failed", diagnostics);
    }
  }
  if (problem && effective.backward && effective.dqHandoff == "on" &&
      !effective.dqHandoffLimits().empty()) {
    problem->emitError() << "dq-handoff=on cannot be: "
                         << effective.dqHandoffLimits() << " ("
                         << effective.backwardVariantReason() << ")";
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  if (problem && effective.rescaleThreshold > 0 &&
      !effective.usesWgmmaForward()) {
    problem->emitError() << "rescale-threshold is the WGMMA forward's; this "
                            "problem gets "
                         << (effective.backward
                                 ? effective.backwardVariantReason()
                                 : effective.forwardVariantReason());
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  // Packed sequences size their grid by the longest sequence, which the
  // kernel does not take: it cannot count its own tiles.
  if (problem && effective.varlen && effective.persistentBlocks > 0) {
    problem->emitError() << "persistent-blocks: packed sequences (varlen) run "
                            "a block per tile; a persistent grid takes "
                            "static or runtime shapes";
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  // FP8 runs on the WGMMA forward only (e4m3 tensor-core operands).
  if (problem && effective.isFP8() && !effective.usesWgmmaForward()) {
    problem->emitError() << "FP8 (e4m3) attention runs on the WGMMA forward "
                            "(sm_90a, head dims 128 or 256) only; this one "
                            "would take "
                         << effective.forwardVariantReason();
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  if (problem && std::getenv("FLASHMLIR_LOG"))
    llvm::errs() << "flashmlir: "
                 << (effective.backward
                         ? "backward on " + effective.backwardVariantReason()
                         : "forward on " + effective.forwardVariantReason())
                 << "\n";

  bool hasKernels = false;
  module->walk([&](gpu::GPUModuleOp) { hasKernels = true; });
  if (problems.empty() && hasKernels)
    return compileKernelModule(*module, context, options, emit, diagnostics);

  PassManager toKernel(&context);
  buildKernelPipeline(toKernel, effective, options.rowsPerWarp);
  if (failed(toKernel.run(*module)))
    return compileError("compiling to a GPU kernel failed", diagnostics);

  llvm::StringMap<gpu::GPUFuncOp> kernels = kernelsByKind(*module);
  if (!kernels.count("forward") && !kernels.count("backward")) {
    // Located like every other input error: on the op that produced no
    // kernel, else on the module (the input's 1:1 for an implicit one).
    (problem ? problem : module->getOperation())->emitError()
        << "no fa.attention or fa.attention_grad to compile in " << bufferName;
    return compileError("compiling to a GPU kernel failed", diagnostics);
  }
  // The WGMMA kernels are built, and described, for sm_90a.
  AttentionConfig target = effective;
  target.chip = effective.targetChip();
  CompiledKernel result;
  FailureOr<std::string> metadata = kernelMetadata(kernels, target);
  if (failed(metadata))
    return compileError("describing the kernel failed", diagnostics);
  result.metadata = std::move(*metadata);

  llvm::Expected<std::string> payload =
      lowerKernels(*module, context, target, emit, diagnostics);
  if (!payload)
    return payload.takeError();
  result.payload = std::move(*payload);
  return result;
}

llvm::Expected<CompiledKernel>
mlir::fa::compileAttention(const AttentionConfig &asked, EmitKind emit) {
  // Packed sequences have the call's lengths.
  AttentionConfig config = asked;
  // The entry is pasted into the generated MLIR: only a plain identifier
  // keeps it one symbol name.
  if (!isValidEntryName(config.entry))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "invalid kernel name '%s': expected an identifier "
        "([A-Za-z_][A-Za-z0-9_]*)",
        config.entry.c_str());
  if (config.quantize) {
    if (config.dtype != "bf16" && config.dtype != "f16")
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "unsupported dtype '%s' to quantize: bf16 or f16",
          config.dtype.c_str());
    for (int64_t dim : {config.batch, config.headsQ, config.headsKV,
                        config.seqQ, config.headDim})
      if (dim <= 0)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "every dimension must be positive (batch, heads, groups, "
            "sequence length, head dim)");
    return compileSource(configToMLIR(config), "<config>", config, emit);
  }
  config.runtimeShapes |= config.varlen;
  if (config.rescaleThreshold != -1 &&
      !(std::isfinite(config.rescaleThreshold) && config.rescaleThreshold >= 0))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "rescale threshold %g: -1 (the compiler's choice) or a finite "
        "number >= 0",
        config.rescaleThreshold);
  if (config.dtype != "bf16" && config.dtype != "f16" && !config.isFP8())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unsupported dtype '%s': the GPU kernels take bf16, f16 or e4m3",
        config.dtype.c_str());
  if (config.isFP8() && config.outDtype != "bf16" && config.outDtype != "f16")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unsupported output dtype '%s' for e4m3 inputs: bf16 or f16",
        config.outDtype.c_str());
  if (config.isFP8() && (config.backward || config.varlen))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "e4m3 (FP8) inputs take a dense forward only: %s",
        config.backward ? "no FP8 backward yet" : "no FP8 packed sequences");
  SmallVector<int64_t> dims = {config.headsQ, config.headsKV, config.headDim,
                               config.headDimV};
  // Runtime shapes ignore batch and lengths (the call's).
  if (!config.runtimeShapes)
    dims.append({config.batch, config.seqQ, config.seqKV});
  for (int64_t dim : dims)
    if (dim <= 0)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "every dimension must be positive (batch, heads, sequence "
          "lengths, head dims)");
  return compileSource(configToMLIR(config), "<config>", config, emit);
}
