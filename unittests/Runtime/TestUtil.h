//===- TestUtil.h - Shared helpers of the runtime tests ---------*- C++ -*-===//

#ifndef FA_UNITTESTS_RUNTIME_TESTUTIL_H
#define FA_UNITTESTS_RUNTIME_TESTUTIL_H

#include "fa/Runtime/Metadata.h"

#include <gtest/gtest.h>

#include <string>

namespace fa::rt::test {

/// A complete, valid forward .meta text (the example from the ABI docs).
inline std::string goodMetaText() {
  return "kind = forward            # or backward (later)\n"
         "entry = fa_fwd            # kernel symbol in the PTX\n"
         "chip = sm_90\n"
         "dtype = bf16              # bf16 | f16\n"
         "batch = 2\n"
         "heads_q = 8\n"
         "heads_kv = 2\n"
         "seq_q = 1024\n"
         "seq_kv = 1024\n"
         "head_dim = 128\n"
         "head_dim_v = 128\n"
         "scale = 0.08838834764831845\n"
         "causal = 1\n"
         "window_left = -1          # -1 = unbounded\n"
         "window_right = -1\n"
         "softcap = 0               # 0 = none\n"
         "block_q = 64\n"
         "block_kv = 64\n"
         "grid = 16,8,2\n"
         "block = 128,1,1\n"
         "shared_bytes = 49152\n"
         "args = q,k,v,o,lse\n";
}

/// A complete, valid backward .meta text (as fa-compile --backward writes).
inline std::string goodBackwardMetaText() {
  return "kind = backward\n"
         "chip = sm_90\n"
         "dtype = bf16\n"
         "batch = 2\n"
         "heads_q = 8\n"
         "heads_kv = 2\n"
         "seq_q = 300\n"
         "seq_kv = 200\n"
         "head_dim = 64\n"
         "head_dim_v = 64\n"
         "scale = 0.125\n"
         "causal = 1\n"
         "window_left = -1\n"
         "window_right = -1\n"
         "softcap = 0\n"
         "block_q = 64\n"
         "block_kv = 64\n"
         "rows_per_warp = 16\n"
         "entry = fa_bwd\n"
         "grid = 4,2,2\n"
         "block = 128,1,1\n"
         "shared_bytes = 46592\n"
         "args = q,k,v,do,lse,delta,dq_acc,dk,dv\n"
         "pre_entry = fa_bwd_pre\n"
         "pre_grid = 75,8,2\n"
         "pre_block = 128,1,1\n"
         "pre_shared_bytes = 0\n"
         "pre_args = o,do,delta,dq_acc\n"
         "post_entry = fa_bwd_post\n"
         "post_grid = 75,8,2\n"
         "post_block = 128,1,1\n"
         "post_shared_bytes = 0\n"
         "post_args = dq_acc,dq\n"
         "compiler = flashmlir-0.1+0123456789ab\n";
}

/// Parses text that must be valid.
inline KernelMetadata parseOrDie(const std::string &text) {
  KernelMetadata m;
  Status s = parseKernelMetadata(text, m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

/// `text` with the line that sets `key` replaced by `line` ("" removes it).
inline std::string withLine(std::string text, const std::string &key,
                            const std::string &line) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string current = text.substr(pos, nl - pos);
    if (current.compare(0, key.size() + 1, key + " ") == 0 ||
        current.compare(0, key.size() + 1, key + "=") == 0) {
      text.replace(pos, nl - pos + 1, line.empty() ? "" : line + "\n");
      return text;
    }
    pos = nl + 1;
  }
  ADD_FAILURE() << "no line for key " << key;
  return text;
}

} // namespace fa::rt::test

#endif // FA_UNITTESTS_RUNTIME_TESTUTIL_H
