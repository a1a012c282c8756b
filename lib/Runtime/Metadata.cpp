//===- Metadata.cpp - Kernel metadata (.meta files) -----------------------===//

#include "fa/Runtime/Metadata.h"

#include "fa/Runtime/Limits.h"

#include "Format.h"
#include "MetadataAttention.h"
#include "MetadataQuantize.h"
#include "MetadataSyntax.h"
#include "MetadataTensorMaps.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

namespace fa::rt {

using namespace detail;

const char *toString(KernelKind kind) {
  switch (kind) {
  case KernelKind::Forward:
    return "forward";
  case KernelKind::Backward:
    return "backward";
  case KernelKind::Quantize:
    return "quantize";
  }
  return "?";
}

const char *toString(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  case DType::E4M3:
    return "e4m3";
  }
  return "?";
}

size_t elementSize(DType dtype) { return dtype == DType::E4M3 ? 1 : 2; }

bool LaunchSpec::hasArg(std::string_view name) const {
  return contains(args, name);
}

bool KernelMetadata::hasArg(std::string_view name) const {
  return contains(args, name);
}

std::string TensorMapParam::toString() const {
  return tensor + ":" + std::to_string(rows) + "x" + std::to_string(cols);
}

const TensorMapParam *
KernelMetadata::findTensorMap(std::string_view param) const {
  constexpr std::string_view prefix = "tmap_";
  if (param.substr(0, prefix.size()) != prefix)
    return nullptr;
  for (const TensorMapParam &map : tensorMaps)
    if (map.tensor == param.substr(prefix.size()))
      return &map;
  return nullptr;
}

LaunchSpec KernelMetadata::mainLaunch() const {
  LaunchSpec l;
  l.entry = entry;
  l.grid = grid;
  l.block = block;
  l.sharedBytes = sharedBytes;
  l.args = args;
  return l;
}

std::vector<LaunchSpec> KernelMetadata::launches() const {
  if (kind == KernelKind::Forward)
    return {mainLaunch()};
  if (kind == KernelKind::Quantize)
    return {pre, mainLaunch()};
  return {pre, mainLaunch(), post};
}

namespace {

enum class KeyType {
  Kind,
  Entry,
  Chip,
  DType,
  PositiveInt,
  Window,
  Scale,
  Softcap,
  Bool,
  NonNegativeInt,
  Dim3,
  SharedBytes,
  Args,
  TensorMaps,
  Text,
  Seed
};

struct KeySpec {
  const char *name;
  KeyType type;
  bool required;
};

const KeySpec kKeys[] = {
    {"kind", KeyType::Kind, true},
    {"entry", KeyType::Entry, true},
    {"chip", KeyType::Chip, true},
    {"dtype", KeyType::DType, true},
    {"out_dtype", KeyType::DType, false},
    {"batch", KeyType::PositiveInt, true},
    {"heads_q", KeyType::PositiveInt, true},
    {"heads_kv", KeyType::PositiveInt, true},
    {"seq_q", KeyType::PositiveInt, true},
    {"seq_kv", KeyType::PositiveInt, true},
    {"head_dim", KeyType::PositiveInt, true},
    {"head_dim_v", KeyType::PositiveInt, true},
    {"scale", KeyType::Scale, true},
    {"causal", KeyType::Bool, true},
    {"runtime_shapes", KeyType::Bool, false},
    {"varlen", KeyType::Bool, false},
    {"deterministic", KeyType::Bool, false},
    {"window_left", KeyType::Window, false},
    {"window_right", KeyType::Window, false},
    {"softcap", KeyType::Softcap, false},
    {"block_q", KeyType::NonNegativeInt, false},
    {"block_kv", KeyType::NonNegativeInt, false},
    {"rows_per_warp", KeyType::NonNegativeInt, false},
    {"grid", KeyType::Dim3, true},
    {"block", KeyType::Dim3, true},
    {"shared_bytes", KeyType::SharedBytes, true},
    {"args", KeyType::Args, true},
    {"compiler", KeyType::Text, false},
    {"tensor_maps", KeyType::TensorMaps, false},
    // A quantization's (kind = quantize), checked by finishQuantize.
    {"heads", KeyType::PositiveInt, false},
    {"groups", KeyType::PositiveInt, false},
    {"seq", KeyType::PositiveInt, false},
    {"rotation_seed", KeyType::Seed, false},
    // Backward only: required for kind = backward, rejected for forward.
    {"pre_entry", KeyType::Entry, false},
    {"pre_grid", KeyType::Dim3, false},
    {"pre_block", KeyType::Dim3, false},
    {"pre_shared_bytes", KeyType::SharedBytes, false},
    {"pre_args", KeyType::Args, false},
    {"post_entry", KeyType::Entry, false},
    {"post_grid", KeyType::Dim3, false},
    {"post_block", KeyType::Dim3, false},
    {"post_shared_bytes", KeyType::SharedBytes, false},
    {"post_args", KeyType::Args, false},
};

bool isLaunchPrefixed(std::string_view key) {
  return key.rfind("pre_", 0) == 0 || key.rfind("post_", 0) == 0;
}

/// The launch fields a launch key (entry, pre_grid, ...) sets, and the key
/// without its prefix.
struct LaunchFields {
  std::string *entry;
  Dim3 *grid, *block;
  uint32_t *sharedBytes;
  std::vector<std::string> *args;
  std::string_view base;
};

LaunchFields launchFields(KernelMetadata &m, std::string_view key) {
  if (key.rfind("pre_", 0) == 0)
    return {&m.pre.entry,       &m.pre.grid, &m.pre.block,
            &m.pre.sharedBytes, &m.pre.args, key.substr(4)};
  if (key.rfind("post_", 0) == 0)
    return {&m.post.entry,       &m.post.grid, &m.post.block,
            &m.post.sharedBytes, &m.post.args, key.substr(5)};
  return {&m.entry, &m.grid, &m.block, &m.sharedBytes, &m.args, key};
}

const KeySpec *findKey(std::string_view name) {
  for (const KeySpec &spec : kKeys)
    if (name == spec.name)
      return &spec;
  return nullptr;
}

int64_t *intField(KernelMetadata &m, std::string_view key) {
  if (key == "batch")
    return &m.batch;
  if (key == "heads_q" || key == "heads")
    return &m.headsQ;
  if (key == "heads_kv" || key == "groups")
    return &m.headsKV;
  if (key == "seq_q" || key == "seq")
    return &m.seqQ;
  if (key == "seq_kv")
    return &m.seqKV;
  if (key == "head_dim")
    return &m.headDim;
  if (key == "head_dim_v")
    return &m.headDimV;
  if (key == "window_left")
    return &m.windowLeft;
  if (key == "window_right")
    return &m.windowRight;
  if (key == "block_q")
    return &m.blockQ;
  if (key == "block_kv")
    return &m.blockKV;
  if (key == "rows_per_warp")
    return &m.rowsPerWarp;
  return nullptr;
}

/// Parses one value into `m`; returns "" or the reason (without location).
std::string parseValue(const KeySpec &spec, std::string_view value,
                       KernelMetadata &m) {
  std::string key = spec.name;
  LaunchFields launch = launchFields(m, key);
  auto bad = [&](const char *expected) {
    return "bad value for '" + key + "': expected " + expected + ", got '" +
           std::string(value) + "'";
  };
  switch (spec.type) {
  case KeyType::Kind:
    if (value == "forward")
      m.kind = KernelKind::Forward;
    else if (value == "backward")
      m.kind = KernelKind::Backward;
    else if (value == "quantize")
      m.kind = KernelKind::Quantize;
    else
      return bad("'forward', 'backward' or 'quantize'");
    return "";
  case KeyType::Text:
    if (value.empty())
      return bad("a non-empty value");
    m.compiler = std::string(value);
    return "";
  case KeyType::Entry:
    if (!isIdentifier(value))
      return bad("a kernel symbol name");
    *launch.entry = std::string(value);
    return "";
  case KeyType::Chip:
    if (parseChip(value) < 0)
      return bad("sm_<version> (e.g. sm_90 or sm_90a)");
    m.chip = std::string(value);
    return "";
  case KeyType::DType: {
    DType *field = key == "out_dtype" ? &m.outDtype : &m.dtype;
    if (value == "bf16")
      *field = DType::BF16;
    else if (value == "f16")
      *field = DType::F16;
    else if (value == "e4m3" && key == "dtype")
      *field = DType::E4M3;
    else
      return bad(key == "dtype" ? "'bf16', 'f16' or 'e4m3'"
                                : "'bf16' or 'f16'");
    return "";
  }
  case KeyType::PositiveInt: {
    int64_t v;
    if (!parseInt(value, v) || v <= 0)
      return bad("a positive integer");
    *intField(m, key) = v;
    return "";
  }
  case KeyType::NonNegativeInt: {
    int64_t v;
    if (!parseInt(value, v) || v < 0)
      return bad("a non-negative integer");
    *intField(m, key) = v;
    return "";
  }
  case KeyType::Window: {
    int64_t v;
    if (!parseInt(value, v))
      return bad("an integer (negative: unbounded)");
    *intField(m, key) = v < 0 ? -1 : v;
    return "";
  }
  case KeyType::Scale: {
    double v;
    if (!parseDouble(value, v) || !isValidScaleValue(v))
      return bad("a positive finite number");
    m.scale = v;
    return "";
  }
  case KeyType::Softcap: {
    double v;
    if (!parseDouble(value, v) || v < 0)
      return bad("a non-negative finite number (0: none)");
    m.softcap = v;
    return "";
  }
  case KeyType::Bool: {
    bool &flag = key == "causal"          ? m.causal
                 : key == "deterministic" ? m.deterministic
                 : key == "varlen"        ? m.varlen
                                          : m.runtimeShapes;
    if (value == "1" || value == "true")
      flag = true;
    else if (value == "0" || value == "false")
      flag = false;
    else
      return bad("0 or 1");
    return "";
  }
  case KeyType::Dim3: {
    std::vector<std::string_view> parts = splitCommas(value);
    if (parts.size() != 3)
      return bad("three comma-separated positive integers (x,y,z)");
    uint32_t xyz[3];
    for (int i = 0; i < 3; ++i) {
      int64_t v;
      if (!parseInt(parts[i], v) || v <= 0 || v > kMaxGridX)
        return bad("three comma-separated positive integers (x,y,z)");
      xyz[i] = uint32_t(v);
    }
    Dim3 d{xyz[0], xyz[1], xyz[2]};
    if (launch.base == "grid") {
      if (d.y > kMaxGridYZ || d.z > kMaxGridYZ)
        return "bad value for '" + key +
               "': y and z must be at most 65535, got '" + std::string(value) +
               "'";
      *launch.grid = d;
    } else {
      if (d.x > 1024 || d.y > 1024 || d.z > 64 || d.product() > 1024)
        return "bad value for '" + key +
               "': at most 1024 threads (x,y <= 1024, z "
               "<= 64), got '" +
               std::string(value) + "'";
      *launch.block = d;
    }
    return "";
  }
  case KeyType::SharedBytes: {
    int64_t v;
    if (!parseInt(value, v) || v < 0 || v > INT32_MAX)
      return bad("a non-negative byte count");
    *launch.sharedBytes = uint32_t(v);
    return "";
  }
  case KeyType::Args: {
    std::vector<std::string> &args = *launch.args;
    args.clear();
    for (std::string_view part : splitCommas(value)) {
      if (!isIdentifier(part))
        return bad("comma-separated parameter names");
      // A size may be passed more than once (once per tensor it sizes).
      for (const std::string &seen : args)
        if (seen == part && !isSizeParameter(part))
          return "bad value for '" + key + "': parameter '" +
                 std::string(part) + "' listed twice";
      args.emplace_back(part);
    }
    return "";
  }
  case KeyType::TensorMaps:
    return parseTensorMaps(value, m.tensorMaps);
  case KeyType::Seed:
    if (!parseInt(value, m.rotationSeed))
      return bad("an integer");
    m.rotated = true;
    return "";
  }
  return "internal error";
}

} // namespace

bool isSizeParameter(std::string_view name) {
  return name == "batch" || name == "seq_q" || name == "seq_kv" ||
         name == "seq_offsets";
}

int KernelMetadata::chipVersion() const { return parseChip(chip); }

bool KernelMetadata::chipIsArchSpecific() const {
  bool specific = false;
  return parseChip(chip, &specific) >= 0 && specific;
}

Status parseKernelMetadata(std::string_view text, KernelMetadata &out) {
  KernelMetadata m;
  std::map<std::string, int> seenOnLine;
  int lineNo = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(
        pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++lineNo;

    size_t hash = raw.find('#');
    std::string_view line =
        trim(hash == std::string_view::npos ? raw : raw.substr(0, hash));
    if (line.empty())
      continue;
    std::string where = "line " + std::to_string(lineNo) + ": ";
    size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return Status::error(where + "expected 'key = value', got '" +
                           std::string(line) + "'");
    std::string_view key = trim(line.substr(0, eq));
    std::string_view value = trim(line.substr(eq + 1));
    if (key.empty())
      return Status::error(where + "missing key before '='");
    const KeySpec *spec = findKey(key);
    if (!spec)
      return Status::error(where + "unknown key '" + std::string(key) + "'");
    auto [it, inserted] = seenOnLine.emplace(std::string(key), lineNo);
    if (!inserted)
      return Status::error(where + "duplicate key '" + std::string(key) +
                           "' (first set on line " +
                           std::to_string(it->second) + ")");
    if (value.empty())
      return Status::error(where + "missing value for '" + std::string(key) +
                           "'");
    std::string problem = parseValue(*spec, value, m);
    if (!problem.empty())
      return Status::error(where + problem);
  }

  if (m.kind == KernelKind::Quantize) {
    FA_RT_RETURN_IF_ERROR(detail::finishQuantize(m, seenOnLine));
    out = std::move(m);
    return Status::success();
  }
  for (const char *key : {"heads", "groups", "seq", "rotation_seed"})
    if (seenOnLine.count(key))
      return Status::error("line " + std::to_string(seenOnLine[key]) +
                           ": key '" + key +
                           "' is a quantization's (kind = quantize), not an "
                           "attention kernel's");
  std::string missing;
  for (const KeySpec &spec : kKeys)
    if (spec.required && !seenOnLine.count(spec.name) &&
        !(m.runtimeShapes && isCallShapeKey(spec.name)))
      missing += (missing.empty() ? "" : ", ") + std::string(spec.name);
  if (!missing.empty())
    return Status::error(std::string(missing.find(',') == std::string::npos
                                         ? "missing required key: "
                                         : "missing required keys: ") +
                         missing);

  FA_RT_RETURN_IF_ERROR(checkAttentionFlags(m, seenOnLine));
  auto at = [&](const char *key) {
    return " (line " + std::to_string(seenOnLine[key]) + ")";
  };
  if (m.kind == KernelKind::Forward) {
    for (const auto &[key, line] : seenOnLine)
      if (isLaunchPrefixed(key))
        return Status::error("line " + std::to_string(line) + ": key '" + key +
                             "' is only valid for a backward kernel (kind = "
                             "forward" +
                             at("kind") + ")");
  } else {
    std::string missingLaunch;
    for (const KeySpec &spec : kKeys)
      if (isLaunchPrefixed(spec.name) && !seenOnLine.count(spec.name) &&
          !(m.runtimeShapes && isCallShapeKey(spec.name)))
        missingLaunch +=
            (missingLaunch.empty() ? "" : ", ") + std::string(spec.name);
    if (!missingLaunch.empty())
      return Status::error(
          std::string(missingLaunch.find(',') == std::string::npos
                          ? "missing required key"
                          : "missing required keys") +
          " for a backward kernel (kind = backward" + at("kind") +
          "): " + missingLaunch);
  }
  FA_RT_RETURN_IF_ERROR(checkTensorMaps(m, seenOnLine));
  FA_RT_RETURN_IF_ERROR(checkLaunchParameters(m, seenOnLine));
  out = std::move(m);
  return Status::success();
}

Status readFile(const std::string &path, std::string &out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error("cannot open '" + path + "': " + std::strerror(errno));
  out.clear();
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed)
    return Status::error("error reading '" + path + "'");
  return Status::success();
}

Status readKernelMetadataFile(const std::string &path, KernelMetadata &out) {
  std::string text;
  FA_RT_RETURN_IF_ERROR(readFile(path, text));
  return parseKernelMetadata(text, out).withContext(path);
}

} // namespace fa::rt
