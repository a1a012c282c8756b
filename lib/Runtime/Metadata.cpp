//===- Metadata.cpp - Kernel metadata (.meta files) -----------------------===//
//
// A .meta file is a JSON object (fa/Runtime/Metadata.h). nlohmann::json
// reads the syntax; kKeys below says once, for every key, which kernels have
// it, which must, and what its value must be; the checks between keys
// follow (MetadataAttention.cpp, MetadataTensorMaps.cpp,
// MetadataQuantize.cpp).
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Metadata.h"

#include "fa/Runtime/Limits.h"

#include "MetadataAttention.h"
#include "MetadataQuantize.h"
#include "MetadataSyntax.h"
#include "MetadataTensorMaps.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <utility>
#include <variant>

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

using json = nlohmann::json;
using M = KernelMetadata;

/// Sets of kernel kinds, a bit per KernelKind.
enum KindSet : unsigned {
  kForward = 1u << unsigned(KernelKind::Forward),
  kBackward = 1u << unsigned(KernelKind::Backward),
  kQuantize = 1u << unsigned(KernelKind::Quantize),
  kAttention = kForward | kBackward,
  kAnyKind = kAttention | kQuantize,
};

enum KeyFlag : unsigned {
  /// A key of every launch: of the main one at the top level, and of the
  /// "pre" and "post" objects.
  kLaunchKey = 1,
  /// The call's, absent from the file, for a kernel with runtime shapes.
  kCallShape = 2,
};

constexpr KernelKind kKinds[] = {KernelKind::Forward, KernelKind::Backward,
                                 KernelKind::Quantize};
constexpr DType kDTypes[] = {DType::BF16, DType::F16, DType::E4M3};

/// The value of `Enum` that toString() names `name`, if any.
template <class Enum, size_t N>
std::optional<Enum> fromName(std::string_view name, const Enum (&all)[N]) {
  for (Enum value : all)
    if (name == toString(value))
      return value;
  return std::nullopt;
}

/// What a value must be beyond its JSON type, which the type of the member
/// it is read into picks.
struct Rule {
  int64_t min = 0, max = 0; ///< Integers; extents: max of their product.
  bool (*validText)(std::string_view) = nullptr;
  bool (*validNumber)(double) = nullptr;
  const char *expected = nullptr; ///< What validText / validNumber accept.
  Dim3 most;                      ///< Extents: each one's maximum.
};

constexpr Rule range(int64_t min, int64_t max) {
  return {min, max, nullptr, nullptr, nullptr, {}};
}
constexpr Rule text(bool (*valid)(std::string_view), const char *expected) {
  return {0, 0, valid, nullptr, expected, {}};
}
constexpr Rule number(bool (*valid)(double), const char *expected) {
  return {0, 0, nullptr, valid, expected, {}};
}
constexpr Rule extents(Dim3 most, int64_t maxProduct) {
  return {0, maxProduct, nullptr, nullptr, nullptr, most};
}

/// The member a key's value is read into.
using Field = std::variant<KernelKind M::*, DType M::*, std::string M::*,
                           int64_t M::*, uint32_t M::*, double M::*, bool M::*,
                           Dim3 M::*, std::vector<std::string> M::*,
                           std::vector<TensorMapParam> M::*, LaunchSpec M::*>;

/// One key of a .meta file.
struct KeySpec {
  const char *name;
  Field field;
  unsigned kinds;    ///< KindSet of the kernels that may have the key.
  unsigned required; ///< KindSet of those that must (kCallShape aside).
  unsigned flags;    ///< KeyFlags.
  Rule rule;
};

constexpr int64_t kMin = INT64_MIN, kMax = INT64_MAX;

bool isKindName(std::string_view s) { return fromName(s, kKinds).has_value(); }
bool isDTypeName(std::string_view s) {
  return fromName(s, kDTypes).has_value();
}
bool isOutDTypeName(std::string_view s) { return s == "bf16" || s == "f16"; }
bool isChip(std::string_view s) { return parseChip(s) >= 0; }
bool isNonEmpty(std::string_view s) { return !s.empty(); }
bool isValidSoftcap(double v) { return v == 0 || isValidScaleValue(v); }

/// Every key, in the order they are read: runtime_shapes before the keys
/// it leaves to the call, the launch keys before "pre" and "post".
const KeySpec kKeys[] = {
    {"kind", &M::kind, kAnyKind, kAnyKind, 0,
     text(isKindName, "\"forward\", \"backward\" or \"quantize\"")},
    {"runtime_shapes", &M::runtimeShapes, kAttention, 0, 0, {}},
    {"chip", &M::chip, kAnyKind, kAnyKind, 0,
     text(isChip, "sm_<version> (e.g. \"sm_90\" or \"sm_90a\")")},
    {"dtype", &M::dtype, kAnyKind, kAnyKind, 0,
     text(isDTypeName, "\"bf16\", \"f16\" or \"e4m3\"")},
    {"out_dtype", &M::outDtype, kAttention, 0, 0,
     text(isOutDTypeName, "\"bf16\" or \"f16\"")},
    {"batch", &M::batch, kAnyKind, kAnyKind, kCallShape, range(1, kMax)},
    {"heads_q", &M::headsQ, kAttention, kAttention, 0, range(1, kMax)},
    {"heads_kv", &M::headsKV, kAttention, kAttention, 0, range(1, kMax)},
    {"heads", &M::headsQ, kQuantize, kQuantize, 0, range(1, kMax)},
    {"groups", &M::headsKV, kQuantize, kQuantize, 0, range(1, kMax)},
    {"seq_q", &M::seqQ, kAttention, kAttention, kCallShape, range(1, kMax)},
    {"seq_kv", &M::seqKV, kAttention, kAttention, kCallShape, range(1, kMax)},
    {"seq", &M::seqQ, kQuantize, kQuantize, 0, range(1, kMax)},
    {"head_dim", &M::headDim, kAnyKind, kAnyKind, 0, range(1, kMax)},
    {"head_dim_v", &M::headDimV, kAttention, kAttention, 0, range(1, kMax)},
    {"scale", &M::scale, kAttention, kAttention, 0,
     number(isValidScaleValue, "a positive finite number")},
    {"causal", &M::causal, kAttention, kAttention, 0, {}},
    {"window_left", &M::windowLeft, kAttention, 0, 0, range(kMin, kMax)},
    {"window_right", &M::windowRight, kAttention, 0, 0, range(kMin, kMax)},
    {"softcap", &M::softcap, kAttention, 0, 0,
     number(isValidSoftcap, "0 (none) or a positive finite number")},
    {"block_q", &M::blockQ, kAttention, 0, 0, range(0, kMax)},
    {"block_kv", &M::blockKV, kAttention, 0, 0, range(0, kMax)},
    {"rows_per_warp", &M::rowsPerWarp, kAttention, 0, 0, range(0, kMax)},
    {"varlen", &M::varlen, kAttention, 0, 0, {}},
    {"deterministic", &M::deterministic, kAttention, 0, 0, {}},
    {"rotation_seed", &M::rotationSeed, kQuantize, 0, 0, range(kMin, kMax)},
    {"tensor_maps", &M::tensorMaps, kAttention, 0, 0, {}},
    {"entry", &M::entry, kAnyKind, kAnyKind, kLaunchKey,
     text(isIdentifier, "a kernel symbol name")},
    {"grid", &M::grid, kAnyKind, kAnyKind, kLaunchKey | kCallShape,
     extents({uint32_t(kMaxGridX), kMaxGridYZ, kMaxGridYZ}, kMax)},
    {"persistent_blocks", &M::persistentBlocks, kForward, 0, 0,
     range(1, kMaxGridX)},
    {"block", &M::block, kAnyKind, kAnyKind, kLaunchKey,
     extents({kMaxBlockSize, kMaxBlockSize, 64}, kMaxBlockSize)},
    {"shared_bytes", &M::sharedBytes, kAnyKind, kAnyKind, kLaunchKey,
     range(0, INT32_MAX)},
    {"args", &M::args, kAnyKind, kAnyKind, kLaunchKey, {}},
    {"pre", &M::pre, kBackward | kQuantize, kBackward | kQuantize, 0, {}},
    {"post", &M::post, kBackward, kBackward, 0, {}},
    {"compiler", &M::compiler, kAnyKind, 0, 0,
     text(isNonEmpty, "a non-empty string")},
};

const KeySpec *findKey(std::string_view name) {
  for (const KeySpec &spec : kKeys)
    if (name == spec.name)
      return &spec;
  return nullptr;
}

/// "forward and backward" for kAttention.
std::string kindNames(unsigned kinds) {
  std::string names;
  for (KernelKind kind : kKinds)
    if (kinds & (1u << unsigned(kind)))
      names += (names.empty() ? "" : " and ") + std::string(toString(kind));
  return names;
}

std::string readKeys(const json &object, const std::string &path,
                     bool launchKeys, KernelMetadata &m);

/// Reads `value`, at `path`, into the member `spec` names (std::visit
/// picks the reader by the member's type): "" or the problem.
struct ValueReader {
  const Rule &rule;
  const json &value;
  const std::string &path;
  KernelMetadata &m;

  std::string wrong(const std::string &what) const {
    return expected(path, what, value);
  }
  bool isValidText() const {
    return value.is_string() &&
           rule.validText(value.get_ref<const std::string &>());
  }

  std::string operator()(std::string M::*field) const {
    if (!isValidText())
      return wrong(rule.expected);
    m.*field = value.get<std::string>();
    return "";
  }
  std::string operator()(KernelKind M::*field) const {
    if (!isValidText())
      return wrong(rule.expected);
    m.*field = *fromName(value.get_ref<const std::string &>(), kKinds);
    return "";
  }
  std::string operator()(DType M::*field) const {
    if (!isValidText())
      return wrong(rule.expected);
    m.*field = *fromName(value.get_ref<const std::string &>(), kDTypes);
    return "";
  }
  std::string operator()(int64_t M::*field) const {
    return readInteger(value, path, rule.min, rule.max, m.*field);
  }
  std::string operator()(uint32_t M::*field) const {
    int64_t v = 0;
    std::string problem = readInteger(value, path, rule.min, rule.max, v);
    if (problem.empty())
      m.*field = uint32_t(v); // In [0, INT32_MAX]: the rule's range.
    return problem;
  }
  std::string operator()(double M::*field) const {
    if (!value.is_number() || !rule.validNumber(value.get<double>()))
      return wrong(rule.expected);
    m.*field = value.get<double>();
    return "";
  }
  std::string operator()(bool M::*field) const {
    if (!value.is_boolean())
      return wrong("true or false");
    m.*field = value.get<bool>();
    return "";
  }
  std::string operator()(Dim3 M::*field) const {
    if (!value.is_array() || value.size() != 3)
      return wrong("[x, y, z]");
    const uint32_t most[3] = {rule.most.x, rule.most.y, rule.most.z};
    int64_t extent[3];
    for (size_t i = 0; i < 3; ++i)
      if (std::string problem =
              readInteger(value[i], path + "[" + std::to_string(i) + "]", 1,
                          most[i], extent[i]);
          !problem.empty())
        return problem;
    Dim3 dim{uint32_t(extent[0]), uint32_t(extent[1]), uint32_t(extent[2])};
    if (dim.product() > uint64_t(rule.max))
      return path + ": at most " + std::to_string(rule.max) + " threads, got " +
             std::to_string(dim.product());
    m.*field = dim;
    return "";
  }
  std::string operator()(std::vector<std::string> M::*field) const {
    if (!value.is_array())
      return wrong("an array of parameter names");
    std::vector<std::string> names;
    for (size_t i = 0; i < value.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      if (!value[i].is_string() ||
          !isIdentifier(value[i].get_ref<const std::string &>()))
        return expected(at, "a parameter name", value[i]);
      const std::string &name = value[i].get_ref<const std::string &>();
      // A size may be passed more than once (once per tensor it sizes).
      if (contains(names, name) && !isSizeParameter(name))
        return at + ": parameter '" + name + "' listed twice";
      names.push_back(name);
    }
    m.*field = std::move(names);
    return "";
  }
  std::string operator()(std::vector<TensorMapParam> M::*field) const {
    return readTensorMaps(value, path, m.*field);
  }
  std::string operator()(LaunchSpec M::*field) const {
    if (!value.is_object())
      return wrong("an object of launch keys");
    KernelMetadata launch;
    launch.kind = m.kind;
    launch.runtimeShapes = m.runtimeShapes;
    if (std::string problem = readKeys(value, path, true, launch);
        !problem.empty())
      return problem;
    m.*field = launch.mainLaunch();
    return "";
  }
};

/// Reads the keys of `object` into `m`: the top level's (`path` ""), or at
/// `path` a launch's (`launchKeys`). Refuses a key the table does not know
/// or does not give this kind of kernel, a value of the wrong type or range,
/// and a missing required key; "" or the first problem.
std::string readKeys(const json &object, const std::string &path,
                     bool launchKeys, KernelMetadata &m) {
  const unsigned kind = 1u << unsigned(m.kind);
  const std::string prefix = path.empty() ? "" : path + ".";
  auto applies = [&](const KeySpec &spec) {
    return !launchKeys || (spec.flags & kLaunchKey);
  };
  for (const auto &[key, value] : object.items()) {
    const KeySpec *spec = findKey(key);
    if (!spec || !applies(*spec))
      return prefix + quote(key) + ": unknown key";
    if (!(spec->kinds & kind))
      return prefix + quote(key) + ": not a key of a " + toString(m.kind) +
             " kernel (only of " + kindNames(spec->kinds) + " kernels)";
  }
  std::string missing;
  int missingCount = 0;
  for (const KeySpec &spec : kKeys) {
    if (!applies(spec) || !(spec.kinds & kind))
      continue;
    const bool callsOwn = m.runtimeShapes && (spec.flags & kCallShape);
    auto it = object.find(spec.name);
    if (it == object.end()) {
      if ((spec.required & kind) && !callsOwn) {
        missing += (missing.empty() ? "" : ", ") + quote(spec.name);
        ++missingCount;
      }
      continue;
    }
    if (callsOwn)
      return prefix + quote(spec.name) +
             ": the call's for a kernel with runtime shapes "
             "(\"runtime_shapes\": true)";
    if (std::string problem = std::visit(
            ValueReader{spec.rule, *it, prefix + quote(spec.name), m},
            spec.field);
        !problem.empty())
      return problem;
  }
  if (missing.empty())
    return "";
  return (path.empty() ? "" : path + ": ") + "missing required key" +
         (missingCount > 1 ? "s" : "") + " of a " + toString(m.kind) +
         (launchKeys ? " kernel's launch: " : " kernel: ") + missing;
}

/// nlohmann's parse() without exceptions (which abort here) says only that
/// a text is no JSON; its SAX interface also says where and why.
struct SyntaxErrorLocator {
  std::string problem = "not valid JSON";

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t &) {
    return true;
  }
  bool string(json::string_t &) { return true; }
  bool binary(json::binary_t &) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(json::string_t &) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  template <class Exception>
  bool parse_error(std::size_t byte, const std::string &, const Exception &e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2:
    // syntax error while parsing value - ...; last read: '...'". The token
    // read is the file's: printable ASCII only, and not all of it.
    std::string what = e.what();
    size_t id = what.find("] ");
    what = what.substr(id == std::string::npos ? 0 : id + 2, 200);
    for (char &c : what)
      c = c >= 0x20 && c < 0x7f ? c : '?';
    problem += " at byte " + std::to_string(byte) + ": " + what;
    return false;
  }
};

/// Parses `text` into `doc`: "" or the problem (a syntax error, where; a key
/// set twice in one object, which nlohmann would take the last of, so that
/// a file could show a reader one value and give the runtime another).
std::string parseJson(std::string_view text, json &doc) {
  if (text.size() > kMaxMetadataBytes)
    return "metadata of " + std::to_string(text.size()) + " bytes; at most " +
           std::to_string(kMaxMetadataBytes);
  // Each open object: its keys so far and the current one.
  std::vector<std::pair<std::set<std::string>, std::string>> open;
  std::string duplicate;
  auto trackKeys = [&](int, json::parse_event_t event, json &parsed) {
    if (event == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (event == json::parse_event_t::object_end && !open.empty()) {
      open.pop_back();
    } else if (event == json::parse_event_t::key && !open.empty()) {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!open.back().first.insert(key).second && duplicate.empty()) {
        for (size_t i = 0; i + 1 < open.size(); ++i)
          duplicate += quote(open[i].second) + ".";
        duplicate += quote(key);
      }
      open.back().second = key;
    }
    return true;
  };
  const char *begin = text.data(), *end = text.data() + text.size();
  doc = json::parse(begin, end, trackKeys, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    SyntaxErrorLocator locator;
    json::sax_parse(begin, end, &locator);
    return locator.problem;
  }
  if (!duplicate.empty())
    return duplicate + ": key set twice";
  return "";
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
  json doc;
  if (std::string problem = parseJson(text, doc); !problem.empty())
    return Status::error(problem);
  if (!doc.is_object())
    return Status::error("expected a JSON object, got " + show(doc));
  // The kind first: which keys the others may be depends on it.
  KernelMetadata m;
  auto kind = doc.find("kind");
  if (kind == doc.end())
    return Status::error("missing required key: \"kind\"");
  std::string problem = std::visit(
      ValueReader{kKeys[0].rule, *kind, "\"kind\"", m}, kKeys[0].field);
  if (problem.empty())
    problem = readKeys(doc, "", false, m);
  if (!problem.empty())
    return Status::error(problem);
  m.rotated = doc.contains("rotation_seed");
  // Any negative window bound means unbounded.
  m.windowLeft = std::max<int64_t>(m.windowLeft, -1);
  m.windowRight = std::max<int64_t>(m.windowRight, -1);

  if (m.kind == KernelKind::Quantize) {
    FA_RT_RETURN_IF_ERROR(finishQuantize(m));
  } else {
    FA_RT_RETURN_IF_ERROR(checkAttentionFlags(m, doc.contains("out_dtype")));
    FA_RT_RETURN_IF_ERROR(checkTensorMaps(m));
    FA_RT_RETURN_IF_ERROR(checkLaunchParameters(m));
  }
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

Status readKernelMetadataFile(const std::string &path, KernelMetadata &out,
                              std::string *text) {
  std::string read;
  std::string &kept = text ? *text : read;
  FA_RT_RETURN_IF_ERROR(readFile(path, kept));
  return parseKernelMetadata(kept, out).withContext(path);
}

} // namespace fa::rt
