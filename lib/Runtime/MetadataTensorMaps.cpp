//===- MetadataTensorMaps.cpp - The `tensor_maps` key of .meta ------------===//

#include "MetadataTensorMaps.h"

#include "MetadataSyntax.h"

#include <algorithm>
#include <iterator>

namespace fa::rt::detail {

namespace {

/// The tensors a `tensor_maps` entry may name, in canonical order; the first
/// kForwardMapTensors are the forward kernel's.
constexpr const char *kMapTensors[] = {"q",  "k",  "v",  "o",     "do",
                                       "dq", "dk", "dv", "dq_acc"};
constexpr int kForwardMapTensors = 4;
constexpr const char *kMapTensorList = "q, k, v, o, do, dq, dk, dv, dq_acc";
/// The largest TMA box extent (cuTensorMapEncodeTiled's boxDim limit).
constexpr int64_t kMaxTensorMapBox = 256;

/// The index of `tensor` in kMapTensors, or -1.
int mapTensorIndex(std::string_view tensor) {
  for (int i = 0; i < int(std::size(kMapTensors)); ++i)
    if (tensor == kMapTensors[i])
      return i;
  return -1;
}

/// Parses one `tensor_maps` entry "<tensor>:<rows>x<cols>"; returns "" or
/// the reason (without the key).
std::string parseTensorMapEntry(std::string_view entry, TensorMapParam &out) {
  const std::string quoted = "'" + std::string(entry) + "'";
  size_t colon = entry.find(':');
  size_t x = colon == std::string_view::npos ? std::string_view::npos
                                             : entry.find('x', colon + 1);
  int64_t rows = 0, cols = 0;
  if (x == std::string_view::npos ||
      !parseInt(entry.substr(colon + 1, x - colon - 1), rows) ||
      !parseInt(entry.substr(x + 1), cols))
    return "expected comma-separated <tensor>:<rows>x<cols> entries (e.g. "
           "q:128x64), got " +
           quoted;
  std::string_view tensor = entry.substr(0, colon);
  if (mapTensorIndex(tensor) < 0)
    return "unknown tensor '" + std::string(tensor) + "' in " + quoted +
           " (known: " + kMapTensorList + ")";
  if (rows < 1 || rows > kMaxTensorMapBox || cols < 1 ||
      cols > kMaxTensorMapBox)
    return "box rows and cols must be in [1, 256] (the TMA box limit), got " +
           quoted;
  out.tensor = std::string(tensor);
  out.rows = uint32_t(rows);
  out.cols = uint32_t(cols);
  return "";
}

} // namespace

/// Parses a whole `tensor_maps` value into `maps`, sorted in kMapTensors
/// order so that the order written does not change configString().
std::string parseTensorMaps(std::string_view value,
                            std::vector<TensorMapParam> &maps) {
  maps.clear();
  for (std::string_view part : splitCommas(value)) {
    TensorMapParam map;
    std::string problem = parseTensorMapEntry(part, map);
    if (!problem.empty())
      return "bad value for 'tensor_maps': " + problem;
    for (const TensorMapParam &seen : maps)
      if (seen.tensor == map.tensor)
        return "bad value for 'tensor_maps': tensor '" + map.tensor +
               "' listed twice";
    maps.push_back(map);
  }
  std::sort(maps.begin(), maps.end(),
            [](const TensorMapParam &a, const TensorMapParam &b) {
              return mapTensorIndex(a.tensor) < mapTensorIndex(b.tensor);
            });
  return "";
}
namespace {

/// " (line N)" for a key that was set, "" otherwise.
std::string lineOf(const std::map<std::string, int> &lines,
                   const std::string &key) {
  auto it = lines.find(key);
  return it == lines.end() ? "" : " (line " + std::to_string(it->second) + ")";
}

/// Each launch's parameter list and the key that sets it.
std::vector<std::pair<const char *, const std::vector<std::string> *>>
argLists(const KernelMetadata &m) {
  if (m.kind == KernelKind::Forward)
    return {{"args", &m.args}};
  return {{"pre_args", &m.pre.args},
          {"args", &m.args},
          {"post_args", &m.post.args}};
}

} // namespace

/// `tensor_maps` against the kind and the parameter lists: each entry names
/// a tensor of this kind of kernel and a parameter some launch takes, and
/// each `tmap_<x>` parameter has an entry. (Without the second check a
/// described map would silently never be passed; without the third the
/// runtime could not know what to encode.)
Status checkTensorMaps(const KernelMetadata &m,
                       const std::map<std::string, int> &lines) {
  const std::string where = "tensor_maps" + lineOf(lines, "tensor_maps");
  const bool forward = m.kind == KernelKind::Forward;
  for (const TensorMapParam &map : m.tensorMaps) {
    if (forward && mapTensorIndex(map.tensor) >= kForwardMapTensors)
      return Status::error(where + ": a forward kernel has no tensor '" +
                           map.tensor + "' (forward tensor maps: q, k, v, o)");
    bool used = false;
    for (const auto &[key, args] : argLists(m))
      used |= contains(*args, map.paramName());
    if (!used)
      return Status::error(
          where + ": entry '" + map.toString() + "' describes parameter '" +
          map.paramName() + "', which is not in " +
          (forward ? "args" + lineOf(lines, "args")
                   : std::string("args, pre_args or post_args")));
  }
  for (const auto &[key, args] : argLists(m))
    for (const std::string &arg : *args)
      if (arg.rfind("tmap_", 0) == 0 && !m.findTensorMap(arg))
        return Status::error(
            std::string(key) + lineOf(lines, key) + ": parameter '" + arg +
            "' has no 'tensor_maps' entry (expected '" + arg.substr(5) +
            ":<rows>x<cols>' in " + where + ")");
  return Status::success();
}

} // namespace fa::rt::detail
