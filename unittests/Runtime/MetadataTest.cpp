//===- MetadataTest.cpp - .meta parsing -----------------------------------===//

#include "TestUtil.h"

#include "fa/Runtime/Metadata.h"

#include <gtest/gtest.h>

#include <ostream>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

TEST(RuntimeMetadata, ParsesGoodFile) {
  KernelMetadata m = parseOrDie(goodMetaText());
  EXPECT_EQ(m.kind, KernelKind::Forward);
  EXPECT_EQ(m.entry, "fa_fwd");
  EXPECT_EQ(m.chip, "sm_90");
  EXPECT_EQ(m.chipVersion(), 90);
  EXPECT_FALSE(m.chipIsArchSpecific());
  EXPECT_EQ(m.dtype, DType::BF16);
  EXPECT_EQ(m.batch, 2);
  EXPECT_EQ(m.headsQ, 8);
  EXPECT_EQ(m.headsKV, 2);
  EXPECT_EQ(m.seqQ, 1024);
  EXPECT_EQ(m.seqKV, 1024);
  EXPECT_EQ(m.headDim, 128);
  EXPECT_EQ(m.headDimV, 128);
  EXPECT_DOUBLE_EQ(m.scale, 0.08838834764831845);
  EXPECT_TRUE(m.causal);
  EXPECT_EQ(m.windowLeft, -1);
  EXPECT_EQ(m.windowRight, -1);
  EXPECT_FALSE(m.hasWindow());
  EXPECT_FALSE(m.hasSoftcap());
  EXPECT_EQ(m.blockQ, 64);
  EXPECT_EQ(m.blockKV, 64);
  EXPECT_EQ(m.grid.x, 16u);
  EXPECT_EQ(m.grid.y, 8u);
  EXPECT_EQ(m.grid.z, 2u);
  EXPECT_EQ(m.block.product(), 128u);
  EXPECT_EQ(m.sharedBytes, 49152u);
  EXPECT_EQ(m.args, (std::vector<std::string>{"q", "k", "v", "o", "lse"}));
  EXPECT_TRUE(m.hasArg("lse"));
  EXPECT_FALSE(m.hasArg("dq"));
}

TEST(RuntimeMetadata, OptionalKeysDefaultAndFormattingIsLenient) {
  std::string text = goodMetaText();
  for (const char *key :
       {"window_left", "window_right", "softcap", "block_q", "block_kv"})
    text = withLine(text, key, "");
  text = withLine(text, "grid", "grid=16, 8 ,2");
  text = withLine(text, "dtype", "   dtype\t=\tf16   ");
  text = withLine(text, "causal", "causal = false");
  text = "# a comment line\n\n" + text + "\r\n";
  KernelMetadata m = parseOrDie(text);
  EXPECT_EQ(m.windowLeft, -1);
  EXPECT_EQ(m.windowRight, -1);
  EXPECT_EQ(m.softcap, 0.0);
  EXPECT_EQ(m.blockQ, 0);
  EXPECT_EQ(m.grid.y, 8u);
  EXPECT_EQ(m.dtype, DType::F16);
  EXPECT_FALSE(m.causal);
}

TEST(RuntimeMetadata, WindowSoftcapAndArchSpecificChip) {
  std::string text = goodMetaText();
  text = withLine(text, "window_left", "window_left = 128");
  text = withLine(text, "window_right", "window_right = -7");
  text = withLine(text, "softcap", "softcap = 30.0");
  text = withLine(text, "chip", "chip = sm_90a");
  KernelMetadata m = parseOrDie(text);
  EXPECT_EQ(m.windowLeft, 128);
  EXPECT_EQ(m.windowRight, -1); // Any negative bound is normalised.
  EXPECT_TRUE(m.hasWindow());
  EXPECT_DOUBLE_EQ(m.softcap, 30.0);
  EXPECT_EQ(m.chipVersion(), 90);
  EXPECT_TRUE(m.chipIsArchSpecific());
}

TEST(RuntimeMetadata, ConfigStringIsCanonical) {
  KernelMetadata a = parseOrDie(goodMetaText());
  // Same ABI written differently: same config string.
  std::string reordered = "args = q,k,v,o,lse\n" +
                          withLine(goodMetaText(), "args", "") +
                          "# trailing comment\n";
  KernelMetadata b = parseOrDie(reordered);
  EXPECT_EQ(a.configString(), b.configString());
  EXPECT_NE(a.configString().find("scale=0.08838834764831845"),
            std::string::npos);
  // Any difference shows.
  KernelMetadata c =
      parseOrDie(withLine(goodMetaText(), "seq_kv", "seq_kv = 2048"));
  EXPECT_NE(a.configString(), c.configString());
  KernelMetadata d = parseOrDie(
      withLine(goodMetaText(), "scale", "scale = 0.088388347648318"));
  EXPECT_NE(a.configString(), d.configString());
}

struct BadCase {
  const char *key;  ///< Line to replace (nullptr: append `line`).
  const char *line; ///< Replacement ("" removes the line).
  const char *expected;
};

void PrintTo(const BadCase &c, std::ostream *os) {
  *os << "'" << c.line << "'";
}

class RuntimeMetadataError : public ::testing::TestWithParam<BadCase> {};

TEST_P(RuntimeMetadataError, IsReportedWithLocation) {
  const BadCase &c = GetParam();
  std::string text = goodMetaText();
  if (c.key)
    text = withLine(text, c.key, c.line);
  else
    text += std::string(c.line) + "\n";
  KernelMetadata m;
  Status s = parseKernelMetadata(text, m);
  ASSERT_FALSE(s.ok()) << "accepted: " << text;
  EXPECT_NE(s.message().find(c.expected), std::string::npos)
      << "message: " << s.message() << "\nexpected to contain: " << c.expected;
}

// Lines of goodMetaText(): 1 kind, 2 entry, 3 chip, 4 dtype, 5 batch,
// 6 heads_q, 7 heads_kv, 8 seq_q, 9 seq_kv, 10 head_dim, 11 head_dim_v,
// 12 scale, 13 causal, 14 window_left, 15 window_right, 16 softcap,
// 17 block_q, 18 block_kv, 19 grid, 20 block, 21 shared_bytes, 22 args.
const BadCase kBadCases[] = {
    {"heads_kv", "foo = 3", "line 7: unknown key 'foo'"},
    {nullptr, "bar = 1", "line 23: unknown key 'bar'"},
    {"batch", "batch 2", "line 5: expected 'key = value', got 'batch 2'"},
    {"batch", "= 2", "line 5: missing key before '='"},
    {"batch", "batch =   # nothing", "line 5: missing value for 'batch'"},
    {nullptr, "seq_q = 1024",
     "line 23: duplicate key 'seq_q' (first set on line 8)"},
    {"batch", "batch = two",
     "line 5: bad value for 'batch': expected a positive integer, got 'two'"},
    {"batch", "batch = 0", "line 5: bad value for 'batch'"},
    {"batch", "batch = -2", "line 5: bad value for 'batch'"},
    {"seq_q", "seq_q = 1024.0", "line 8: bad value for 'seq_q'"},
    {"seq_q", "seq_q = 99999999999999999999", "line 8: bad value for 'seq_q'"},
    {"head_dim", "head_dim = 12x", "line 10: bad value for 'head_dim'"},
    {"kind", "kind = sideways", "line 1: bad value for 'kind'"},
    {"entry", "entry = fa fwd", "line 2: bad value for 'entry'"},
    {"chip", "chip = gfx90a", "line 3: bad value for 'chip'"},
    {"chip", "chip = sm_", "line 3: bad value for 'chip'"},
    {"dtype", "dtype = f32",
     "line 4: bad value for 'dtype': expected 'bf16', "
     "'f16' or 'e4m3', got 'f32'"},
    // FP8: the output's type and the descales are required; out_dtype is
    // an FP8 kernel's only, and never e4m3 itself.
    {"dtype", "dtype = e4m3",
     "dtype (line 4): a kernel of e4m3 inputs needs out_dtype"},
    {nullptr, "out_dtype = bf16",
     "out_dtype (line 23): only kernels of e4m3 inputs"},
    {nullptr, "out_dtype = e4m3",
     "line 23: bad value for 'out_dtype': expected 'bf16' or 'f16'"},
    {"scale", "scale = -0.1", "line 12: bad value for 'scale'"},
    {"scale", "scale = nan", "line 12: bad value for 'scale'"},
    {"scale", "scale = 1e999", "line 12: bad value for 'scale'"},
    {"scale", "scale = 0.1.2", "line 12: bad value for 'scale'"},
    {"causal", "causal = 2", "line 13: bad value for 'causal'"},
    {"window_left", "window_left = left",
     "line 14: bad value for "
     "'window_left'"},
    {"softcap", "softcap = -1", "line 16: bad value for 'softcap'"},
    {"block_q", "block_q = -64", "line 17: bad value for 'block_q'"},
    {"grid", "grid = 16,8", "line 19: bad value for 'grid'"},
    {"grid", "grid = 16,0,2", "line 19: bad value for 'grid'"},
    {"grid", "grid = 16,70000,2", "line 19: bad value for 'grid'"},
    {"block", "block = 2048,1,1", "line 20: bad value for 'block'"},
    {"block", "block = 64,64,1", "line 20: bad value for 'block'"},
    {"shared_bytes", "shared_bytes = lots",
     "line 21: bad value for "
     "'shared_bytes'"},
    {"shared_bytes", "shared_bytes = -1",
     "line 21: bad value for "
     "'shared_bytes'"},
    {"args", "args = q,k,,o", "line 22: bad value for 'args'"},
    {"args", "args = q,k,v,o,q",
     "line 22: bad value for 'args': parameter "
     "'q' listed twice"},
    {"args", "args = q,k,v,o,lse,dq",
     "args (line 22): unknown forward kernel parameter 'dq'"},
    {"args", "args = q,k,v,lse",
     "args (line 22): a forward kernel must take 'o'"},
    {"entry", "", "missing required key: entry"},
    {"grid", "", "missing required key: grid"},
    {"heads_kv", "heads_kv = 3",
     "heads_q = 8 (line 6) is not a multiple of heads_kv = 3 (line 7)"},
};

INSTANTIATE_TEST_SUITE_P(Cases, RuntimeMetadataError,
                         ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           std::string name = std::to_string(info.index) + "_";
                           name += info.param.key ? info.param.key : "appended";
                           return name;
                         });

TEST(RuntimeMetadata, ListsAllMissingKeys) {
  std::string text = withLine(goodMetaText(), "entry", "");
  text = withLine(text, "grid", "");
  KernelMetadata m;
  Status s = parseKernelMetadata(text, m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "missing required keys: entry, grid");
  s = parseKernelMetadata("", m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("missing required keys: kind, entry, chip", 0),
            0u)
      << s.message();
}

TEST(RuntimeMetadata, BackwardKernelsParse) {
  KernelMetadata m = parseOrDie(goodBackwardMetaText());
  EXPECT_EQ(m.kind, KernelKind::Backward);
  EXPECT_EQ(m.entry, "fa_bwd");
  EXPECT_EQ(m.args.size(), 9u);
  EXPECT_EQ(m.sharedBytes, 46592u);
  EXPECT_EQ(m.pre.entry, "fa_bwd_pre");
  EXPECT_EQ(m.pre.grid.x, 75u);
  EXPECT_EQ(m.pre.grid.y, 8u);
  EXPECT_EQ(m.pre.grid.z, 2u);
  EXPECT_EQ(m.pre.block.product(), 128u);
  EXPECT_EQ(m.pre.sharedBytes, 0u);
  EXPECT_EQ(m.pre.args,
            (std::vector<std::string>{"o", "do", "delta", "dq_acc"}));
  EXPECT_EQ(m.post.entry, "fa_bwd_post");
  EXPECT_EQ(m.post.args, (std::vector<std::string>{"dq_acc", "dq"}));
  std::vector<LaunchSpec> launches = m.launches();
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].entry, "fa_bwd_pre");
  EXPECT_EQ(launches[1].entry, "fa_bwd");
  EXPECT_EQ(launches[1].grid.x, 4u);
  EXPECT_EQ(launches[2].entry, "fa_bwd_post");
  // A forward kernel has one launch and empty pre/post.
  KernelMetadata f = parseOrDie(goodMetaText());
  EXPECT_EQ(f.launches().size(), 1u);
  EXPECT_TRUE(f.pre.entry.empty());
}

/// configString() as .meta text: one `key = value` per line.
std::string configAsMeta(const std::string &config) {
  std::string text;
  for (char c : config)
    text += c == ';' ? '\n' : c;
  return text + "\n";
}

TEST(RuntimeMetadata, BackwardConfigStringIsCanonicalAndRoundTrips) {
  KernelMetadata m = parseOrDie(goodBackwardMetaText());
  std::string config = m.configString();
  for (const char *key :
       {"pre_entry=fa_bwd_pre", "pre_grid=75,8,2", "pre_args=o,do,delta,dq_acc",
        "post_entry=fa_bwd_post", "post_args=dq_acc,dq", "post_shared_bytes=0"})
    EXPECT_NE(config.find(key), std::string::npos) << key << " in " << config;
  KernelMetadata back = parseOrDie(configAsMeta(config));
  EXPECT_EQ(back.configString(), config);
  // Every launch field shows.
  KernelMetadata other = parseOrDie(
      withLine(goodBackwardMetaText(), "post_grid", "post_grid = 76,8,2"));
  EXPECT_NE(other.configString(), config);
  other = parseOrDie(withLine(goodBackwardMetaText(), "pre_shared_bytes",
                              "pre_shared_bytes = 16"));
  EXPECT_NE(other.configString(), config);
  // The forward's config string round-trips too and has no pre_/post_ keys.
  KernelMetadata f = parseOrDie(goodMetaText());
  EXPECT_EQ(f.configString().find("pre_"), std::string::npos);
  EXPECT_EQ(parseOrDie(configAsMeta(f.configString())).configString(),
            f.configString());
}

TEST(RuntimeMetadata, BackwardRequiresPreAndPostKeys) {
  KernelMetadata m;
  Status s =
      parseKernelMetadata(withLine(goodBackwardMetaText(), "pre_entry", ""), m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "missing required key for a backward kernel (kind = "
                         "backward (line 1)): pre_entry");
  std::string text = withLine(goodBackwardMetaText(), "pre_grid", "");
  text = withLine(text, "post_args", "");
  s = parseKernelMetadata(text, m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing required keys for a backward kernel"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("pre_grid, post_args"), std::string::npos)
      << s.message();
}

TEST(RuntimeMetadata, ForwardRejectsPreAndPostKeys) {
  for (const char *line :
       {"pre_entry = fa_fwd_pre", "post_grid = 1,1,1", "pre_args = o,do"}) {
    KernelMetadata m;
    Status s = parseKernelMetadata(goodMetaText() + line + "\n", m);
    ASSERT_FALSE(s.ok()) << line;
    EXPECT_NE(s.message().find("line 23: key '"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("is only valid for a backward kernel (kind = "
                               "forward (line 1))"),
              std::string::npos)
        << s.message();
  }
}

TEST(RuntimeMetadata, BackwardLaunchKeyErrors) {
  struct Case {
    const char *key, *line, *expected;
  } cases[] = {
      {"pre_grid", "pre_grid = 1,2",
       "bad value for 'pre_grid': expected three"},
      {"post_block", "post_block = 2048,1,1",
       "bad value for 'post_block': at most 1024 threads"},
      {"pre_shared_bytes", "pre_shared_bytes = -1",
       "bad value for 'pre_shared_bytes'"},
      {"post_entry", "post_entry = 9x", "bad value for 'post_entry'"},
      {"pre_args", "pre_args = o,o", "'pre_args': parameter 'o' listed twice"},
      {"post_args", "post_args = dq_acc,dz",
       "unknown backward kernel parameter 'dz'"},
      {"post_args", "post_args = dq_acc", "must take 'dq'"},
      {"args", "args = q,k,v,do,delta,dq_acc,dk,dv", "must take 'lse'"},
      {"post_entry", "post_entry = fa_bwd", "three different kernels"},
  };
  for (const Case &c : cases) {
    KernelMetadata m;
    Status s =
        parseKernelMetadata(withLine(goodBackwardMetaText(), c.key, c.line), m);
    ASSERT_FALSE(s.ok()) << c.line;
    EXPECT_NE(s.message().find(c.expected), std::string::npos)
        << "message: " << s.message() << "\nexpected: " << c.expected;
  }
}

//===----------------------------------------------------------------------===//
// tensor_maps
//===----------------------------------------------------------------------===//

/// goodMetaText() with TMA descriptor parameters for q, k and v (line 22:
/// args, line 23: tensor_maps), the entries written out of order.
std::string tensorMapMetaText() {
  return withLine(goodMetaText(), "args",
                  "args = q,k,v,o,lse,tmap_q,tmap_k,tmap_v") +
         "tensor_maps = v:128x64, q:128x64,k:64x32\n";
}

TEST(RuntimeMetadata, ParsesTensorMaps) {
  KernelMetadata m = parseOrDie(tensorMapMetaText());
  ASSERT_EQ(m.tensorMaps.size(), 3u);
  // Canonical order, whatever the order written.
  EXPECT_EQ(m.tensorMaps[0].tensor, "q");
  EXPECT_EQ(m.tensorMaps[1].tensor, "k");
  EXPECT_EQ(m.tensorMaps[2].tensor, "v");
  const TensorMapParam *k = m.findTensorMap("tmap_k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->rows, 64u);
  EXPECT_EQ(k->cols, 32u);
  EXPECT_EQ(k->paramName(), "tmap_k");
  EXPECT_EQ(k->toString(), "k:64x32");
  EXPECT_EQ(m.findTensorMap("tmap_o"), nullptr);
  EXPECT_EQ(m.findTensorMap("k"), nullptr);
  EXPECT_EQ(m.findTensorMap("tmap_"), nullptr);
  EXPECT_EQ(m.args.size(), 8u);
  // The key is optional: no maps without it.
  EXPECT_TRUE(parseOrDie(goodMetaText()).tensorMaps.empty());
  // The box limits themselves are accepted.
  KernelMetadata edges =
      parseOrDie(withLine(goodMetaText(), "args", "args = q,k,v,o,lse,tmap_o") +
                 "tensor_maps = o:256x1\n");
  EXPECT_EQ(edges.tensorMaps[0].rows, 256u);
  EXPECT_EQ(edges.tensorMaps[0].cols, 1u);
}

TEST(RuntimeMetadata, TensorMapsConfigStringIsCanonicalAndRoundTrips) {
  KernelMetadata m = parseOrDie(tensorMapMetaText());
  std::string config = m.configString();
  EXPECT_NE(config.find(";args=q,k,v,o,lse,tmap_q,tmap_k,tmap_v;tensor_maps="
                        "q:128x64,k:64x32,v:128x64"),
            std::string::npos)
      << config;
  KernelMetadata back = parseOrDie(configAsMeta(config));
  EXPECT_EQ(back.configString(), config);
  ASSERT_EQ(back.tensorMaps.size(), 3u);
  EXPECT_EQ(back.tensorMaps[1].toString(), "k:64x32");
  // The order entries are written in does not matter; a box size does.
  std::string reordered = withLine(tensorMapMetaText(), "tensor_maps",
                                   "tensor_maps = k:64x32,v:128x64,q:128x64");
  EXPECT_EQ(parseOrDie(reordered).configString(), config);
  std::string otherBox = withLine(tensorMapMetaText(), "tensor_maps",
                                  "tensor_maps = k:64x32,v:128x64,q:64x64");
  EXPECT_NE(parseOrDie(otherBox).configString(), config);
  // Without maps the config string (a kernel cache key) has no such key.
  EXPECT_EQ(parseOrDie(goodMetaText()).configString().find("tensor_maps"),
            std::string::npos);
}

TEST(RuntimeMetadata, TensorMapErrors) {
  struct Case {
    const char *key, *line, *expected;
  } cases[] = {
      // Malformed entries.
      {"tensor_maps", "tensor_maps = q128x64",
       "line 23: bad value for 'tensor_maps': expected comma-separated "
       "<tensor>:<rows>x<cols> entries (e.g. q:128x64), got 'q128x64'"},
      {"tensor_maps", "tensor_maps = q:128",
       "bad value for 'tensor_maps': expected comma-separated"},
      {"tensor_maps", "tensor_maps = q:128x", "got 'q:128x'"},
      {"tensor_maps", "tensor_maps = q:x64", "got 'q:x64'"},
      {"tensor_maps", "tensor_maps = q:128X64", "got 'q:128X64'"},
      {"tensor_maps", "tensor_maps = q:128x64x2", "got 'q:128x64x2'"},
      {"tensor_maps", "tensor_maps = q:12 8x64", "got 'q:12 8x64'"},
      {"tensor_maps", "tensor_maps = q:128x64,,k:64x32", "got ''"},
      {"tensor_maps", "tensor_maps = q:128x64,k:64x32,v:128x64,",
       "expected comma-separated"},
      {"tensor_maps", "tensor_maps = :128x64", "unknown tensor ''"},
      // Unknown tensors.
      {"tensor_maps", "tensor_maps = z:128x64",
       "line 23: bad value for 'tensor_maps': unknown tensor 'z' in "
       "'z:128x64' (known: q, k, v, o, do, dq, dk, dv, dq_acc)"},
      {"tensor_maps", "tensor_maps = lse:128x1", "unknown tensor 'lse'"},
      {"tensor_maps", "tensor_maps = tmap_q:128x64", "unknown tensor 'tmap_q'"},
      // Duplicates.
      {"tensor_maps", "tensor_maps = q:128x64,k:64x32,q:64x64,v:128x64",
       "line 23: bad value for 'tensor_maps': tensor 'q' listed twice"},
      {nullptr, "tensor_maps = q:128x64",
       "line 24: duplicate key 'tensor_maps' (first set on line 23)"},
      // Box sizes.
      {"tensor_maps", "tensor_maps = q:0x64,k:64x32,v:128x64",
       "line 23: bad value for 'tensor_maps': box rows and cols must be in "
       "[1, 256] (the TMA box limit), got 'q:0x64'"},
      {"tensor_maps", "tensor_maps = q:128x0,k:64x32,v:128x64", "'q:128x0'"},
      {"tensor_maps", "tensor_maps = q:257x64,k:64x32,v:128x64", "'q:257x64'"},
      {"tensor_maps", "tensor_maps = q:128x512,k:64x32,v:128x64",
       "'q:128x512'"},
      {"tensor_maps", "tensor_maps = q:-128x64,k:64x32,v:128x64",
       "'q:-128x64'"},
      // Entries and parameters must match.
      {"tensor_maps", "tensor_maps = q:128x64,k:64x32,v:128x64,o:128x64",
       "tensor_maps (line 23): entry 'o:128x64' describes parameter "
       "'tmap_o', which is not in args (line 22)"},
      {"tensor_maps", "tensor_maps = q:128x64,v:128x64",
       "args (line 22): parameter 'tmap_k' has no 'tensor_maps' entry "
       "(expected 'k:<rows>x<cols>' in tensor_maps (line 23))"},
      {"tensor_maps", "",
       "args (line 22): parameter 'tmap_q' has no 'tensor_maps' entry "
       "(expected 'q:<rows>x<cols>' in tensor_maps)"},
      {"args", "args = q,k,v,o,lse,tmap_q,tmap_k,tmap_v,tmap_lse",
       "parameter 'tmap_lse' has no 'tensor_maps' entry"},
      {"tensor_maps", "tensor_maps = q:128x64,k:64x32,v:128x64,do:64x64",
       "tensor_maps (line 23): a forward kernel has no tensor 'do' "
       "(forward tensor maps: q, k, v, o)"},
      {"args", "args = q,k,v,o,lse,tmap_q,tmap_k,tmap_v,dq",
       "args (line 22): unknown forward kernel parameter 'dq' (known: q, k, "
       "v, o, lse, tmap_q, tmap_k, tmap_v)"},
  };
  for (const Case &c : cases) {
    std::string text = tensorMapMetaText();
    text = c.key ? withLine(text, c.key, c.line) : text + c.line + "\n";
    KernelMetadata m;
    Status s = parseKernelMetadata(text, m);
    ASSERT_FALSE(s.ok()) << "accepted: " << c.line;
    EXPECT_NE(s.message().find(c.expected), std::string::npos)
        << "line: " << c.line << "\nmessage: " << s.message()
        << "\nexpected: " << c.expected;
  }
}

TEST(RuntimeMetadata, BackwardTensorMaps) {
  // Any launch may take a map, over the backward's tensors too.
  std::string text = withLine(goodBackwardMetaText(), "args",
                              "args = q,k,v,do,lse,delta,dq_acc,dk,dv,tmap_q,"
                              "tmap_do");
  text = withLine(text, "pre_args", "pre_args = o,do,delta,dq_acc,tmap_o");
  text += "tensor_maps = do:64x64,o:64x64,q:64x64\n";
  KernelMetadata m = parseOrDie(text);
  ASSERT_EQ(m.tensorMaps.size(), 3u);
  EXPECT_EQ(m.tensorMaps[0].tensor, "q");
  EXPECT_EQ(m.tensorMaps[1].tensor, "o");
  EXPECT_EQ(m.tensorMaps[2].tensor, "do");
  EXPECT_EQ(parseOrDie(configAsMeta(m.configString())).configString(),
            m.configString());

  struct Case {
    const char *key, *line, *expected;
  } cases[] = {
      {"tensor_maps", "tensor_maps = do:64x64,o:64x64,q:64x64,dk:64x64",
       "tensor_maps (line 35): entry 'dk:64x64' describes parameter "
       "'tmap_dk', which is not in args, pre_args or post_args"},
      {"post_args", "post_args = dq_acc,dq,tmap_dq",
       "post_args (line 33): parameter 'tmap_dq' has no 'tensor_maps' entry"},
      {"tensor_maps", "tensor_maps = do:64x64,o:64x64,q:64x64,q:32x64",
       "tensor 'q' listed twice"},
  };
  for (const Case &c : cases) {
    KernelMetadata bad;
    Status s = parseKernelMetadata(withLine(text, c.key, c.line), bad);
    ASSERT_FALSE(s.ok()) << "accepted: " << c.line;
    EXPECT_NE(s.message().find(c.expected), std::string::npos)
        << "message: " << s.message() << "\nexpected: " << c.expected;
  }
}

TEST(RuntimeMetadata, ReadFileErrorsNameThePath) {
  KernelMetadata m;
  Status s = readKernelMetadataFile("/nonexistent/dir/k.meta", m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/dir/k.meta"), std::string::npos);
}

} // namespace

namespace {

/// goodMetaText() as a kernel with runtime shapes: no batch, seq_q, seq_kv
/// or grid; the size parameters after the tensors.
std::string runtimeShapesMetaText() {
  std::string text = goodMetaText();
  for (const char *key : {"batch", "seq_q", "seq_kv", "grid"})
    text = withLine(text, key, "");
  text = withLine(text, "args", "args = q,k,v,o,lse,batch,seq_q,seq_kv");
  return text + "runtime_shapes = 1\n";
}

TEST(RuntimeMetadata, RuntimeShapesTakeBatchLengthsAndGridFromTheCall) {
  KernelMetadata m = parseOrDie(runtimeShapesMetaText());
  EXPECT_TRUE(m.runtimeShapes);
  EXPECT_EQ(m.batch, 0);
  EXPECT_EQ(m.seqQ, 0);
  EXPECT_NE(m.configString().find("runtime_shapes=1"), std::string::npos);
  EXPECT_EQ(parseOrDie(goodMetaText()).configString().find("runtime_shapes"),
            std::string::npos);

  StatusOr<KernelMetadata> shaped = m.instantiate(3, 1000, 77);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  EXPECT_FALSE(shaped->runtimeShapes);
  EXPECT_EQ(shaped->batch, 3);
  EXPECT_EQ(shaped->seqQ, 1000);
  EXPECT_EQ(shaped->seqKV, 77);
  // ceil(1000 / block_q = 64), heads_q, batch.
  EXPECT_EQ(shaped->grid.x, 16u);
  EXPECT_EQ(shaped->grid.y, 8u);
  EXPECT_EQ(shaped->grid.z, 3u);
  EXPECT_EQ(shaped->args, m.args);

  StatusOr<KernelMetadata> empty = m.instantiate(1, 0, 5);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("must be positive"),
            std::string::npos);
  StatusOr<KernelMetadata> huge = m.instantiate(70000, 8, 8);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("exceeds the launch limits"),
            std::string::npos);
  // A static kernel's metadata is its own whatever the call (the call's
  // shape is validated against it afterwards).
  KernelMetadata fixedMeta = parseOrDie(goodMetaText());
  StatusOr<KernelMetadata> fixed = fixedMeta.instantiate(2, 0, 1024);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  EXPECT_EQ(fixed->configString(), fixedMeta.configString());
}

TEST(RuntimeMetadata, RuntimeShapesErrors) {
  auto error = [](const std::string &text) {
    KernelMetadata m;
    Status s = parseKernelMetadata(text, m);
    EXPECT_FALSE(s.ok()) << "accepted: " << text;
    return s.message();
  };
  // The call's keys may not be fixed in the file.
  EXPECT_NE(error(runtimeShapesMetaText() + "seq_q = 128\n")
                .find("key 'seq_q' is the call's for a kernel with runtime "
                      "shapes"),
            std::string::npos);
  EXPECT_NE(error(withLine(runtimeShapesMetaText(), "block_q", ""))
                .find("a kernel with runtime shapes needs block_q"),
            std::string::npos);
  EXPECT_NE(error(withLine(runtimeShapesMetaText(), "runtime_shapes",
                           "runtime_shapes = maybe"))
                .find("bad value for 'runtime_shapes': expected 0 or 1"),
            std::string::npos);
  // Without runtime shapes the size parameters are unknown, and the keys
  // are required as before.
  EXPECT_NE(error(withLine(runtimeShapesMetaText(), "runtime_shapes", ""))
                .find("missing required keys: batch, seq_q, seq_kv, grid"),
            std::string::npos);
  EXPECT_NE(error(withLine(goodMetaText(), "args", "args = q,k,v,o,lse,seq_q"))
                .find("unknown forward kernel parameter 'seq_q'"),
            std::string::npos);
  // A backward set with runtime shapes has no lengths or grids of its own.
  EXPECT_NE(error(goodBackwardMetaText() + "runtime_shapes = 1\n")
                .find("key 'batch' is the call's for a kernel with runtime "
                      "shapes"),
            std::string::npos);
}

} // namespace

namespace {

/// runtimeShapesMetaText() as a varlen kernel: the offsets after lse, their
/// size parameter last.
std::string varlenMetaText() {
  std::string text = withLine(
      runtimeShapesMetaText(), "args",
      "args = q,k,v,o,lse,cu_seqlens_q,cu_seqlens_k,seq_q,seq_kv,seq_offsets");
  return text + "varlen = 1\n";
}

TEST(RuntimeMetadata, VarlenTakesSequencesAndTheLongestFromTheCall) {
  KernelMetadata m = parseOrDie(varlenMetaText());
  EXPECT_TRUE(m.varlen);
  EXPECT_NE(m.configString().find("varlen=1"), std::string::npos);
  EXPECT_EQ(parseOrDie(runtimeShapesMetaText()).configString().find("varlen"),
            std::string::npos);
  // 5 sequences in 3000 query rows, the longest 700: grid (ceil(700 / 64),
  // heads_q, sequences); the tensors are batch 1.
  StatusOr<KernelMetadata> shaped = m.instantiate(1, 3000, 2000, 5, 700);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  EXPECT_EQ(shaped->batch, 1);
  EXPECT_EQ(shaped->seqQ, 3000);
  EXPECT_EQ(shaped->sequences, 5);
  EXPECT_EQ(shaped->maxSeqQ, 700);
  EXPECT_EQ(shaped->grid.x, 11u);
  EXPECT_EQ(shaped->grid.y, 8u);
  EXPECT_EQ(shaped->grid.z, 5u);

  auto refused = [&](int64_t batch, int64_t sequences, int64_t longest,
                     const std::string &expected) {
    StatusOr<KernelMetadata> s = m.instantiate(batch, 3000, 2000, sequences,
                                               longest);
    ASSERT_FALSE(s.ok()) << expected;
    EXPECT_NE(s.status().message().find(expected), std::string::npos)
        << s.status().message();
  };
  refused(2, 5, 700, "take batch-1 tensors, got batch 2");
  refused(1, 0, 700, "need at least one sequence");
  refused(1, 5, 0, "longest query sequence in [1, seq_q = 3000]");
  refused(1, 5, 3001, "got 5 sequences, max_seqlen_q 3001");
  refused(1, 70000, 700, "exceeds the launch limits");
}

TEST(RuntimeMetadata, VarlenErrors) {
  auto error = [](const std::string &text) {
    KernelMetadata m;
    Status s = parseKernelMetadata(text, m);
    EXPECT_FALSE(s.ok()) << "accepted: " << text;
    return s.message();
  };
  EXPECT_NE(error(withLine(varlenMetaText(), "runtime_shapes", "") +
                  "batch = 1\nseq_q = 8\nseq_kv = 8\ngrid = 1,1,1\n")
                .find("packed sequences need runtime_shapes = 1"),
            std::string::npos);
  EXPECT_NE(error(withLine(varlenMetaText(), "args",
                           "args = q,k,v,o,lse,cu_seqlens_q,seq_q"))
                .find("a varlen kernel must take 'cu_seqlens_q' and "
                      "'cu_seqlens_k'"),
            std::string::npos);
  EXPECT_NE(error(withLine(varlenMetaText(), "varlen", ""))
                .find("'cu_seqlens_q' and 'cu_seqlens_k' are a varlen "
                      "kernel's"),
            std::string::npos);
  EXPECT_NE(error(withLine(runtimeShapesMetaText(), "args",
                           "args = q,k,v,o,lse,seq_offsets"))
                .find("unknown forward kernel parameter 'seq_offsets'"),
            std::string::npos);
}

} // namespace
