//===- HostJit.cpp - Compile and run FlashMLIR modules on the host --------===//

#include "HostJit.h"

#include "fa/Dialect/FA/IR/FADialect.h"
#include "fa/Transforms/Passes.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <cstring>
#include <mutex>
#include <vector>

using namespace mlir;

namespace {

/// The runtime helper that memref-to-LLVM lowering calls for a memref.copy
/// whose operands are not both contiguous (e.g. copying a tile into a strided
/// subview). Upstream ships it in libmlir_c_runner_utils.so, which links
/// libMLIR.so; this project links MLIR statically, and loading a second copy
/// of MLIR into the process is not safe, so the JIT gets this definition with
/// the same C ABI:
///   void memrefCopy(int64_t elemSize, UnrankedMemRefType<char> *src,
///                   UnrankedMemRefType<char> *dst)
/// Source and destination have the same shape and never overlap.
extern "C" void faJitMemrefCopy(int64_t elemSize,
                                ::UnrankedMemRefType<char> *srcArg,
                                ::UnrankedMemRefType<char> *dstArg) {
  DynamicMemRefType<char> src(*srcArg);
  DynamicMemRefType<char> dst(*dstArg);
  int64_t rank = src.rank;
  for (int64_t d = 0; d < rank; ++d)
    if (src.sizes[d] == 0)
      return;
  char *srcPtr = src.data + src.offset * elemSize;
  char *dstPtr = dst.data + dst.offset * elemSize;
  if (rank == 0) {
    std::memcpy(dstPtr, srcPtr, elemSize);
    return;
  }
  // Odometer over all indices but the last; the innermost dimension is copied
  // in one memcpy when both sides are unit-strided there.
  std::vector<int64_t> index(rank, 0);
  int64_t inner = src.sizes[rank - 1];
  bool innerContiguous =
      src.strides[rank - 1] == 1 && dst.strides[rank - 1] == 1;
  while (true) {
    int64_t srcOff = 0, dstOff = 0;
    for (int64_t d = 0; d < rank - 1; ++d) {
      srcOff += index[d] * src.strides[d];
      dstOff += index[d] * dst.strides[d];
    }
    if (innerContiguous) {
      std::memcpy(dstPtr + dstOff * elemSize, srcPtr + srcOff * elemSize,
                  inner * elemSize);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(dstPtr + (dstOff + i * dst.strides[rank - 1]) * elemSize,
                    srcPtr + (srcOff + i * src.strides[rank - 1]) * elemSize,
                    elemSize);
    }
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < src.sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// An MLIR context with everything the pipelines and the LLVM IR translation
/// need, collecting diagnostics into a string instead of printing them.
class CompilerContext {
public:
  CompilerContext() : context(makeRegistry()) {
    context.disableMultithreading();
    context.loadDialect<mlir::fa::FADialect>();
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(diagnostics);
          os << diag.getLocation() << ": ";
          switch (diag.getSeverity()) {
          case DiagnosticSeverity::Error:
            os << "error: ";
            break;
          case DiagnosticSeverity::Warning:
            os << "warning: ";
            break;
          case DiagnosticSeverity::Note:
            os << "note: ";
            break;
          case DiagnosticSeverity::Remark:
            os << "remark: ";
            break;
          }
          os << diag << "\n";
          for (Diagnostic &note : diag.getNotes())
            os << "  " << note.getLocation() << ": note: " << note << "\n";
          return success();
        });
  }

  MLIRContext &get() { return context; }

  llvm::Error error(const llvm::Twine &what) {
    std::string message = what.str();
    if (!diagnostics.empty())
      message += ":\n" + diagnostics;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  }

  /// Parses and lowers `source` to the LLVM dialect.
  llvm::Expected<OwningOpRef<ModuleOp>>
  lower(llvm::StringRef source, const ::fa::hostjit::CompileOptions &options) {
    ParserConfig config(&context);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, config, "fa-jit-input");
    if (!module)
      return error("failed to parse the input module");

    PassManager pm(&context);
    mlir::fa::TilingPipelineOptions tiling;
    tiling.blockQ = options.blockQ;
    tiling.blockKV = options.blockKV;
    tiling.scaleGradsOnce = options.scaleGradsOnce;
    tiling.rescaleThreshold = options.rescaleThreshold;
    mlir::fa::buildAttentionTilingPipeline(pm, tiling);
    mlir::fa::buildHostLoweringPipeline(pm);
    if (failed(pm.run(*module)))
      return error(llvm::Twine("the pass pipeline failed (block-q=") +
                   llvm::Twine(options.blockQ) +
                   ", block-kv=" + llvm::Twine(options.blockKV) + ")");
    return std::move(module);
  }

private:
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registry.insert<mlir::fa::FADialect>();
    return registry;
  }

  MLIRContext context;
  std::string diagnostics;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
};

} // namespace

namespace fa::hostjit {
using namespace mlir;

void CInterfaceFunction::operator()(llvm::ArrayRef<void *> args) const {
  // The packed wrapper takes one pointer per argument, pointing at the
  // argument's value; C-interface arguments are themselves pointers.
  llvm::SmallVector<void *> slots(args.begin(), args.end());
  llvm::SmallVector<void *> packedArgs;
  for (void *&slot : slots)
    packedArgs.push_back(&slot);
  packed(packedArgs.data());
}

HostModule::HostModule(std::unique_ptr<ExecutionEngine> engine)
    : engine(std::move(engine)) {}

HostModule::~HostModule() = default;

llvm::Expected<std::string> lowerToLLVMDialect(llvm::StringRef source,
                                               const CompileOptions &options) {
  CompilerContext context;
  auto module = context.lower(source, options);
  if (!module)
    return module.takeError();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os);
  return text;
}

llvm::Expected<std::unique_ptr<HostModule>>
HostModule::compile(llvm::StringRef source, const CompileOptions &options) {
  initializeNativeTarget();
  CompilerContext context;
  auto module = context.lower(source, options);
  if (!module)
    return module.takeError();

  // Host CPU and features, so that the vectorizer may use them.
  auto tmBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!tmBuilder)
    return tmBuilder.takeError();
  llvm::CodeGenOptLevel codeGenLevel =
      options.optLevel == 0   ? llvm::CodeGenOptLevel::None
      : options.optLevel == 1 ? llvm::CodeGenOptLevel::Less
      : options.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                              : llvm::CodeGenOptLevel::Aggressive;
  tmBuilder->setCodeGenOptLevel(codeGenLevel);
  auto tm = tmBuilder->createTargetMachine();
  if (!tm)
    return tm.takeError();
  // The transformer keeps a pointer to the target machine, which the engine
  // takes over; both live until create() returns.
  llvm::TargetMachine *tmPtr = tm->get();
  std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(options.optLevel, /*sizeLevel=*/0, tmPtr);

  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = codeGenLevel;
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;
  auto engine =
      ExecutionEngine::create(**module, engineOptions, std::move(*tm));
  if (!engine)
    return llvm::joinErrors(context.error("failed to create the JIT"),
                            engine.takeError());

  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("memrefCopy")] = {
        llvm::orc::ExecutorAddr::fromPtr(&faJitMemrefCopy),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  return std::unique_ptr<HostModule>(new HostModule(std::move(*engine)));
}

llvm::Expected<CInterfaceFunction>
HostModule::lookup(llvm::StringRef name) const {
  std::string cName = ("_mlir_ciface_" + name).str();
  auto packed = engine->lookupPacked(cName);
  if (!packed)
    return llvm::joinErrors(
        llvm::createStringError(llvm::inconvertibleErrorCode(),
                                "no function '" + cName +
                                    "' in the JIT module (does '" + name +
                                    "' carry llvm.emit_c_interface?)"),
        packed.takeError());
  return CInterfaceFunction(*packed, cName);
}

} // namespace fa::hostjit
