//===- MetadataTensorMaps.cpp - The `tensor_maps` key of .meta ------------===//

#include "MetadataTensorMaps.h"

#include "MetadataSyntax.h"

#include <algorithm>
#include <iterator>

#include <nlohmann/json.hpp>

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

} // namespace

std::string readTensorMaps(const nlohmann::json &value, const std::string &path,
                           std::vector<TensorMapParam> &maps) {
  if (!value.is_object())
    return expected(path, "an object of tensor: [rows, cols]", value);
  maps.clear();
  // An object's keys are unique (the parser refuses a key set twice): one
  // entry per tensor.
  for (const auto &[tensor, box] : value.items()) {
    const std::string at = path + "." + quote(tensor);
    if (mapTensorIndex(tensor) < 0)
      return at + ": unknown tensor (known: " + kMapTensorList + ")";
    if (!box.is_array() || box.size() != 2)
      return expected(at, "[rows, cols]", box);
    int64_t extent[2];
    for (size_t i = 0; i < 2; ++i)
      if (std::string problem =
              readInteger(box[i], at + "[" + std::to_string(i) + "]", 1,
                          kMaxTensorMapBox, extent[i]);
          !problem.empty())
        return problem + " (the TMA box limit)";
    maps.push_back({tensor, uint32_t(extent[0]), uint32_t(extent[1])});
  }
  std::sort(maps.begin(), maps.end(),
            [](const TensorMapParam &a, const TensorMapParam &b) {
              return mapTensorIndex(a.tensor) < mapTensorIndex(b.tensor);
            });
  return "";
}

namespace {

/// Each launch's parameter list and the key path that sets it.
std::vector<std::pair<const char *, const std::vector<std::string> *>>
argLists(const KernelMetadata &m) {
  if (m.kind == KernelKind::Forward)
    return {{"\"args\"", &m.args}};
  return {{"\"pre\".\"args\"", &m.pre.args},
          {"\"args\"", &m.args},
          {"\"post\".\"args\"", &m.post.args}};
}

} // namespace

/// `tensor_maps` against the kind and the parameter lists: each entry names
/// a tensor of this kind of kernel and a parameter some launch takes, and
/// each `tmap_<x>` parameter has an entry. (Without the second check a
/// described map would silently never be passed; without the third the
/// runtime could not know what to encode.)
Status checkTensorMaps(const KernelMetadata &m) {
  const bool forward = m.kind == KernelKind::Forward;
  for (const TensorMapParam &map : m.tensorMaps) {
    const std::string where = "\"tensor_maps\"." + quote(map.tensor);
    if (forward && mapTensorIndex(map.tensor) >= kForwardMapTensors)
      return Status::error(where + ": a forward kernel has no such tensor "
                                   "(forward tensor maps: q, k, v, o)");
    bool used = false;
    for (const auto &[key, args] : argLists(m))
      used |= contains(*args, map.paramName());
    if (!used)
      return Status::error(where + ": describes parameter '" + map.paramName() +
                           "', which is not in " +
                           (forward ? "\"args\""
                                    : "\"args\", \"pre\".\"args\" or "
                                      "\"post\".\"args\""));
  }
  for (const auto &[key, args] : argLists(m))
    for (const std::string &arg : *args)
      if (arg.rfind("tmap_", 0) == 0 && !m.findTensorMap(arg))
        return Status::error(std::string(key) + ": parameter '" + arg +
                             "' has no \"tensor_maps\" entry (expected " +
                             quote(arg.substr(5)) + ": [rows, cols])");
  return Status::success();
}

} // namespace fa::rt::detail
