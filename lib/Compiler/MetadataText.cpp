//===- MetadataText.cpp - The .meta text of a compiled problem ------------===//
//
// What the runtime needs to launch the kernels a compile produced, read off
// the kernels' attributes and argument types (docs/runtime.md), as JSON.
//
//===----------------------------------------------------------------------===//

#include "MetadataText.h"

#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::fa;

namespace {

std::vector<int64_t> arrayAttr(gpu::GPUFuncOp kernel, StringRef name) {
  ArrayRef<int64_t> values =
      kernel->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef();
  return std::vector<int64_t>(values.begin(), values.end());
}

/// The launch keys of one kernel into `meta`: entry, grid, block, shared
/// bytes, arguments. A grid with a runtime size is the call's (runtime
/// shapes) and not written; a persistent one of those launches at most
/// "persistent_blocks" blocks (fagpu-persistent-grid's fa.persistent_blocks).
void addLaunch(MetadataJson &meta, gpu::GPUFuncOp kernel,
               ArrayRef<std::string> args) {
  std::vector<int64_t> grid = arrayAttr(kernel, "fa.grid");
  meta["entry"] = kernel.getName().str();
  if (!llvm::is_contained(grid, ShapedType::kDynamic))
    meta["grid"] = grid;
  if (auto blocks = kernel->getAttrOfType<IntegerAttr>("fa.persistent_blocks"))
    meta["persistent_blocks"] = blocks.getInt();
  meta["block"] = arrayAttr(kernel, "fa.block");
  meta["shared_bytes"] =
      kernel->getAttrOfType<IntegerAttr>("fa.shared_bytes").getInt();
  meta["args"] = std::vector<std::string>(args.begin(), args.end());
}

/// `value` as .meta text at `indent`: what dump(2) writes, except that an
/// array of scalars stays on one line ("grid": [16, 8, 2]), so that each
/// key is one line, for grep and FileCheck.
void print(const MetadataJson &value, size_t indent, std::string &out) {
  auto scalar = [](const MetadataJson &v) {
    return v.dump(-1, ' ', false, MetadataJson::error_handler_t::replace);
  };
  bool flat =
      value.is_array() && llvm::none_of(value, [](const MetadataJson &element) {
        return element.is_structured();
      });
  if (!value.is_structured() || value.empty() || flat) {
    if (!flat || value.empty()) {
      out += scalar(value);
      return;
    }
    out += '[';
    for (auto [i, element] : llvm::enumerate(value))
      out += (i ? ", " : "") + scalar(element);
    out += ']';
    return;
  }
  const std::string pad(indent + 2, ' ');
  out += value.is_array() ? "[\n" : "{\n";
  for (auto it = value.begin(); it != value.end(); ++it) {
    out += pad;
    if (value.is_object())
      out += scalar(MetadataJson(it.key())) + ": ";
    print(it.value(), indent + 2, out);
    out += std::next(it) == value.end() ? "\n" : ",\n";
  }
  out += std::string(indent, ' ') + (value.is_array() ? "]" : "}");
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

/// `names` and, after them, `kernel`'s size parameters: each distinct size
/// once, in order of first appearance. The kernel
/// records the name of each of its sizes (fa.runtime_size_names), so that
/// fa-pass-runtime-sizes appends the same list.
FailureOr<SmallVector<std::string>>
launchArguments(gpu::GPUFuncOp kernel, SmallVector<std::string> names) {
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
  return names;
}

} // namespace

std::string mlir::fa::metadataText(const MetadataJson &meta) {
  std::string text;
  print(meta, 0, text);
  return text + "\n";
}

FailureOr<std::string>
mlir::fa::kernelMetadata(const llvm::StringMap<gpu::GPUFuncOp> &kernels,
                         const AttentionConfig &options) {
  bool backward = kernels.count("backward");
  gpu::GPUFuncOp kernel = kernels.lookup(backward ? "backward" : "forward");
  MetadataJson meta;
  auto shape = [&](unsigned arg) {
    return cast<MemRefType>(kernel.getArgumentTypes()[arg]).getShape();
  };
  // Runtime shapes: batch and lengths are the call's ("runtime_shapes").
  auto problemSize = [&](const char *key, int64_t size) {
    if (!ShapedType::isDynamic(size))
      meta[key] = size;
  };
  Type elt = cast<MemRefType>(kernel.getArgumentTypes()[0]).getElementType();
  auto window = kernel->getAttrOfType<DenseI64ArrayAttr>("fa.window");
  auto softcap = kernel->getAttrOfType<FloatAttr>("fa.softcap");
  auto typeName = [](Type t) { return t.isF16() ? "f16" : "bf16"; };
  bool fp8 = isa<Float8E4M3FNType>(elt);
  meta["kind"] = backward ? "backward" : "forward";
  meta["chip"] = options.chip;
  meta["dtype"] = fp8 ? "e4m3" : typeName(elt);
  // FP8 inputs: O's own type.
  if (fp8)
    meta["out_dtype"] = typeName(
        cast<MemRefType>(kernel.getArgumentTypes()[3]).getElementType());
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
  meta["heads_q"] = shape(0)[1];
  meta["heads_kv"] = shape(1)[1];
  problemSize("seq_q", shape(0)[2]);
  problemSize("seq_kv", shape(1)[2]);
  meta["head_dim"] = shape(0)[3];
  meta["head_dim_v"] = shape(2)[3];
  // Doubles: dump() writes the shortest text that reads back exactly.
  meta["scale"] =
      kernel->getAttrOfType<FloatAttr>("fa.scale").getValueAsDouble();
  meta["causal"] = kernel->hasAttr("fa.causal");
  meta["window_left"] = window ? window[0] : -1;
  meta["window_right"] = window ? window[1] : -1;
  meta["softcap"] = softcap ? softcap.getValueAsDouble() : 0.0;
  for (auto [key, attr] : {std::pair{"block_q", "fa.block_q"},
                           {"block_kv", "fa.block_kv"},
                           {"rows_per_warp", "fa.rows_per_warp"}})
    meta[key] = kernel->getAttrOfType<IntegerAttr>(attr).getInt();
  if (varlen) {
    args.append({"cu_seqlens_q", "cu_seqlens_k"});
    meta["varlen"] = true;
  }
  if (deterministic)
    meta["deterministic"] = true;
  // FP8: the descales of q, k and v follow (the kernel's last tensors).
  if (fp8)
    args.append({"q_descale", "k_descale", "v_descale"});
  MetadataJson maps = MetadataJson::object();
  int64_t tensors = args.size();
  for (unsigned i = tensors; i < kernel.getNumArguments(); ++i) {
    auto map = dyn_cast<fagpu::TensorMapType>(kernel.getArgumentTypes()[i]);
    auto of = kernel.getArgAttrOfType<IntegerAttr>(i, "fagpu.tensor_map_of");
    if (!map || !of || of.getInt() < 0 || of.getInt() >= tensors)
      continue;
    std::string tensor = args[of.getInt()];
    args.push_back("tmap_" + tensor);
    maps[tensor] = {map.getBoxRows(), map.getBoxCols()};
  }
  // The runtime sizes come last (fa-pass-runtime-sizes appends them).
  FailureOr<SmallVector<std::string>> mainArgs = launchArguments(kernel, args);
  if (failed(mainArgs))
    return failure();
  if (!runtimeSizeOperands(kernel.getArgumentTypes()).empty())
    meta["runtime_shapes"] = true;
  if (!maps.empty())
    meta["tensor_maps"] = std::move(maps);
  addLaunch(meta, kernel, *mainArgs);
  if (backward) {
    // With the gradient of LSE, the pre kernel reads it too (dlse).
    SmallVector<std::string> preNames = {"o", "do", "delta", "dq_acc"};
    if (gpu::GPUFuncOp pre = kernels.lookup("backward_pre");
        pre && pre.getNumArguments() == 5)
      preNames.insert(preNames.begin() + 2, "dlse");
    for (auto [kind, key, names] :
         {std::tuple{"backward_pre", "pre", preNames},
          std::tuple{"backward_post", "post",
                     SmallVector<std::string>{"dq_acc", "dq"}}}) {
      gpu::GPUFuncOp rowKernel = kernels.lookup(kind);
      FailureOr<SmallVector<std::string>> rowArgs =
          launchArguments(rowKernel, names);
      if (failed(rowArgs))
        return failure();
      addLaunch(meta[key], rowKernel, *rowArgs);
    }
  }
  meta["compiler"] = compilerVersion();
  return metadataText(meta);
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
  MetadataJson meta;
  meta["kind"] = "quantize";
  meta["chip"] = chip.str();
  meta["dtype"] = element.isF16() ? "f16" : "bf16";
  meta["batch"] = input[0];
  meta["heads"] = input[1];
  meta["groups"] = blocks[1];
  meta["seq"] = input[2];
  meta["head_dim"] = input[3];
  if (auto seed = scale->getAttrOfType<IntegerAttr>("fa.rotation_seed"))
    meta["rotation_seed"] = seed.getInt();
  addLaunch(meta, scale, {"x", "amax", "out", "descale"});
  addLaunch(meta["pre"], amax, {"x", "amax"});
  meta["compiler"] = compilerVersion();
  return metadataText(meta);
}
