//===- ValidationTest.cpp - attentionForward argument validation ----------===//
//
// Uses fake, non-null device pointers: validation must reject bad calls
// without touching the driver, so these tests run without a GPU.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "fa/Runtime/Attention.h"

#include <gtest/gtest.h>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

constexpr CUdeviceptr kGiB = CUdeviceptr(1) << 30;

KernelMetadata smallMeta() {
  return parseOrDie(patched(goodMeta(), {{"batch", 2},
                                         {"seq_q", 128},
                                         {"seq_kv", 256},
                                         {"head_dim", 64},
                                         {"head_dim_v", 32},
                                         {"scale", 0.125}}));
}

/// Valid arguments for `m` with fake pointers 1 GiB apart.
AttentionArgs goodArgs(const KernelMetadata &m) {
  AttentionArgs a = AttentionArgs::fromMetadata(m);
  a.q = 1 * kGiB;
  a.k = 2 * kGiB;
  a.v = 3 * kGiB;
  a.o = 4 * kGiB;
  a.lse = 5 * kGiB;
  return a;
}

void expectRejected(const KernelMetadata &m, const AttentionArgs &a,
                    const std::string &expected) {
  Status s = validateAttentionForward(m, a);
  ASSERT_FALSE(s.ok()) << "accepted; expected: " << expected;
  EXPECT_NE(s.message().find(expected), std::string::npos)
      << "message: " << s.message() << "\nexpected to contain: " << expected;
  // The launcher rejects it the same way, before it would need a driver.
  Status launch = attentionForward(Kernel::unloaded(m), a);
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.message().find(expected), std::string::npos)
      << launch.message();
  EXPECT_EQ(launch.message().find("not loaded"), std::string::npos);
}

TEST(RuntimeValidation, AcceptsGoodArguments) {
  KernelMetadata m = smallMeta();
  AttentionArgs a = goodArgs(m);
  Status s = validateAttentionForward(m, a);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(a.strideQ, (std::array<int64_t, 4>{8 * 128 * 64, 128 * 64, 64, 1}));
  EXPECT_EQ(a.strideV, (std::array<int64_t, 4>{2 * 256 * 32, 256 * 32, 32, 1}));
  EXPECT_EQ(a.strideLSE, (std::array<int64_t, 3>{8 * 128, 128, 1}));
  // Good arguments reach the launch, which fails only for want of code.
  Status launch = attentionForward(Kernel::unloaded(m), a);
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.message().find("kernel is not loaded"), std::string::npos)
      << launch.message();
}

TEST(RuntimeValidation, RejectsNullPointers) {
  KernelMetadata m = smallMeta();
  struct {
    CUdeviceptr AttentionArgs::*field;
    const char *name;
  } cases[] = {{&AttentionArgs::q, "query"},
               {&AttentionArgs::k, "key"},
               {&AttentionArgs::v, "value"},
               {&AttentionArgs::o, "output"},
               {&AttentionArgs::lse, "lse"}};
  for (const auto &c : cases) {
    AttentionArgs a = goodArgs(m);
    a.*c.field = 0;
    expectRejected(m, a, std::string(c.name) + " pointer is null");
  }
}

TEST(RuntimeValidation, LseMayBeNullIfTheKernelDoesNotWriteIt) {
  KernelMetadata m =
      parseOrDie(patched(goodMeta(), {{"args", {"q", "k", "v", "o"}}}));
  AttentionArgs a = goodArgs(m);
  a.lse = 0;
  Status s = validateAttentionForward(m, a);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(RuntimeValidation, RejectsMisalignedPointers) {
  KernelMetadata m = smallMeta();
  AttentionArgs a = goodArgs(m);
  a.q += 8;
  expectRejected(m, a, "query pointer 0x40000008 is not 16-byte aligned");
  a = goodArgs(m);
  a.o += 2;
  expectRejected(m, a, "output pointer 0x100000002 is not 16-byte aligned");
  a = goodArgs(m);
  a.lse += 2;
  expectRejected(m, a, "lse pointer 0x140000002 is not 4-byte aligned");
  a = goodArgs(m);
  a.lse += 4; // f32 alignment is enough for lse.
  EXPECT_TRUE(validateAttentionForward(m, a).ok());
}

TEST(RuntimeValidation, RejectsNonContiguousStrides) {
  KernelMetadata m = smallMeta();
  AttentionArgs a = goodArgs(m);
  // [B, N, H, D] memory order viewed as [B, H, N, D] (a transposed view).
  a.strideQ = {128 * 8 * 64, 64, 8 * 64, 1};
  expectRejected(m, a,
                 "query stride [65536, 64, 512, 1] (shape [2, 8, 128, 64]) "
                 "not supported; pass a contiguous tensor (row-major strides "
                 "[65536, 8192, 64, 1])");
  a = goodArgs(m);
  a.strideK[3] = 2;
  expectRejected(m, a, "key stride");
  a = goodArgs(m);
  a.strideV[0] += 32; // Padded batch stride.
  expectRejected(m, a, "value stride");
  a = goodArgs(m);
  a.strideO[2] = 0;
  expectRejected(m, a, "output stride");
  a = goodArgs(m);
  a.strideLSE = {128, 8 * 128, 1};
  expectRejected(m, a, "lse stride");
}

TEST(RuntimeValidation, StridesOfSizeOneDimensionsDoNotMatter) {
  KernelMetadata m = parseOrDie(patched(goodMeta(), {{"batch", 1}}));
  AttentionArgs a = goodArgs(m);
  a.strideQ[0] = 12345; // batch == 1: the stride never affects an address.
  Status s = validateAttentionForward(m, a);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(RuntimeValidation, RejectsShapesThatDifferFromTheKernel) {
  KernelMetadata m = smallMeta();
  struct {
    int64_t AttentionArgs::*field;
    const char *name;
    int64_t value;
    const char *expected;
  } cases[] = {
      {&AttentionArgs::batch, "batch", 3,
       "batch = 3 does not match the kernel's batch = 2"},
      {&AttentionArgs::headsQ, "heads_q", 4,
       "heads_q = 4 does not match the kernel's heads_q = 8"},
      {&AttentionArgs::headsKV, "heads_kv", 4,
       "heads_kv = 4 does not match the kernel's heads_kv = 2"},
      {&AttentionArgs::seqQ, "seq_q", 129,
       "seq_q = 129 does not match the kernel's seq_q = 128"},
      {&AttentionArgs::seqKV, "seq_kv", 128,
       "seq_kv = 128 does not match the kernel's seq_kv = 256"},
      {&AttentionArgs::headDim, "head_dim", 128,
       "head_dim = 128 does not match the kernel's head_dim = 64"},
      {&AttentionArgs::headDimV, "head_dim_v", 64,
       "head_dim_v = 64 does not match the kernel's head_dim_v = 32"},
  };
  for (const auto &c : cases) {
    AttentionArgs a = goodArgs(m);
    a.*c.field = c.value;
    a.setContiguousStrides();
    expectRejected(m, a, c.expected);
  }
}

TEST(RuntimeValidation, RejectsNonPositiveShapesAndBadGrouping) {
  KernelMetadata m = smallMeta();
  AttentionArgs a = goodArgs(m);
  a.seqKV = 0;
  expectRejected(m, a, "seq_kv must be positive, got 0");
  a = goodArgs(m);
  a.headDim = -64;
  expectRejected(m, a, "head_dim must be positive, got -64");
  a = goodArgs(m);
  a.headsKV = 3;
  a.setContiguousStrides();
  expectRejected(m, a, "heads_q (8) must be a multiple of heads_kv (3)");
}

TEST(RuntimeValidation, RejectsDtypeAndFlagMismatches) {
  KernelMetadata m = smallMeta();
  AttentionArgs a = goodArgs(m);
  a.dtype = DType::F16;
  expectRejected(m, a, "dtype f16 does not match the kernel's bf16");
  a = goodArgs(m);
  a.causal = false;
  expectRejected(m, a, "causal = 0 does not match the kernel's causal = 1");
  a = goodArgs(m);
  a.windowLeft = 64;
  expectRejected(m, a,
                 "window (64, -1) does not match the kernel's window "
                 "(-1, -1)");
  a = goodArgs(m);
  a.windowRight = -5; // Any negative bound means unbounded: accepted.
  EXPECT_TRUE(validateAttentionForward(m, a).ok());
  a = goodArgs(m);
  a.softcap = 30;
  expectRejected(m, a, "softcap = 30 does not match the kernel's softcap = 0");
  a = goodArgs(m);
  a.scale = 0.1;
  expectRejected(m, a,
                 "scale = 0.1 does not match the kernel's scale = "
                 "0.125");
  a = goodArgs(m);
  a.scale = 0.125 * (1 + 1e-12); // Rounding noise is tolerated.
  EXPECT_TRUE(validateAttentionForward(m, a).ok());
}

TEST(RuntimeValidation, RejectsTensorsBeyond32BitIndexing) {
  KernelMetadata m = smallMeta();
  AttentionArgs a = goodArgs(m);
  a.seqQ = int64_t(1) << 22; // 2*8*2^22*64 = 2^32 query elements.
  a.setContiguousStrides();
  expectRejected(m, a,
                 "query tensor of shape [2, 8, 4194304, 64] has 4294967296 "
                 "elements; at most 2^31-1 are supported");
  a = goodArgs(m);
  a.seqKV = int64_t(1) << 62; // Overflows int64 arithmetic.
  a.setContiguousStrides();
  expectRejected(m, a, "has more than 2^63 elements");
  // Exactly 2^31 - 1 elements would be allowed by the counting rule.
  EXPECT_EQ(kMaxTensorElements, 2147483647);
}

TEST(RuntimeValidation, RejectsOverlappingOutputs) {
  KernelMetadata m = smallMeta();
  AttentionArgs a = goodArgs(m);
  a.o = a.q + 4096; // Inside Q (256 KiB); O is 128 KiB.
  expectRejected(m, a, "output [0x40001000, 0x40021000) overlaps query");
  a = goodArgs(m);
  a.lse = a.o + 1024;
  expectRejected(m, a, "overlaps lse");
  a = goodArgs(m);
  a.o = a.q + 2 * 8 * 128 * 64 * 2; // Right after Q: fine.
  Status s = validateAttentionForward(m, a);
  EXPECT_TRUE(s.ok()) << s.message();
  // Inputs may alias each other (e.g. self-attention with K == V).
  a = goodArgs(m);
  a.k = a.q;
  s = validateAttentionForward(m, a);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(RuntimeValidation, RejectsBackwardKernels) {
  KernelMetadata m = parseOrDie(goodBackwardMeta());
  expectRejected(m, goodArgs(m),
                 "kernel 'fa_bwd' is a backward kernel; attentionForward "
                 "needs a forward kernel");
}

TEST(RuntimeValidation, FlopCount) {
  // 4*B*Hq*Nq*Nk*D for D == Dv; causal with Nq == Nk halves it.
  EXPECT_DOUBLE_EQ(attentionForwardFlops(2, 8, 1024, 1024, 128, 128, false),
                   4.0 * 2 * 8 * 1024 * 1024 * 128);
  EXPECT_DOUBLE_EQ(attentionForwardFlops(2, 8, 1024, 1024, 128, 128, true),
                   2.0 * 2 * 8 * 1024 * 1024 * 128);
  // Causal with Nq != Nk is not halved (the mask is bottom-right aligned).
  EXPECT_DOUBLE_EQ(attentionForwardFlops(1, 1, 128, 256, 64, 64, true),
                   4.0 * 128 * 256 * 64);
  // D != Dv: 2*(D + Dv) per (query, key) pair.
  EXPECT_DOUBLE_EQ(attentionForwardFlops(1, 1, 10, 10, 64, 32, false),
                   2.0 * 100 * (64 + 32));
  KernelMetadata m = parseOrDie(goodMeta());
  EXPECT_DOUBLE_EQ(attentionForwardFlops(m), 2.0 * 2 * 8 * 1024 * 1024 * 128);
}

} // namespace

namespace {

/// A varlen kernel (hd 64, 8 query heads, block_q 64) and a call of three
/// packed sequences in 300 query and 500 key rows.
std::pair<KernelMetadata, AttentionArgs> varlenCall() {
  KernelMetadata m = parseOrDie(
      patched(goodMeta(), {{"batch", nullptr},
                           {"seq_q", nullptr},
                           {"seq_kv", nullptr},
                           {"grid", nullptr},
                           {"args",
                            {"q", "k", "v", "o", "lse", "cu_seqlens_q",
                             "cu_seqlens_k", "seq_q", "seq_kv", "seq_offsets"}},
                           {"runtime_shapes", true},
                           {"varlen", true}}));
  AttentionArgs a = AttentionArgs::fromMetadata(m);
  a.batch = 1;
  a.seqQ = 300;
  a.seqKV = 500;
  a.setContiguousStrides();
  a.q = 1 * kGiB;
  a.k = 2 * kGiB;
  a.v = 3 * kGiB;
  a.o = 4 * kGiB;
  a.lse = 5 * kGiB;
  a.cuSeqlensQ = 6 * kGiB;
  a.cuSeqlensK = 6 * kGiB + 64;
  a.sequences = 3;
  a.maxSeqQ = 200;
  return {m, a};
}

TEST(RuntimeValidation, VarlenNeedsAlignedOffsetsAndTheCallsSequences) {
  auto [m, a] = varlenCall();
  Status s = validateAttentionForward(m, a);
  EXPECT_TRUE(s.ok()) << s.message();
  // The parameters: the offsets' pointers, the packed lengths and
  // sequences + 1 offsets.
  StatusOr<KernelMetadata> shaped =
      m.instantiate(1, a.seqQ, a.seqKV, a.sequences, a.maxSeqQ);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  StatusOr<KernelParams> params = forwardKernelParams(*shaped, a, nullptr);
  ASSERT_TRUE(params.ok()) << params.status().message();
  void **slots = params->data();
  EXPECT_EQ(*static_cast<CUdeviceptr *>(slots[5]), a.cuSeqlensQ);
  EXPECT_EQ(*static_cast<CUdeviceptr *>(slots[6]), a.cuSeqlensK);
  EXPECT_EQ(*static_cast<int64_t *>(slots[7]), 300);
  EXPECT_EQ(*static_cast<int64_t *>(slots[8]), 500);
  EXPECT_EQ(*static_cast<int64_t *>(slots[9]), 4);

  AttentionArgs noOffsets = a;
  noOffsets.cuSeqlensK = 0;
  expectRejected(m, noOffsets, "cu_seqlens_k is null");
  AttentionArgs misaligned = a;
  misaligned.cuSeqlensQ += 2;
  expectRejected(m, misaligned, "cu_seqlens_q must be 4-byte aligned");
  AttentionArgs noSequences = a;
  noSequences.sequences = 0;
  expectRejected(m, noSequences, "need at least one sequence");
  AttentionArgs tooLong = a;
  tooLong.maxSeqQ = 301;
  expectRejected(m, tooLong, "max_seqlen_q 301");
  // Offsets given to a kernel that would ignore them.
  KernelMetadata dense = smallMeta();
  AttentionArgs packed = goodArgs(dense);
  packed.cuSeqlensQ = 6 * kGiB;
  expectRejected(dense, packed, "takes no packed sequences");
}

} // namespace

namespace {

/// An FP8 forward: e4m3 inputs, f16 output, the three descales.
KernelMetadata fp8Meta() {
  return parseOrDie(patched(
      goodMeta(),
      {{"dtype", "e4m3"},
       {"out_dtype", "f16"},
       {"args",
        {"q", "k", "v", "o", "lse", "q_descale", "k_descale", "v_descale"}}}));
}

TEST(RuntimeValidation, FP8TakesDescalesAndItsOutputType) {
  KernelMetadata m = fp8Meta();
  EXPECT_TRUE(m.isFP8());
  EXPECT_EQ(m.outDtype, DType::F16);
  EXPECT_EQ(elementSize(m.dtype), 1u);
  AttentionArgs a = goodArgs(m);
  EXPECT_EQ(a.outDtype, DType::F16);
  a.qDescale = 6 * kGiB;
  a.kDescale = 7 * kGiB;
  a.vDescale = 8 * kGiB;
  Status s = validateAttentionForward(m, a);
  EXPECT_TRUE(s.ok()) << s.message();
  AttentionArgs missing = a;
  missing.kDescale = 0;
  expectRejected(m, missing, "k_descale");
  AttentionArgs wrongOut = a;
  wrongOut.outDtype = DType::BF16;
  expectRejected(m, wrongOut,
                 "output dtype bf16 does not match the kernel's "
                 "f16");
  // A 16-bit kernel refuses descales: they would be ignored.
  KernelMetadata plain = smallMeta();
  AttentionArgs extra = goodArgs(plain);
  extra.vDescale = 6 * kGiB;
  expectRejected(plain, extra, "descales given");
}

TEST(RuntimeMetadata, FP8KernelsMustTakeTheirDescales) {
  std::string message = parseError(
      patched(goodMeta(), {{"dtype", "e4m3"}, {"out_dtype", "bf16"}}));
  EXPECT_NE(message.find("must take 'q_descale'"), std::string::npos)
      << message;
}

} // namespace
