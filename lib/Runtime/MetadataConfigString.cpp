//===- MetadataConfigString.cpp - A kernel ABI as one line ----------------===//

#include "fa/Runtime/Metadata.h"

#include "Format.h"

#include <string>
#include <utility>

namespace fa::rt {

std::string KernelMetadata::configString() const {
  std::string s;
  auto add = [&](const char *key, const std::string &value) {
    if (!s.empty())
      s += ';';
    s += key;
    s += '=';
    s += value;
  };
  auto dim = [](const Dim3 &d) {
    return std::to_string(d.x) + "," + std::to_string(d.y) + "," +
           std::to_string(d.z);
  };
  add("kind", toString(kind));
  add("entry", entry);
  // A quantization: its own keys (fa/Runtime/Metadata.h).
  if (kind == KernelKind::Quantize) {
    add("chip", chip);
    add("dtype", toString(dtype));
    add("batch", std::to_string(batch));
    add("heads", std::to_string(headsQ));
    add("groups", std::to_string(headsKV));
    add("seq", std::to_string(seqQ));
    add("head_dim", std::to_string(headDim));
    if (rotated)
      add("rotation_seed", std::to_string(rotationSeed));
  } else {
    add("chip", chip);
    add("dtype", toString(dtype));
    add("batch", std::to_string(batch));
    add("heads_q", std::to_string(headsQ));
    add("heads_kv", std::to_string(headsKV));
    add("seq_q", std::to_string(seqQ));
    add("seq_kv", std::to_string(seqKV));
    add("head_dim", std::to_string(headDim));
    add("head_dim_v", std::to_string(headDimV));
    add("scale", detail::formatShortest(scale));
    add("causal", causal ? "1" : "0");
    add("window_left", std::to_string(windowLeft));
    add("window_right", std::to_string(windowRight));
    add("softcap", detail::formatShortest(softcap));
    add("block_q", std::to_string(blockQ));
    add("block_kv", std::to_string(blockKV));
    add("rows_per_warp", std::to_string(rowsPerWarp));
    // Only when set, so that the other kernels' strings (and cache keys)
    // stay as they were.
    if (runtimeShapes)
      add("runtime_shapes", "1");
    if (deterministic)
      add("deterministic", "1");
    if (varlen)
      add("varlen", "1");
  }
  add("grid", dim(grid));
  if (persistentBlocks > 0)
    add("persistent_blocks", std::to_string(persistentBlocks));
  add("block", dim(block));
  add("shared_bytes", std::to_string(sharedBytes));
  std::string argList;
  for (const std::string &a : args)
    argList += (argList.empty() ? "" : ",") + a;
  add("args", argList);
  // Only when present, so that the config strings (and cache keys) of
  // kernels without tensor maps stay as they were.
  if (!tensorMaps.empty()) {
    std::string maps;
    for (const TensorMapParam &map : tensorMaps)
      maps += (maps.empty() ? "" : ",") + map.toString();
    add("tensor_maps", maps);
  }
  if (!compiler.empty())
    add("compiler", compiler);
  if (kind != KernelKind::Forward) {
    for (const auto &[prefix, l] :
         {std::make_pair(std::string("pre_"), &pre),
          std::make_pair(std::string("post_"), &post)}) {
      if (prefix == "post_" && kind == KernelKind::Quantize)
        continue;
      std::string list;
      for (const std::string &a : l->args)
        list += (list.empty() ? "" : ",") + a;
      add((prefix + "entry").c_str(), l->entry);
      add((prefix + "grid").c_str(), dim(l->grid));
      add((prefix + "block").c_str(), dim(l->block));
      add((prefix + "shared_bytes").c_str(), std::to_string(l->sharedBytes));
      add((prefix + "args").c_str(), list);
    }
  }
  return s;
}

} // namespace fa::rt
