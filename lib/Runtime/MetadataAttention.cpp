//===- MetadataAttention.cpp - An attention kernel's .meta checks ---------===//
//
// The cross-checks a forward or backward .meta gets after parsing
// (Metadata.cpp reads the lines and checks the key table's required and
// launch keys; MetadataTensorMaps.cpp the tensor maps;
// MetadataQuantize.cpp a quantization's).
//
//===----------------------------------------------------------------------===//

#include "MetadataAttention.h"

#include "MetadataSyntax.h"

namespace fa::rt {

using namespace detail;

namespace {

/// " (line N)" for `key` (0 where it was not set).
std::string lineOf(const std::map<std::string, int> &seenOnLine,
                   const char *key) {
  auto it = seenOnLine.find(key);
  return " (line " + std::to_string(it == seenOnLine.end() ? 0 : it->second) +
         ")";
}

/// An FP8 forward's per (batch, KV head) factors of q, k and v.
bool isDescaleParameter(std::string_view name) {
  return name == "q_descale" || name == "k_descale" || name == "v_descale";
}

bool isBackwardParameter(std::string_view name) {
  for (const char *known : {"q", "k", "v", "o", "do", "lse", "dlse", "delta",
                            "dq_acc", "dq", "dk", "dv", "dq_turns"})
    if (name == known)
      return true;
  return false;
}

/// "q, k, v, o, lse" plus the kernel's tensor map parameters.
std::string knownParameters(const KernelMetadata &m, std::string known) {
  for (const TensorMapParam &map : m.tensorMaps)
    known += ", " + map.paramName();
  return known;
}

/// Whether `arg` is a parameter a call supplies beyond its tensors: the
/// sizes of a kernel with runtime shapes, a varlen kernel's offsets.
bool isCallParameter(const KernelMetadata &m, std::string_view arg) {
  return (m.runtimeShapes && isSizeParameter(arg) &&
          (arg != "seq_offsets" || m.varlen)) ||
         (m.varlen && (arg == "cu_seqlens_q" || arg == "cu_seqlens_k"));
}

/// Their names, for messages: ", cu_seqlens_q, ...".
std::string callParameterNames(const KernelMetadata &m) {
  return std::string(m.varlen ? ", cu_seqlens_q, cu_seqlens_k" : "") +
         (m.runtimeShapes ? ", batch, seq_q, seq_kv" : "") +
         (m.varlen ? ", seq_offsets" : "");
}

} // namespace

bool detail::isCallShapeKey(std::string_view key) {
  return key == "batch" || key == "seq_q" || key == "seq_kv" || key == "grid" ||
         key == "pre_grid" || key == "post_grid";
}

Status
detail::checkAttentionFlags(KernelMetadata &m,
                            const std::map<std::string, int> &seenOnLine) {
  auto at = [&](const char *key) { return lineOf(seenOnLine, key); };
  if (m.runtimeShapes) {
    for (const auto &[key, line] : seenOnLine)
      if (isCallShapeKey(key))
        return Status::error("line " + std::to_string(line) + ": key '" + key +
                             "' is the call's for a kernel with runtime "
                             "shapes (runtime_shapes = 1" +
                             at("runtime_shapes") + ")");
    if (m.blockQ < 1)
      return Status::error("runtime_shapes" + at("runtime_shapes") +
                           ": a kernel with runtime shapes needs block_q "
                           "(its grid is ceil(seq_q / block_q))");
    if (m.kind == KernelKind::Backward && m.blockKV < 1)
      return Status::error("runtime_shapes" + at("runtime_shapes") +
                           ": a backward with runtime shapes needs block_kv "
                           "(its grid is ceil(seq_kv / block_kv))");
  }
  if (m.varlen && !m.runtimeShapes)
    return Status::error("varlen" + at("varlen") +
                         ": packed sequences need runtime_shapes = 1");
  // FP8: a forward of e4m3 inputs, its output type given, its descales
  // taken; out_dtype means nothing for other kernels.
  if (m.isFP8()) {
    if (m.kind != KernelKind::Forward || m.varlen)
      return Status::error("dtype" + at("dtype") +
                           ": e4m3 inputs are a dense forward kernel's");
    if (!seenOnLine.count("out_dtype"))
      return Status::error("dtype" + at("dtype") +
                           ": a kernel of e4m3 inputs needs out_dtype "
                           "(bf16 or f16)");
    for (const char *descale : {"q_descale", "k_descale", "v_descale"})
      if (!contains(m.args, descale))
        return Status::error(std::string("args") + at("args") +
                             ": a kernel of e4m3 inputs must take '" + descale +
                             "'");
  } else if (seenOnLine.count("out_dtype")) {
    return Status::error("out_dtype" + at("out_dtype") +
                         ": only kernels of e4m3 inputs (dtype = e4m3) "
                         "name their output type");
  } else {
    m.outDtype = m.dtype;
  }
  if (m.varlen !=
      (contains(m.args, "cu_seqlens_q") && contains(m.args, "cu_seqlens_k")))
    return Status::error(std::string("args") + at("args") +
                         (m.varlen ? ": a varlen kernel must take "
                                     "'cu_seqlens_q' and 'cu_seqlens_k'"
                                   : ": 'cu_seqlens_q' and 'cu_seqlens_k' are "
                                     "a varlen kernel's (varlen = 1)"));
  if (m.deterministic) {
    if (m.kind != KernelKind::Backward)
      return Status::error("deterministic" + at("deterministic") +
                           ": only backward kernels are deterministic");
    if (m.blockQ < 1)
      return Status::error("deterministic" + at("deterministic") +
                           ": a deterministic backward needs block_q (its "
                           "dq_turns are one per Q block)");
  }
  if (contains(m.args, "dq_turns") != m.deterministic)
    return Status::error(std::string("args") + at("args") +
                         (m.deterministic
                              ? ": a deterministic backward must take "
                                "'dq_turns'"
                              : ": 'dq_turns' is a deterministic backward's "
                                "(deterministic = 1)"));
  if (m.headsQ % m.headsKV != 0)
    return Status::error("heads_q = " + std::to_string(m.headsQ) +
                         at("heads_q") + " is not a multiple of heads_kv = " +
                         std::to_string(m.headsKV) + at("heads_kv"));
  return Status::success();
}

Status
detail::checkLaunchParameters(const KernelMetadata &m,
                              const std::map<std::string, int> &seenOnLine) {
  auto at = [&](const char *key) { return lineOf(seenOnLine, key); };
  if (m.kind == KernelKind::Backward) {
    struct Check {
      const char *key;
      const std::vector<std::string> *args;
      std::vector<const char *> needed;
    };
    const Check checks[] = {
        {"args", &m.args, {"q", "k", "v", "do", "lse", "delta", "dk", "dv"}},
        {"pre_args", &m.pre.args, {"do", "delta"}},
        {"post_args", &m.post.args, {"dq"}}};
    for (const Check &c : checks) {
      for (const std::string &arg : *c.args)
        if (!isBackwardParameter(arg) && !m.findTensorMap(arg) &&
            !isCallParameter(m, arg))
          return Status::error(
              std::string(c.key) + at(c.key) +
              ": unknown backward kernel parameter '" + arg + "' (known: " +
              knownParameters(m, "q, k, v, o, do, lse, dlse, delta, dq_acc, "
                                 "dq, dk, dv, dq_turns" +
                                     callParameterNames(m)) +
              ")");
      for (const char *needed : c.needed)
        if (!contains(*c.args, needed))
          return Status::error(std::string(c.key) + at(c.key) +
                               ": this backward kernel must take '" + needed +
                               "'");
    }
    if (m.pre.entry == m.entry || m.post.entry == m.entry ||
        m.pre.entry == m.post.entry)
      return Status::error("entry" + at("entry") + ", pre_entry" +
                           at("pre_entry") + " and post_entry" +
                           at("post_entry") +
                           " must name three different "
                           "kernels");
  }
  if (m.kind == KernelKind::Forward) {
    for (const std::string &arg : m.args)
      if (arg != "q" && arg != "k" && arg != "v" && arg != "o" &&
          arg != "lse" && !(m.isFP8() && isDescaleParameter(arg)) &&
          !m.findTensorMap(arg) && !isCallParameter(m, arg))
        return Status::error(
            "args" + at("args") + ": unknown forward kernel parameter '" + arg +
            "' (known: " +
            knownParameters(m, std::string("q, k, v, o, lse") +
                                   (m.isFP8() ? ", q_descale, k_descale, "
                                                "v_descale"
                                              : "") +
                                   callParameterNames(m)) +
            ")");
    for (const char *needed : {"q", "k", "v", "o"})
      if (!m.hasArg(needed))
        return Status::error("args" + at("args") +
                             ": a forward kernel must take '" + needed + "'");
  }
  return Status::success();
}

} // namespace fa::rt
