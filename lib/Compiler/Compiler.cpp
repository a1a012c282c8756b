//===- Compiler.cpp - Attention config -> GPU kernel, in-process ----------===//

#include "fa/Compiler/Compiler.h"

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fa;

const char *mlir::fa::compilerVersion() { return "flashmlir-0.1-mma.sync"; }

std::string AttentionConfig::key() const {
  return llvm::formatv(
      "{0}:b{1}:h{2}/{3}:n{4}/{5}:d{6}/{7}:s{8}:c{9}:w{10},{11}:cap{12}:"
      "t{13}x{14}r{18}:{15}{16}:{17}",
      dtype, batch, headsQ, headsKV, seqQ, seqKV, headDim, headDimV,
      scale ? llvm::formatv("{0:e16}", *scale).str() : "default", causal,
      window ? window->first : -2, window ? window->second : -2,
      softcap ? llvm::formatv("{0:e16}", *softcap).str() : "none", blockQ,
      blockKV, chip, features, entry, rowsPerWarp);
}

std::string mlir::fa::configToMLIR(const AttentionConfig &c) {
  auto tensor = [&](int64_t heads, int64_t seq, int64_t dim) {
    return llvm::formatv("tensor<{0}x{1}x{2}x{3}x{4}>", c.batch, heads, seq,
                         dim, c.dtype)
        .str();
  };
  std::string q = tensor(c.headsQ, c.seqQ, c.headDim);
  std::string k = tensor(c.headsKV, c.seqKV, c.headDim);
  std::string v = tensor(c.headsKV, c.seqKV, c.headDimV);
  std::string o = tensor(c.headsQ, c.seqQ, c.headDimV);
  std::string lse =
      llvm::formatv("tensor<{0}x{1}x{2}xf32>", c.batch, c.headsQ, c.seqQ);
  std::string attrs;
  if (c.scale)
    attrs += llvm::formatv(" scale = {0:e16}", *c.scale);
  if (c.causal)
    attrs += " causal";
  if (c.window)
    attrs += llvm::formatv(" window [{0}, {1}]", c.window->first,
                           c.window->second);
  if (c.softcap)
    attrs += llvm::formatv(" softcap = {0:e16}", *c.softcap);
  return llvm::formatv(
      "func.func @{0}(%q: {1}, %k: {2}, %v: {3}) -> ({4}, {5}) {{\n"
      "  %o, %lse = fa.attention %q, %k, %v{6} : {1}, {2}, {3} -> {4}, {5}\n"
      "  return %o, %lse : {4}, {5}\n}\n",
      c.entry, q, k, v, o, lse, attrs);
}

namespace {

DialectRegistry &registry() {
  static DialectRegistry *instance = [] {
    auto *r = new DialectRegistry();
    registerAllDialects(*r);
    registerAllExtensions(*r);
    registerAllToLLVMIRTranslations(*r);
    r->insert<FADialect>();
    return r;
  }();
  return *instance;
}

llvm::Error compileError(const Twine &what, StringRef diagnostics) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      (what + (diagnostics.empty() ? "" : ":\n") + diagnostics).str());
}

/// `key = value` lines for the runtime, from the kernel's attributes.
std::string kernelMetadata(gpu::GPUFuncOp kernel,
                           const AttentionConfig &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto shape = [&](unsigned arg) {
    return cast<MemRefType>(kernel.getArgumentTypes()[arg]).getShape();
  };
  auto ints = [&](StringRef name) {
    return kernel->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef();
  };
  Type elt = cast<MemRefType>(kernel.getArgumentTypes()[0]).getElementType();
  auto window = kernel->getAttrOfType<DenseI64ArrayAttr>("fa.window");
  auto softcap = kernel->getAttrOfType<FloatAttr>("fa.softcap");
  os << "kind = " << kernel->getAttrOfType<StringAttr>("fa.kind").getValue()
     << "\nentry = " << kernel.getName() << "\nchip = " << options.chip
     << "\ndtype = " << (elt.isF16() ? "f16" : "bf16")
     << "\nbatch = " << shape(0)[0] << "\nheads_q = " << shape(0)[1]
     << "\nheads_kv = " << shape(1)[1] << "\nseq_q = " << shape(0)[2]
     << "\nseq_kv = " << shape(1)[2] << "\nhead_dim = " << shape(0)[3]
     << "\nhead_dim_v = " << shape(2)[3] << "\nscale = "
     << llvm::formatv("{0:e16}",
                      kernel->getAttrOfType<FloatAttr>("fa.scale")
                          .getValueAsDouble())
     << "\ncausal = " << (kernel->hasAttr("fa.causal") ? 1 : 0)
     << "\nwindow_left = " << (window ? window[0] : -1)
     << "\nwindow_right = " << (window ? window[1] : -1) << "\nsoftcap = "
     << llvm::formatv("{0:e16}", softcap ? softcap.getValueAsDouble() : 0.0)
     << "\nblock_q = "
     << kernel->getAttrOfType<IntegerAttr>("fa.block_q").getInt()
     << "\nblock_kv = "
     << kernel->getAttrOfType<IntegerAttr>("fa.block_kv").getInt()
     << "\nrows_per_warp = "
     << kernel->getAttrOfType<IntegerAttr>("fa.rows_per_warp").getInt()
     << "\ngrid = " << llvm::join(llvm::map_range(ints("fa.grid"),
                                                  [](int64_t v) {
                                                    return std::to_string(v);
                                                  }),
                                  ",")
     << "\nblock = "
     << llvm::join(llvm::map_range(ints("fa.block"),
                                   [](int64_t v) { return std::to_string(v); }),
                   ",")
     << "\nshared_bytes = "
     << kernel->getAttrOfType<IntegerAttr>("fa.shared_bytes").getInt()
     << "\nargs = q,k,v,o,lse\ncompiler = " << compilerVersion() << "\n";
  return text;
}

} // namespace

llvm::Expected<CompiledKernel>
mlir::fa::compileSource(llvm::StringRef source, llvm::StringRef bufferName,
                        const AttentionConfig &options, EmitKind emit) {
  MLIRContext context(registry());
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, bufferName), llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagStream);

  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return compileError("parsing failed", diagnostics);

  PassManager toKernel(&context);
  toKernel.addPass(createConvertToOnlineAttention());
  toKernel.addPass(createTileAttention({options.blockQ, options.blockKV}));
  toKernel.addPass(createConvertTiledAttentionToGPU({options.rowsPerWarp}));
  toKernel.addPass(createCanonicalizerPass());
  toKernel.addPass(createCSEPass());
  if (failed(toKernel.run(*module)))
    return compileError("compiling to a GPU kernel failed", diagnostics);

  gpu::GPUFuncOp kernel;
  module->walk([&](gpu::GPUFuncOp func) {
    if (func->hasAttr("fa.kind"))
      kernel = func;
  });
  if (!kernel)
    return compileError("no fa.attention to compile in " + bufferName.str(), "");
  CompiledKernel result;
  result.metadata = kernelMetadata(kernel, options);

  if (emit == EmitKind::MLIR) {
    llvm::raw_string_ostream os(result.payload);
    module->print(os);
    return result;
  }

  PassManager toBinary(&context);
  GPULoweringOptions lowering;
  lowering.chip = options.chip;
  lowering.features = options.features;
  lowering.format = emit == EmitKind::PTX     ? "isa"
                    : emit == EmitKind::Cubin ? "bin"
                                              : "";
  buildGPULoweringPipeline(toBinary, lowering);
  if (failed(toBinary.run(*module)))
    return compileError("lowering the kernel to " + lowering.format + " failed",
                   diagnostics);

  if (emit == EmitKind::LLVM) {
    gpu::GPUModuleOp gpuModule;
    module->walk([&](gpu::GPUModuleOp op) { gpuModule = op; });
    OwningOpRef<ModuleOp> kernels = ModuleOp::create(gpuModule.getLoc());
    OpBuilder b(kernels->getBodyRegion());
    for (Operation &op : gpuModule.getBody()->without_terminator())
      b.clone(op);
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(*kernels, llvmContext, "fa_kernels");
    if (!llvmModule)
      return compileError("translating the kernel to LLVM IR failed", diagnostics);
    llvm::raw_string_ostream os(result.payload);
    llvmModule->print(os, nullptr);
    return result;
  }

  gpu::BinaryOp binary;
  module->walk([&](gpu::BinaryOp op) { binary = op; });
  if (!binary || binary.getObjects().empty())
    return compileError("no kernel binary was produced", diagnostics);
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  result.payload = object.getObject().getValue().str();
  return result;
}

llvm::Expected<CompiledKernel>
mlir::fa::compileAttention(const AttentionConfig &config, EmitKind emit) {
  if (config.dtype != "bf16" && config.dtype != "f16")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "unsupported dtype '%s': the GPU kernels take bf16 or f16",
        config.dtype.c_str());
  for (int64_t dim : {config.batch, config.headsQ, config.headsKV,
                      config.seqQ, config.seqKV, config.headDim,
                      config.headDimV})
    if (dim <= 0)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "every dimension must be positive (batch, heads, sequence "
          "lengths, head dims)");
  return compileSource(configToMLIR(config), "<config>",
                       config, emit);
}
