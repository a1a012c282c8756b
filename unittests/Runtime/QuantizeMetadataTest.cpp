//===- QuantizeMetadataTest.cpp - kind = quantize .meta -------------------===//

#include "TestUtil.h"

#include "fa/Runtime/Metadata.h"
#include "fa/Runtime/Quantize.h"

#include <gtest/gtest.h>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

/// What fa-compile writes for examples/quantize_rotated.mlir.
MetaJson goodQuantizeMeta() {
  return MetaJson::parse(R"({
    "kind": "quantize",
    "chip": "sm_90a",
    "dtype": "bf16",
    "batch": 2,
    "heads": 8,
    "groups": 4,
    "seq": 1000,
    "head_dim": 128,
    "rotation_seed": 12345,
    "entry": "quantize_k",
    "grid": [32, 4, 2],
    "block": [128, 1, 1],
    "shared_bytes": 0,
    "args": ["x", "amax", "out", "descale"],
    "pre": {
      "entry": "quantize_k_amax",
      "grid": [32, 4, 2],
      "block": [128, 1, 1],
      "shared_bytes": 0,
      "args": ["x", "amax"]
    },
    "compiler": "flashmlir-test"
  })");
}

TEST(QuantizeMetadata, ParsesTheCompilersText) {
  KernelMetadata m = parseOrDie(goodQuantizeMeta());
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
      parseOrDie(patched(goodQuantizeMeta(), {{"rotation_seed", nullptr}}));
  EXPECT_FALSE(plain.rotated);
  // Seeds are any 64-bit integer.
  KernelMetadata negative =
      parseOrDie(patched(goodQuantizeMeta(), {{"rotation_seed", -7}}));
  EXPECT_EQ(negative.rotationSeed, -7);
  EXPECT_EQ(
      parseOrDie(patched(goodQuantizeMeta(), {{"rotation_seed", INT64_MIN}}))
          .rotationSeed,
      INT64_MIN);
}

TEST(QuantizeMetadata, ConfigStringHasItsKeysAndTheSeed) {
  KernelMetadata m = parseOrDie(goodQuantizeMeta());
  std::string config = m.configString();
  EXPECT_EQ(config,
            "kind=quantize;entry=quantize_k;chip=sm_90a;dtype=bf16;batch=2;"
            "heads=8;groups=4;seq=1000;head_dim=128;rotation_seed=12345;"
            "grid=32,4,2;block=128,1,1;shared_bytes=0;args=x,amax,out,"
            "descale;compiler=flashmlir-test;pre_entry=quantize_k_amax;"
            "pre_grid=32,4,2;pre_block=128,1,1;pre_shared_bytes=0;pre_args="
            "x,amax");
  KernelMetadata other =
      parseOrDie(patched(goodQuantizeMeta(), {{"rotation_seed", 12346}}));
  EXPECT_NE(other.configString(), config);
  KernelMetadata plain =
      parseOrDie(patched(goodQuantizeMeta(), {{"rotation_seed", nullptr}}));
  EXPECT_EQ(plain.configString().find("rotation_seed"), std::string::npos);
}

TEST(QuantizeMetadata, Errors) {
  const MetaJson good = goodQuantizeMeta();
  struct Case {
    MetaJson meta;
    std::string message;
  };
  const Case cases[] = {
      {patched(good, {{"groups", nullptr}, {"heads_kv", 4}}),
       "\"heads_kv\": not a key of a quantize kernel (only of forward and "
       "backward kernels)"},
      {patched(good, {{"post", good["pre"]}}),
       "\"post\": not a key of a quantize kernel (only of backward "
       "kernels)"},
      {patched(good, {{"pre", {{"args", nullptr}}}}),
       "\"pre\": missing required key of a quantize kernel's launch: "
       "\"args\""},
      {patched(good, {{"pre", nullptr}}),
       "missing required key of a quantize kernel: \"pre\""},
      {patched(good, {{"seq", nullptr}, {"heads", nullptr}}),
       "missing required keys of a quantize kernel: \"heads\", \"seq\""},
      {patched(good, {{"groups", 3}}),
       "\"heads\": 8 is not a multiple of \"groups\": 3"},
      {patched(good, {{"dtype", "e4m3"}}),
       "\"dtype\": a quantization's input is bf16 or f16"},
      {patched(good, {{"args", {"x", "out", "amax", "descale"}}}),
       "\"args\": a quantization's scale kernel takes [\"x\", \"amax\", "
       "\"out\", \"descale\"]"},
      {patched(good, {{"pre", {{"args", {"x"}}}}}),
       "\"pre\".\"args\": a quantization's amax kernel takes [\"x\", "
       "\"amax\"]"},
      {patched(good, {{"pre", {{"entry", "quantize_k"}}}}),
       "\"entry\" and \"pre\".\"entry\" must name two kernels"},
      {patched(good, {{"chip", "sm_80"}}),
       "\"chip\": e4m3 conversion needs sm_89 or later"},
      {patched(good, {{"rotation_seed", 1.5}}),
       "\"rotation_seed\": expected a 64-bit integer, got 1.5"},
      {patched(good, {{"rotation_seed", UINT64_MAX}}),
       "\"rotation_seed\": expected a 64-bit integer, got "
       "18446744073709551615"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseError(c.meta), c.message);
}

TEST(QuantizeMetadata, AttentionKernelsRejectItsKeys) {
  for (const char *key : {"heads", "groups", "seq", "rotation_seed"})
    EXPECT_EQ(parseError(patched(goodMeta(), {{key, 8}})),
              "\"" + std::string(key) +
                  "\": not a key of a forward kernel (only of quantize "
                  "kernels)");
}

} // namespace

namespace {

/// A plausible call of goodQuantizeMeta()'s kernel: x (2x8x1000x128
/// bf16), out (the same in bytes), descale (2x4 f32), workspace (2x4 i32).
struct QuantizeCall {
  QuantizeArgs args{0x10000000, 0x20000000, 0x30000000};
  CUdeviceptr workspace = 0x40000000;
};

TEST(QuantizeValidation, AcceptsAGoodCallAndSizesTheWorkspace) {
  KernelMetadata m = parseOrDie(goodQuantizeMeta());
  EXPECT_EQ(quantizeWorkspaceBytes(m), 2u * 4u * 4u);
  QuantizeCall c;
  Status s = validateQuantize(m, c.args, c.workspace);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(QuantizeValidation, Errors) {
  KernelMetadata m = parseOrDie(goodQuantizeMeta());
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
  KernelMetadata forward = parseOrDie(goodMeta());
  Status s = validateQuantize(forward, QuantizeCall().args, 0x40000000);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "kernel 'fa_fwd' is a forward kernel; quantize "
                         "needs a quantization kernel");
}

} // namespace
