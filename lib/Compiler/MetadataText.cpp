//===- MetadataText.cpp - The .meta text of a compiled problem ------------===//
//
// What the runtime needs to launch the kernels a compile produced, read off
// the kernels' attributes and argument types (docs/runtime.md).
//
//===----------------------------------------------------------------------===//

#include "MetadataText.h"

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fa;

namespace {

std::string joinInts(ArrayRef<int64_t> values) {
  return llvm::join(
      llvm::map_range(values, [](int64_t v) { return std::to_string(v); }),
      ",");
}

/// Launch keys of one kernel: entry, grid, block, shared bytes, arguments,
/// each name prefixed by `prefix` ("" for the main kernel). A grid with a
/// runtime size is the call's (runtime shapes) and not written.
void launchKeys(llvm::raw_ostream &os, gpu::GPUFuncOp kernel, StringRef prefix,
                StringRef args) {
  ArrayRef<int64_t> grid =
      kernel->getAttrOfType<DenseI64ArrayAttr>("fa.grid").asArrayRef();
  os << prefix << "entry = " << kernel.getName() << "\n";
  if (!llvm::is_contained(grid, ShapedType::kDynamic))
    os << prefix << "grid = " << joinInts(grid) << "\n";
  os << prefix << "block = "
     << joinInts(
            kernel->getAttrOfType<DenseI64ArrayAttr>("fa.block").asArrayRef())
     << "\n"
     << prefix << "shared_bytes = "
     << kernel->getAttrOfType<IntegerAttr>("fa.shared_bytes").getInt() << "\n"
     << prefix << "args = " << args << "\n";
}

/// Whether `kernel` takes packed sequences: cu_seqlens_q and cu_seqlens_k
/// (1-D i32) at arguments `first` and `first + 1`, after the tensors.
bool takesSequenceOffsets(gpu::GPUFuncOp kernel, unsigned first) {
  TypeRange types = kernel.getArgumentTypes();
  auto offsets = [&](unsigned i) {
    auto type = i < types.size() ? dyn_cast<MemRefType>(types[i]) : nullptr;
    return type && type.getRank() == 1 && type.getElementType().isInteger(32);
  };
  return offsets(first) && offsets(first + 1);
}

/// A kernel's size parameters, named for the runtime: the runtime sizes
/// fa-pass-runtime-sizes will append, each the batch (dim 0) or a sequence
/// length (dim 2 of a [B, H, N, D] tensor or a [B, H, N] row statistic:
/// seq_kv of k, v, dk and dv, seq_q of the rest), or the sequences + 1
/// offsets of cu_seqlens. `names` are the kernel's arguments. Empty for a
/// static kernel; an error for a dynamic head count or head dim, which no
/// call supplies.
FailureOr<SmallVector<std::string>>
sizeParameters(gpu::GPUFuncOp kernel, ArrayRef<std::string> names) {
  SmallVector<std::string> sizes;
  for (auto [arg, dim] : runtimeSizeOperands(kernel.getArgumentTypes())) {
    StringRef name = arg < names.size() ? StringRef(names[arg]) : "";
    if (name.starts_with("cu_seqlens_") && dim == 0) {
      sizes.push_back("seq_offsets");
      continue;
    }
    if (name.empty() || name.starts_with("cu_seqlens_") ||
        (dim != 0 && dim != 2))
      return kernel.emitError()
             << "argument #" << arg << " has a runtime size in dimension "
             << dim << "; only the batch (0) and the sequence length (2) of "
             << "the attention's tensors are the call's";
    bool keys = llvm::is_contained({"k", "v", "dk", "dv"}, name);
    sizes.push_back(dim == 0 ? "batch" : keys ? "seq_kv" : "seq_q");
  }
  return sizes;
}

/// `names` and, after them, `kernel`'s size parameters, comma-separated:
/// each distinct size once, in order of first appearance. The kernel
/// records the name of each of its sizes (fa.runtime_size_names), so that
/// fa-pass-runtime-sizes appends the same list.
FailureOr<std::string> launchArguments(gpu::GPUFuncOp kernel,
                                       SmallVector<std::string> names) {
  FailureOr<SmallVector<std::string>> sizes = sizeParameters(kernel, names);
  if (failed(sizes))
    return failure();
  if (!sizes->empty()) {
    Builder b(kernel.getContext());
    SmallVector<StringRef> perSize(sizes->begin(), sizes->end());
    kernel->setAttr(kRuntimeSizeNamesAttr, b.getStrArrayAttr(perSize));
  }
  llvm::StringSet<> seen;
  for (const std::string &size : *sizes)
    if (seen.insert(size).second)
      names.push_back(size);
  return llvm::join(names, ",");
}

} // namespace

FailureOr<std::string>
mlir::fa::kernelMetadata(const llvm::StringMap<gpu::GPUFuncOp> &kernels,
                         const AttentionConfig &options) {
  bool backward = kernels.count("backward");
  gpu::GPUFuncOp kernel = kernels.lookup(backward ? "backward" : "forward");
  std::string text;
  llvm::raw_string_ostream os(text);
  auto shape = [&](unsigned arg) {
    return cast<MemRefType>(kernel.getArgumentTypes()[arg]).getShape();
  };
  // Runtime shapes: batch and lengths are the call's (runtime_shapes = 1).
  auto problemSize = [&](StringRef key, int64_t size) {
    if (!ShapedType::isDynamic(size))
      os << key << " = " << size << "\n";
  };
  Type elt = cast<MemRefType>(kernel.getArgumentTypes()[0]).getElementType();
  auto window = kernel->getAttrOfType<DenseI64ArrayAttr>("fa.window");
  auto softcap = kernel->getAttrOfType<FloatAttr>("fa.softcap");
  auto typeName = [](Type t) { return t.isF16() ? "f16" : "bf16"; };
  bool fp8 = isa<Float8E4M3FNType>(elt);
  os << "kind = " << (backward ? "backward" : "forward")
     << "\nchip = " << options.chip
     << "\ndtype = " << (fp8 ? "e4m3" : typeName(elt)) << "\n";
  // FP8 inputs: O's own type.
  if (fp8)
    os << "out_dtype = "
       << typeName(
              cast<MemRefType>(kernel.getArgumentTypes()[3]).getElementType())
       << "\n";
  // Tensor-map parameters follow the tensors: `tmap_<tensor>`, and the
  // runtime learns their boxes from `tensor_maps`.
  SmallVector<std::string> args =
      backward ? SmallVector<std::string>{"q",     "k",      "v",  "do", "lse",
                                          "delta", "dq_acc", "dk", "dv"}
               : SmallVector<std::string>{"q", "k", "v", "o", "lse"};
  // A deterministic backward's dQ turn counters (i32 [B, Hq, Q blocks])
  // come right after them.
  bool deterministic = false;
  if (backward && kernel.getNumArguments() > args.size())
    if (auto turns =
            dyn_cast<MemRefType>(kernel.getArgumentTypes()[args.size()]);
        turns && turns.getRank() == 3) {
      args.push_back("dq_turns");
      deterministic = true;
    }
  // Packed sequences: the batch is the call's sequence count.
  bool varlen = takesSequenceOffsets(kernel, args.size());
  if (!varlen)
    problemSize("batch", shape(0)[0]);
  os << "heads_q = " << shape(0)[1] << "\nheads_kv = " << shape(1)[1] << "\n";
  problemSize("seq_q", shape(0)[2]);
  problemSize("seq_kv", shape(1)[2]);
  os << "head_dim = " << shape(0)[3] << "\nhead_dim_v = " << shape(2)[3]
     << "\nscale = "
     << llvm::formatv(
            "{0:e16}",
            kernel->getAttrOfType<FloatAttr>("fa.scale").getValueAsDouble())
     << "\ncausal = " << (kernel->hasAttr("fa.causal") ? 1 : 0)
     << "\nwindow_left = " << (window ? window[0] : -1)
     << "\nwindow_right = " << (window ? window[1] : -1) << "\nsoftcap = "
     << llvm::formatv("{0:e16}", softcap ? softcap.getValueAsDouble() : 0.0)
     << "\nblock_q = "
     << kernel->getAttrOfType<IntegerAttr>("fa.block_q").getInt()
     << "\nblock_kv = "
     << kernel->getAttrOfType<IntegerAttr>("fa.block_kv").getInt()
     << "\nrows_per_warp = "
     << kernel->getAttrOfType<IntegerAttr>("fa.rows_per_warp").getInt() << "\n";
  if (varlen) {
    args.append({"cu_seqlens_q", "cu_seqlens_k"});
    os << "varlen = 1\n";
  }
  if (deterministic)
    os << "deterministic = 1\n";
  // FP8: the descales of q, k and v follow (the kernel's last tensors).
  if (fp8)
    args.append({"q_descale", "k_descale", "v_descale"});
  SmallVector<std::string> maps;
  int64_t tensors = args.size();
  for (unsigned i = tensors; i < kernel.getNumArguments(); ++i) {
    auto map = dyn_cast<fagpu::TensorMapType>(kernel.getArgumentTypes()[i]);
    auto of = kernel.getArgAttrOfType<IntegerAttr>(i, "fagpu.tensor_map_of");
    if (!map || !of || of.getInt() < 0 || of.getInt() >= tensors)
      continue;
    std::string tensor = args[of.getInt()];
    args.push_back("tmap_" + tensor);
    maps.push_back(llvm::formatv("{0}:{1}x{2}", tensor, map.getBoxRows(),
                                 map.getBoxCols()));
  }
  // The runtime sizes come last (fa-pass-runtime-sizes appends them).
  FailureOr<std::string> mainArgs = launchArguments(kernel, args);
  if (failed(mainArgs))
    return failure();
  if (!runtimeSizeOperands(kernel.getArgumentTypes()).empty())
    os << "runtime_shapes = 1\n";
  if (!maps.empty())
    os << "tensor_maps = " << llvm::join(maps, ",") << "\n";
  launchKeys(os, kernel, "", *mainArgs);
  if (backward) {
    // With the gradient of LSE, the pre kernel reads it too (dlse).
    SmallVector<std::string> preNames = {"o", "do", "delta", "dq_acc"};
    if (gpu::GPUFuncOp pre = kernels.lookup("backward_pre");
        pre && pre.getNumArguments() == 5)
      preNames.insert(preNames.begin() + 2, "dlse");
    for (auto [kind, prefix, names] :
         {std::tuple{"backward_pre", "pre_", preNames},
          std::tuple{"backward_post", "post_",
                     SmallVector<std::string>{"dq_acc", "dq"}}}) {
      gpu::GPUFuncOp rowKernel = kernels.lookup(kind);
      FailureOr<std::string> rowArgs = launchArguments(rowKernel, names);
      if (failed(rowArgs))
        return failure();
      launchKeys(os, rowKernel, prefix, *rowArgs);
    }
  }
  os << "compiler = " << compilerVersion() << "\n";
  return text;
}

FailureOr<std::string>
mlir::fa::quantizeMetadata(const llvm::StringMap<gpu::GPUFuncOp> &kernels,
                           StringRef chip) {
  gpu::GPUFuncOp scale = kernels.lookup("quantize");
  gpu::GPUFuncOp amax = kernels.lookup("quantize_amax");
  if (!scale || !amax)
    return failure();
  ArrayRef<int64_t> input =
      cast<MemRefType>(scale.getArgumentTypes()[0]).getShape();
  ArrayRef<int64_t> blocks =
      cast<MemRefType>(scale.getArgumentTypes()[1]).getShape();
  Type element = cast<MemRefType>(scale.getArgumentTypes()[0]).getElementType();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "kind = quantize\nchip = " << chip
     << "\ndtype = " << (element.isF16() ? "f16" : "bf16")
     << "\nbatch = " << input[0] << "\nheads = " << input[1]
     << "\ngroups = " << blocks[1] << "\nseq = " << input[2]
     << "\nhead_dim = " << input[3] << "\n";
  if (auto seed = scale->getAttrOfType<IntegerAttr>("fa.rotation_seed"))
    os << "rotation_seed = " << seed.getInt() << "\n";
  launchKeys(os, scale, "", "x,amax,out,descale");
  launchKeys(os, amax, "pre_", "x,amax");
  os << "compiler = " << compilerVersion() << "\n";
  return text;
}
