//===- TestUtil.h - Shared helpers of the runtime tests ---------*- C++ -*-===//

#ifndef FA_UNITTESTS_RUNTIME_TESTUTIL_H
#define FA_UNITTESTS_RUNTIME_TESTUTIL_H

#include "fa/Runtime/Metadata.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace fa::rt::test {

/// A .meta file as the tests edit it: keys in the order written.
using MetaJson = nlohmann::ordered_json;

/// A complete, valid forward .meta (the example from the ABI docs).
inline MetaJson goodMeta() {
  return MetaJson::parse(R"({
    "kind": "forward",
    "entry": "fa_fwd",
    "chip": "sm_90",
    "dtype": "bf16",
    "batch": 2,
    "heads_q": 8,
    "heads_kv": 2,
    "seq_q": 1024,
    "seq_kv": 1024,
    "head_dim": 128,
    "head_dim_v": 128,
    "scale": 0.08838834764831845,
    "causal": true,
    "window_left": -1,
    "window_right": -1,
    "softcap": 0.0,
    "block_q": 64,
    "block_kv": 64,
    "grid": [16, 8, 2],
    "block": [128, 1, 1],
    "shared_bytes": 49152,
    "args": ["q", "k", "v", "o", "lse"]
  })");
}

/// A complete, valid backward .meta (as fa-compile --backward writes).
inline MetaJson goodBackwardMeta() {
  return MetaJson::parse(R"({
    "kind": "backward",
    "chip": "sm_90",
    "dtype": "bf16",
    "batch": 2,
    "heads_q": 8,
    "heads_kv": 2,
    "seq_q": 300,
    "seq_kv": 200,
    "head_dim": 64,
    "head_dim_v": 64,
    "scale": 0.125,
    "causal": true,
    "window_left": -1,
    "window_right": -1,
    "softcap": 0.0,
    "block_q": 64,
    "block_kv": 64,
    "rows_per_warp": 16,
    "entry": "fa_bwd",
    "grid": [4, 2, 2],
    "block": [128, 1, 1],
    "shared_bytes": 46592,
    "args": ["q", "k", "v", "do", "lse", "delta", "dq_acc", "dk", "dv"],
    "pre": {
      "entry": "fa_bwd_pre",
      "grid": [75, 8, 2],
      "block": [128, 1, 1],
      "shared_bytes": 0,
      "args": ["o", "do", "delta", "dq_acc"]
    },
    "post": {
      "entry": "fa_bwd_post",
      "grid": [75, 8, 2],
      "block": [128, 1, 1],
      "shared_bytes": 0,
      "args": ["dq_acc", "dq"]
    },
    "compiler": "flashmlir-0.1+0123456789ab"
  })");
}

/// `meta` with `patch` merged in (RFC 7396: a null removes its key, an
/// object merges into the object of its key, anything else replaces).
inline MetaJson patched(MetaJson meta, const MetaJson &patch) {
  meta.merge_patch(patch);
  return meta;
}

/// Parses text that must be valid.
inline KernelMetadata parseOrDie(const std::string &text) {
  KernelMetadata m;
  Status s = parseKernelMetadata(text, m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

inline KernelMetadata parseOrDie(const MetaJson &meta) {
  return parseOrDie(meta.dump(2));
}

/// The message of parsing `meta`, which must fail.
inline std::string parseError(const MetaJson &meta) {
  KernelMetadata m;
  Status s = parseKernelMetadata(meta.dump(2), m);
  EXPECT_FALSE(s.ok()) << "accepted: " << meta.dump(2);
  return s.message();
}

} // namespace fa::rt::test

#endif // FA_UNITTESTS_RUNTIME_TESTUTIL_H
