//===- QuantizeMetadataTest.cpp - kind = quantize .meta -------------------===//

#include "TestUtil.h"

#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/Quantize.h"

#include <gtest/gtest.h>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

/// What fa-compile writes for examples/quantize_rotated.mlir.
std::string goodQuantizeMetaText() {
  return "kind = quantize\n"
         "chip = sm_90a\n"
         "dtype = bf16\n"
         "batch = 2\n"
         "heads = 8\n"
         "groups = 4\n"
         "seq = 1000\n"
         "head_dim = 128\n"
         "rotation_seed = 12345\n"
         "entry = quantize_k\n"
         "grid = 32,4,2\n"
         "block = 128,1,1\n"
         "shared_bytes = 0\n"
         "args = x,amax,out,descale\n"
         "pre_entry = quantize_k_amax\n"
         "pre_grid = 32,4,2\n"
         "pre_block = 128,1,1\n"
         "pre_shared_bytes = 0\n"
         "pre_args = x,amax\n"
         "compiler = flashmlir-test\n";
}

Status parse(const std::string &text) {
  KernelMetadata m;
  return parseKernelMetadata(text, m);
}

TEST(QuantizeMetadata, ParsesTheCompilersText) {
  KernelMetadata m = parseOrDie(goodQuantizeMetaText());
  EXPECT_EQ(m.kind, KernelKind::Quantize);
  EXPECT_STREQ(toString(m.kind), "quantize");
  EXPECT_EQ(m.dtype, DType::BF16);
  EXPECT_EQ(m.outDtype, DType::BF16);
  EXPECT_EQ(m.batch, 2);
  EXPECT_EQ(m.headsQ, 8);  // heads
  EXPECT_EQ(m.headsKV, 4); // groups
  EXPECT_EQ(m.seqQ, 1000);
  EXPECT_EQ(m.seqKV, 1000);
  EXPECT_EQ(m.headDim, 128);
  EXPECT_EQ(m.headDimV, 128);
  EXPECT_TRUE(m.rotated);
  EXPECT_EQ(m.rotationSeed, 12345);
  std::vector<LaunchSpec> launches = m.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].entry, "quantize_k_amax");
  EXPECT_EQ(launches[0].args, (std::vector<std::string>{"x", "amax"}));
  EXPECT_EQ(launches[1].entry, "quantize_k");
  EXPECT_EQ(launches[1].grid.x, 32u);

  KernelMetadata plain =
      parseOrDie(withLine(goodQuantizeMetaText(), "rotation_seed", ""));
  EXPECT_FALSE(plain.rotated);
  // Seeds are any 64-bit integer.
  KernelMetadata negative = parseOrDie(
      withLine(goodQuantizeMetaText(), "rotation_seed", "rotation_seed = -7"));
  EXPECT_EQ(negative.rotationSeed, -7);
}

TEST(QuantizeMetadata, ConfigStringHasItsKeysAndTheSeed) {
  KernelMetadata m = parseOrDie(goodQuantizeMetaText());
  std::string config = m.configString();
  EXPECT_EQ(config,
            "kind=quantize;entry=quantize_k;chip=sm_90a;dtype=bf16;batch=2;"
            "heads=8;groups=4;seq=1000;head_dim=128;rotation_seed=12345;"
            "grid=32,4,2;block=128,1,1;shared_bytes=0;args=x,amax,out,"
            "descale;compiler=flashmlir-test;pre_entry=quantize_k_amax;"
            "pre_grid=32,4,2;pre_block=128,1,1;pre_shared_bytes=0;pre_args="
            "x,amax");
  KernelMetadata other = parseOrDie(withLine(
      goodQuantizeMetaText(), "rotation_seed", "rotation_seed = 12346"));
  EXPECT_NE(other.configString(), config);
  KernelMetadata plain =
      parseOrDie(withLine(goodQuantizeMetaText(), "rotation_seed", ""));
  EXPECT_EQ(plain.configString().find("rotation_seed"), std::string::npos);
}

TEST(QuantizeMetadata, Errors) {
  const std::string good = goodQuantizeMetaText();
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {withLine(good, "groups", "") + "heads_kv = 4\n",
       "line 20: key 'heads_kv' is not a quantization's (kind = quantize "
       "(line 1))"},
      {withLine(good, "pre_args", ""),
       "missing required key for a quantization (kind = quantize (line 1)): "
       "pre_args"},
      {withLine(withLine(good, "seq", ""), "heads", ""),
       "missing required keys for a quantization (kind = quantize (line 1)): "
       "heads, seq"},
      {withLine(good, "groups", "groups = 3"),
       "heads = 8 (line 5) is not a multiple of groups = 3 (line 6)"},
      {withLine(good, "dtype", "dtype = e4m3"),
       "dtype (line 3): a quantization's input is bf16 or f16"},
      {withLine(good, "args", "args = x,out,amax,descale"),
       "args (line 14): a quantization's scale kernel takes "
       "x,amax,out,descale"},
      {withLine(good, "pre_args", "pre_args = x"),
       "pre_args (line 19): a quantization's amax kernel takes x,amax"},
      {withLine(good, "pre_entry", "pre_entry = quantize_k"),
       "entry (line 10) and pre_entry (line 15) must name two kernels"},
      {withLine(good, "chip", "chip = sm_80"),
       "chip (line 2): e4m3 conversion needs sm_89 or later"},
      {withLine(good, "rotation_seed", "rotation_seed = 1.5"),
       "line 9: bad value for 'rotation_seed': expected an integer, got "
       "'1.5'"},
  };
  for (const Case &c : cases) {
    Status s = parse(c.text);
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(QuantizeMetadata, AttentionKernelsRejectItsKeys) {
  for (const char *line :
       {"heads = 8", "groups = 2", "seq = 4", "rotation_seed = 1"}) {
    Status s = parse(goodMetaText() + line + "\n");
    ASSERT_FALSE(s.ok()) << line;
    EXPECT_NE(s.message().find("is a quantization's (kind = quantize), not "
                               "an attention kernel's"),
              std::string::npos)
        << s.message();
  }
  Status s = parse(withLine(goodMetaText(), "kind", "kind = sideways"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'forward', 'backward' or 'quantize'"),
            std::string::npos)
      << s.message();
}

} // namespace

namespace {

/// A plausible call of goodQuantizeMetaText()'s kernel: x (2x8x1000x128
/// bf16), out (the same in bytes), descale (2x4 f32), workspace (2x4 i32).
struct QuantizeCall {
  QuantizeArgs args{0x10000000, 0x20000000, 0x30000000};
  CUdeviceptr workspace = 0x40000000;
};

TEST(QuantizeValidation, AcceptsAGoodCallAndSizesTheWorkspace) {
  KernelMetadata m = parseOrDie(goodQuantizeMetaText());
  EXPECT_EQ(quantizeWorkspaceBytes(m), 2u * 4u * 4u);
  QuantizeCall c;
  Status s = validateQuantize(m, c.args, c.workspace);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(QuantizeValidation, Errors) {
  KernelMetadata m = parseOrDie(goodQuantizeMetaText());
  auto expectError = [&](QuantizeCall c, const std::string &needle) {
    Status s = validateQuantize(m, c.args, c.workspace);
    ASSERT_FALSE(s.ok()) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  QuantizeCall nullX;
  nullX.args.x = 0;
  expectError(nullX, "x");
  QuantizeCall nullWorkspace;
  nullWorkspace.workspace = 0;
  expectError(nullWorkspace, "workspace");
  QuantizeCall misaligned;
  misaligned.args.out += 8;
  expectError(misaligned, "out");
  // out over x's last bytes.
  QuantizeCall overlap;
  overlap.args.out = overlap.args.x + 1024;
  expectError(overlap, "overlap");
  KernelMetadata forward = parseOrDie(goodMetaText());
  Status s = validateQuantize(forward, QuantizeCall().args, 0x40000000);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "kernel 'fa_fwd' is a forward kernel; quantize "
                         "needs a quantization kernel");
}

} // namespace
