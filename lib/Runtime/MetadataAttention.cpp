//===- MetadataAttention.cpp - An attention kernel's .meta checks ---------===//
//
// The cross-checks a forward or backward .meta gets after parsing
// (Metadata.cpp reads the keys the key table knows, and which kernels
// have them; MetadataTensorMaps.cpp the tensor maps; MetadataQuantize.cpp a
// quantization's).
//
//===----------------------------------------------------------------------===//

#include "MetadataAttention.h"

#include "MetadataSyntax.h"

namespace fa::rt {

using namespace detail;

namespace {

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

Status detail::checkAttentionFlags(KernelMetadata &m, bool outDtypeGiven) {
  if (m.runtimeShapes) {
    if (m.blockQ < 1)
      return Status::error("\"runtime_shapes\": a kernel with runtime shapes "
                           "needs \"block_q\" (its grid is ceil(seq_q / "
                           "block_q))");
    if (m.kind == KernelKind::Backward && m.blockKV < 1)
      return Status::error("\"runtime_shapes\": a backward with runtime "
                           "shapes needs \"block_kv\" (its grid is "
                           "ceil(seq_kv / block_kv))");
  }
  if (m.varlen && !m.runtimeShapes)
    return Status::error("\"varlen\": packed sequences need "
                         "\"runtime_shapes\": true");
  // A static persistent kernel's grid is already its launch.
  if (m.persistentBlocks > 0 && (!m.runtimeShapes || m.varlen))
    return Status::error("\"persistent_blocks\": a persistent grid's "
                         "blocks are a kernel with runtime shapes' (not "
                         "packed sequences); a static kernel's \"grid\" is "
                         "its launch");
  // FP8: a forward of e4m3 inputs, its output type given, its descales
  // taken; out_dtype means nothing for other kernels.
  if (m.isFP8()) {
    if (m.kind != KernelKind::Forward || m.varlen)
      return Status::error("\"dtype\": e4m3 inputs are a dense forward "
                           "kernel's");
    if (!outDtypeGiven)
      return Status::error("\"dtype\": a kernel of e4m3 inputs needs "
                           "\"out_dtype\" (bf16 or f16)");
    for (const char *descale : {"q_descale", "k_descale", "v_descale"})
      if (!contains(m.args, descale))
        return Status::error(std::string("\"args\": a kernel of e4m3 inputs "
                                         "must take '") +
                             descale + "'");
  } else if (outDtypeGiven) {
    return Status::error("\"out_dtype\": only kernels of e4m3 inputs "
                         "(\"dtype\": \"e4m3\") name their output type");
  } else {
    m.outDtype = m.dtype;
  }
  if (m.varlen !=
      (contains(m.args, "cu_seqlens_q") && contains(m.args, "cu_seqlens_k")))
    return Status::error(m.varlen ? "\"args\": a varlen kernel must take "
                                    "'cu_seqlens_q' and 'cu_seqlens_k'"
                                  : "\"args\": 'cu_seqlens_q' and "
                                    "'cu_seqlens_k' are a varlen kernel's "
                                    "(\"varlen\": true)");
  if (m.deterministic) {
    if (m.kind != KernelKind::Backward)
      return Status::error("\"deterministic\": only backward kernels are "
                           "deterministic");
    if (m.blockQ < 1)
      return Status::error("\"deterministic\": a deterministic backward "
                           "needs \"block_q\" (its dq_turns are one per Q "
                           "block)");
  }
  if (contains(m.args, "dq_turns") != m.deterministic)
    return Status::error(m.deterministic
                             ? "\"args\": a deterministic backward must take "
                               "'dq_turns'"
                             : "\"args\": 'dq_turns' is a deterministic "
                               "backward's (\"deterministic\": true)");
  if (m.headsQ % m.headsKV != 0)
    return Status::error(
        "\"heads_q\": " + std::to_string(m.headsQ) +
        " is not a multiple of \"heads_kv\": " + std::to_string(m.headsKV));
  return Status::success();
}

Status detail::checkLaunchParameters(const KernelMetadata &m) {
  if (m.kind == KernelKind::Backward) {
    struct Check {
      const char *key;
      const std::vector<std::string> *args;
      std::vector<const char *> needed;
    };
    const Check checks[] = {{"\"args\"",
                             &m.args,
                             {"q", "k", "v", "do", "lse", "delta", "dk", "dv"}},
                            {"\"pre\".\"args\"", &m.pre.args, {"do", "delta"}},
                            {"\"post\".\"args\"", &m.post.args, {"dq"}}};
    for (const Check &c : checks) {
      for (const std::string &arg : *c.args)
        if (!isBackwardParameter(arg) && !m.findTensorMap(arg) &&
            !isCallParameter(m, arg))
          return Status::error(
              std::string(c.key) + ": unknown backward kernel parameter '" +
              arg + "' (known: " +
              knownParameters(m, "q, k, v, o, do, lse, dlse, delta, dq_acc, "
                                 "dq, dk, dv, dq_turns" +
                                     callParameterNames(m)) +
              ")");
      for (const char *needed : c.needed)
        if (!contains(*c.args, needed))
          return Status::error(std::string(c.key) +
                               ": this backward kernel must take '" + needed +
                               "'");
    }
    if (m.pre.entry == m.entry || m.post.entry == m.entry ||
        m.pre.entry == m.post.entry)
      return Status::error("\"entry\", \"pre\".\"entry\" and "
                           "\"post\".\"entry\" must name three different "
                           "kernels");
  }
  if (m.kind == KernelKind::Forward) {
    for (const std::string &arg : m.args)
      if (arg != "q" && arg != "k" && arg != "v" && arg != "o" &&
          arg != "lse" && !(m.isFP8() && isDescaleParameter(arg)) &&
          !m.findTensorMap(arg) && !isCallParameter(m, arg))
        return Status::error(
            "\"args\": unknown forward kernel parameter '" + arg +
            "' (known: " +
            knownParameters(m, std::string("q, k, v, o, lse") +
                                   (m.isFP8() ? ", q_descale, k_descale, "
                                                "v_descale"
                                              : "") +
                                   callParameterNames(m)) +
            ")");
    for (const char *needed : {"q", "k", "v", "o"})
      if (!m.hasArg(needed))
        return Status::error(std::string("\"args\": a forward kernel must "
                                         "take '") +
                             needed + "'");
  }
  return Status::success();
}

} // namespace fa::rt
