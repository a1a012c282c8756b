//===- JitQuantizeTest.cpp - The JIT's fa.quantize kernels ----------------===//
//
// CPU only: a quantization config compiles to PTX for an explicit chip (no
// driver), is cached under its own key and checked against it when found.
//
//===----------------------------------------------------------------------===//

#include "JitTestFixture.h"

#include "fa/Runtime/Runtime.h"

#include <string>

using namespace fa;
using namespace fa::jit;
using namespace fa::jit::test;
using namespace fa::rt;

namespace {

AttentionConfig quantizeConfig() {
  AttentionConfig c;
  c.quantize = true;
  c.dtype = "bf16";
  c.batch = 2;
  c.headsQ = 4;
  c.headsKV = 2;
  c.seqQ = 100;
  c.headDim = 128;
  c.rotationSeed = 7;
  c.entry = "quantize_k";
  return c;
}

TEST_F(JitTest, QuantizeBuildsItsTwoKernelsThenHits) {
  const AttentionConfig config = quantizeConfig();
  KernelCache cache(dir_);
  StatusOr<JitArtifact> first =
      buildQuantizeKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->outcome, CacheOutcome::Built);
  const KernelMetadata &m = first->metadata;
  EXPECT_EQ(m.kind, KernelKind::Quantize);
  EXPECT_EQ(m.entry, "quantize_k");
  EXPECT_EQ(m.pre.entry, "quantize_k_amax");
  EXPECT_EQ(m.headsQ, 4);
  EXPECT_EQ(m.headsKV, 2);
  EXPECT_TRUE(m.rotated);
  EXPECT_EQ(m.rotationSeed, 7);
  EXPECT_EQ(quantizeWorkspaceBytes(m), 2u * 2u * 4u);
  EXPECT_NE(first->image.find(".entry quantize_k_amax"), std::string::npos);
  EXPECT_NE(first->image.find("cvt.rn.satfinite.e4m3x2.f32"),
            std::string::npos);

  KernelCache other(dir_);
  StatusOr<JitArtifact> disk =
      buildQuantizeKernel(config, other, ptxFor90_, noDriver_);
  ASSERT_TRUE(disk.ok()) << disk.status().message();
  EXPECT_EQ(disk->outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(disk->image, first->image);
}

TEST_F(JitTest, QuantizeKeysSeparateSeedsAndAttentions) {
  AttentionConfig a = quantizeConfig(), b = quantizeConfig();
  b.rotationSeed = 8;
  AttentionConfig plain = quantizeConfig();
  plain.rotationSeed.reset();
  std::string ka = forwardCacheKey(a, "sm_90", ImageFormat::PTX).config;
  EXPECT_NE(ka, forwardCacheKey(b, "sm_90", ImageFormat::PTX).config);
  EXPECT_NE(ka, forwardCacheKey(plain, "sm_90", ImageFormat::PTX).config);
  AttentionConfig attention = smallConfig();
  EXPECT_NE(ka, forwardCacheKey(attention, "sm_90", ImageFormat::PTX).config);
  // The metadata of another seed, or of an attention, is not this entry's.
  KernelCache cache(dir_);
  StatusOr<JitArtifact> built =
      buildQuantizeKernel(a, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(built.ok()) << built.status().message();
  AttentionConfig b90 = b, a90 = a;
  b90.chip = a90.chip = "sm_90";
  EXPECT_EQ(metadataMismatch(built->metadata, a90), "");
  EXPECT_NE(metadataMismatch(built->metadata, b90).find("rotation_seed"),
            std::string::npos);
  EXPECT_NE(metadataMismatch(built->metadata, smallConfig()).find("kind"),
            std::string::npos);
}

TEST_F(JitTest, QuantizeAndAttentionFunctionsRefuseEachOthersConfigs) {
  KernelCache cache(dir_);
  StatusOr<JitArtifact> asForward =
      buildForwardKernel(quantizeConfig(), cache, ptxFor90_, noDriver_);
  ASSERT_FALSE(asForward.ok());
  EXPECT_NE(asForward.status().message().find("buildQuantizeKernel"),
            std::string::npos);
  StatusOr<JitArtifact> asBackward =
      buildBackwardKernel(quantizeConfig(), cache, ptxFor90_, noDriver_);
  ASSERT_FALSE(asBackward.ok());
  StatusOr<JitArtifact> attention =
      buildQuantizeKernel(smallConfig(), cache, ptxFor90_, noDriver_);
  ASSERT_FALSE(attention.ok());
  EXPECT_NE(attention.status().message().find("config.quantize is not set"),
            std::string::npos);
  // The compiler's errors: a dtype it does not quantize, a head dim the
  // kernels do not take.
  AttentionConfig f32 = quantizeConfig();
  f32.dtype = "e4m3";
  StatusOr<JitArtifact> badType =
      buildQuantizeKernel(f32, cache, ptxFor90_, noDriver_);
  ASSERT_FALSE(badType.ok());
  EXPECT_NE(badType.status().message().find("unsupported dtype 'e4m3' to "
                                            "quantize"),
            std::string::npos)
      << badType.status().message();
  AttentionConfig narrow = quantizeConfig();
  narrow.headDim = 32;
  StatusOr<JitArtifact> badDim =
      buildQuantizeKernel(narrow, cache, ptxFor90_, noDriver_);
  ASSERT_FALSE(badDim.ok());
  EXPECT_NE(badDim.status().message().find("head dims of 64 to 256"),
            std::string::npos)
      << badDim.status().message();
}

} // namespace
