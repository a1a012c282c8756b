//===- JitCacheTest.cpp - Damaged, forged and foreign JIT cache entries ---===//
//
// A cache entry is used only if it is intact, of its key and describes the
// request (metadataMismatch()); anything else is rebuilt with a warning.
// CPU only: PTX for an explicit chip, no driver.
//
//===----------------------------------------------------------------------===//

#include "JitTestFixture.h"

#include <fstream>

using namespace fa;
using namespace fa::jit;
using namespace fa::jit::test;
using namespace fa::rt;

namespace {

TEST_F(JitTest, CorruptEntryIsRebuilt) {
  const AttentionConfig config = smallConfig();
  std::string path, ptx;
  {
    KernelCache cache(dir_);
    StatusOr<JitArtifact> a =
        buildForwardKernel(config, cache, ptxFor90_, noDriver_);
    ASSERT_TRUE(a.ok()) << a.status().message();
    path = cache.entryPath(a->key);
    ptx = a->image;
  }
  // Flip one byte of the PTX inside the file: the checksum no longer holds.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << path;
    f.seekg(-20, std::ios::end);
    char c = 0;
    f.get(c);
    f.seekp(-20, std::ios::end);
    f.put(char(c ^ 0x5a));
  }
  uint64_t before = compilerInvocations();
  KernelCache cache(dir_);
  StatusOr<JitArtifact> rebuilt =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().message();
  EXPECT_EQ(rebuilt->outcome, CacheOutcome::RebuiltCorrupt);
  EXPECT_TRUE(rebuilt->compiled);
  EXPECT_EQ(compilerInvocations(), before + 1);
  EXPECT_EQ(rebuilt->image, ptx);
  EXPECT_TRUE(contains(rebuilt->warning, "sha256 mismatch"))
      << rebuilt->warning;

  // A file with a valid digest whose contents are not a JIT entry.
  ASSERT_TRUE(cache.store(rebuilt->key, {"", "not a JIT entry"}).ok());
  KernelCache fresh(dir_);
  StatusOr<JitArtifact> again =
      buildForwardKernel(config, fresh, ptxFor90_, noDriver_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->outcome, CacheOutcome::RebuiltCorrupt);
  EXPECT_TRUE(
      contains(again->warning, "it does not match the request: bad metadata"))
      << again->warning;
  EXPECT_EQ(again->image, ptx);
  EXPECT_EQ(compilerInvocations(), before + 2);

  // ... and the rewritten entry is good again.
  KernelCache last(dir_);
  StatusOr<JitArtifact> hit =
      buildForwardKernel(config, last, ptxFor90_, noDriver_);
  ASSERT_TRUE(hit.ok()) << hit.status().message();
  EXPECT_EQ(hit->outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(compilerInvocations(), before + 2);
}

/// An entry forged with a valid digest (anyone can compute SHA-256): other
/// PTX, another problem's metadata. Its metadata does not match the
/// request, so it is rebuilt with a warning, never returned.
TEST_F(JitTest, ForgedEntryIsRebuiltNotUsed) {
  const AttentionConfig config = smallConfig();
  KernelCache cache(dir_);
  StatusOr<JitArtifact> genuine =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(genuine.ok()) << genuine.status().message();

  // The .meta text with the value of top-level `key` (one line, as the
  // compiler writes it) replaced by the JSON text `value`.
  auto withValue = [](std::string text, const std::string &key,
                      const std::string &value) {
    size_t start = text.find("\n  \"" + key + "\": ") + key.size() + 7;
    size_t end = text.find('\n', start);
    if (text[end - 1] == ',')
      --end;
    return text.replace(start, end - start, value);
  };
  const std::string &genuineMetadata = genuine->metadataText;
  std::string forgedMetadata = withValue(
      withValue(genuineMetadata, "seq_q", "999"), "grid", "[1, 1, 1]");
  // A second "seq_q" before the genuine one: nlohmann would keep the last,
  // so the runtime would launch what a reader of the text does not see.
  std::string hiddenKey = genuineMetadata;
  hiddenKey.insert(hiddenKey.find("\"seq_q\""), "\"seq_q\": 999,\n  ");
  std::string otherPTX = genuine->image;
  otherPTX.replace(otherPTX.find(".entry fa_fwd("), 14, ".entry fa_fwd(/*x*/");
  struct Forgery {
    const char *what;
    CacheEntry entry;
    const char *why;
  };
  const Forgery forgeries[] = {
      {"other problem",
       {forgedMetadata, otherPTX},
       "seq_q is 999, the request has 100"},
      {"garbled metadata",
       {genuineMetadata.substr(0, genuineMetadata.size() / 2), otherPTX},
       "bad metadata: not valid JSON at byte"},
      {"a value of the wrong range",
       {withValue(genuineMetadata, "grid", "[1, -3, 1]"), otherPTX},
       "bad metadata: \"grid\"[1]: expected an integer in [1, 65535], got "
       "-3"},
      {"a key set twice",
       {hiddenKey, otherPTX},
       "bad metadata: \"seq_q\": key set twice"},
      {"no kernel",
       {genuine->metadataText, "// PTX without kernels"},
       "the image has no kernel 'fa_fwd'"},
      {"cubin as PTX",
       {genuine->metadataText, "\x7f"
                               "ELF..."},
       "the image is not PTX"},
  };
  for (const Forgery &f : forgeries) {
    SCOPED_TRACE(f.what);
    ASSERT_TRUE(cache.store(genuine->key, f.entry).ok());
    uint64_t before = compilerInvocations();
    KernelCache fresh(dir_);
    StatusOr<JitArtifact> got =
        buildForwardKernel(config, fresh, ptxFor90_, noDriver_);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->outcome, CacheOutcome::RebuiltCorrupt);
    EXPECT_TRUE(got->compiled);
    EXPECT_EQ(compilerInvocations(), before + 1);
    EXPECT_TRUE(contains(got->warning, "unusable cache entry '" +
                                           fresh.entryPath(genuine->key) +
                                           "' (it does not match the "
                                           "request: " +
                                           f.why))
        << got->warning;
    EXPECT_EQ(got->image, genuine->image);
    EXPECT_EQ(got->metadata.seqQ, 100);
    // The rebuilt entry replaced the forgery on disk.
    KernelCache last(dir_);
    StatusOr<JitArtifact> hit =
        buildForwardKernel(config, last, ptxFor90_, noDriver_);
    ASSERT_TRUE(hit.ok()) << hit.status().message();
    EXPECT_EQ(hit->outcome, CacheOutcome::DiskHit);
    EXPECT_EQ(hit->warning, "");
  }
}

/// The backward and the forward of one config are different entries: one
/// found under the other's key is rejected by kind.
TEST_F(JitTest, EntryOfTheOtherDirectionIsRebuilt) {
  const AttentionConfig config = smallConfig();
  KernelCache cache(dir_);
  StatusOr<JitArtifact> fwd =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  StatusOr<JitArtifact> bwd =
      buildBackwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(fwd.ok() && bwd.ok());
  ASSERT_TRUE(cache.store(bwd->key, {fwd->metadataText, fwd->image}).ok());
  KernelCache fresh(dir_);
  StatusOr<JitArtifact> got =
      buildBackwardKernel(config, fresh, ptxFor90_, noDriver_);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->outcome, CacheOutcome::RebuiltCorrupt);
  EXPECT_TRUE(contains(got->warning, "kind is forward, the request has "
                                     "backward"))
      << got->warning;
  EXPECT_EQ(got->metadata.kind, KernelKind::Backward);
}

/// Each field the config determines is compared; the message names it with
/// both values.
TEST_F(JitTest, MetadataMismatchNamesTheField) {
  AttentionConfig config = smallConfig();
  KernelCache cache(dir_);
  StatusOr<JitArtifact> built =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(built.ok()) << built.status().message();
  config.chip = "sm_90";
  const KernelMetadata &good = built->metadata;
  EXPECT_EQ(metadataMismatch(good, config), "");

  struct Case {
    void (*edit)(KernelMetadata &);
    const char *expected;
  };
  const Case cases[] = {
      {[](KernelMetadata &m) { m.kind = KernelKind::Backward; },
       "kind is backward, the request has forward"},
      {[](KernelMetadata &m) { m.entry = "evil"; },
       "entry is evil, the request has fa_fwd"},
      {[](KernelMetadata &m) { m.chip = "sm_80"; },
       "chip is sm_80, the request has sm_90a"},
      {[](KernelMetadata &m) { m.dtype = DType::F16; },
       "dtype is f16, the request has bf16"},
      {[](KernelMetadata &m) { m.batch = 3; }, "batch is 3, the request has 1"},
      {[](KernelMetadata &m) { m.headsQ = 8; },
       "heads_q is 8, the request has 4"},
      {[](KernelMetadata &m) { m.headsKV = 4; },
       "heads_kv is 4, the request has 2"},
      {[](KernelMetadata &m) { m.seqQ = 999; },
       "seq_q is 999, the request has 100"},
      {[](KernelMetadata &m) { m.seqKV = 1; },
       "seq_kv is 1, the request has 130"},
      {[](KernelMetadata &m) { m.headDim = 128; },
       "head_dim is 128, the request has 64"},
      {[](KernelMetadata &m) { m.headDimV = 128; },
       "head_dim_v is 128, the request has 64"},
      {[](KernelMetadata &m) { m.blockQ = 16; }, "block_q is 16, the request"},
      {[](KernelMetadata &m) { m.blockKV = 16; },
       "block_kv is 16, the request"},
      {[](KernelMetadata &m) { m.scale = 1.0; },
       "scale is 1, the request has 0.125"},
      {[](KernelMetadata &m) { m.causal = false; },
       "causal is 0, the request has 1"},
      {[](KernelMetadata &m) { m.windowLeft = 64; },
       "window_left is 64, the request has -1"},
      {[](KernelMetadata &m) { m.windowRight = 0; },
       "window_right is 0, the request has -1"},
      {[](KernelMetadata &m) { m.softcap = 30; },
       "softcap is 30, the request has 0"},
      {[](KernelMetadata &m) { m.compiler = "flashmlir-0.0+forged"; },
       "compiler is flashmlir-0.0+forged, the request has flashmlir-"},
  };
  for (const Case &c : cases) {
    KernelMetadata m = good;
    c.edit(m);
    std::string why = metadataMismatch(m, config);
    EXPECT_EQ(why.rfind(c.expected, 0), 0u) << why;
  }

  // The request's side: masks, scale and softcap as the config asks.
  AttentionConfig windowed = config;
  windowed.window = std::make_pair(int64_t(16), int64_t(0));
  EXPECT_EQ(metadataMismatch(good, windowed),
            "window_left is -1, the request has 16");
  AttentionConfig capped = config;
  capped.softcap = 30.0;
  EXPECT_EQ(metadataMismatch(good, capped), "softcap is 0, the request has 30");
  AttentionConfig scaled = config;
  scaled.scale = 0.125; // The default for head dim 64, spelled out.
  EXPECT_EQ(metadataMismatch(good, scaled), "");
  scaled.scale = 0.5;
  EXPECT_EQ(metadataMismatch(good, scaled),
            "scale is 0.125, the request has 0.5");
  AttentionConfig backward = config;
  backward.backward = true;
  EXPECT_EQ(metadataMismatch(good, backward),
            "kind is forward, the request has backward");
}

} // namespace
