//===- BackwardTest.cpp - attentionBackward validation and workspace ------===//
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

/// B=2, Hq=8, Hkv=2, Nq=300, Nk=200, D=Dv=64, causal, scale 0.125.
KernelMetadata backwardMeta() { return parseOrDie(goodBackwardMeta()); }

/// Valid arguments for `m` with fake pointers 1 GiB apart.
AttentionBackwardArgs goodArgs(const KernelMetadata &m) {
  AttentionBackwardArgs a = AttentionBackwardArgs::fromMetadata(m);
  a.q = 1 * kGiB;
  a.k = 2 * kGiB;
  a.v = 3 * kGiB;
  a.o = 4 * kGiB;
  a.dO = 5 * kGiB;
  a.lse = 6 * kGiB;
  a.dq = 7 * kGiB;
  a.dk = 8 * kGiB;
  a.dv = 9 * kGiB;
  return a;
}

constexpr CUdeviceptr kWorkspace = 10 * kGiB;

void expectRejected(const KernelMetadata &m, const AttentionBackwardArgs &a,
                    const std::string &expected,
                    CUdeviceptr workspace = kWorkspace) {
  Status s = validateAttentionBackward(m, a, workspace);
  ASSERT_FALSE(s.ok()) << "accepted; expected: " << expected;
  EXPECT_NE(s.message().find(expected), std::string::npos)
      << "message: " << s.message() << "\nexpected to contain: " << expected;
  // The launcher rejects it the same way, before it would need a driver.
  Status launch = attentionBackward(Kernel::unloaded(m), a, workspace);
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.message().find(expected), std::string::npos)
      << launch.message();
  EXPECT_EQ(launch.message().find("not loaded"), std::string::npos);
}

TEST(RuntimeBackward, AcceptsGoodArguments) {
  KernelMetadata m = backwardMeta();
  AttentionBackwardArgs a = goodArgs(m);
  EXPECT_TRUE(validateAttentionBackward(m, a).ok());
  Status s = validateAttentionBackward(m, a, kWorkspace);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(a.strideQ, (std::array<int64_t, 4>{8 * 300 * 64, 300 * 64, 64, 1}));
  EXPECT_EQ(a.strideDQ, a.strideQ);
  EXPECT_EQ(a.strideDK, (std::array<int64_t, 4>{2 * 200 * 64, 200 * 64, 64, 1}));
  EXPECT_EQ(a.strideDV, a.strideV);
  EXPECT_EQ(a.strideDO, a.strideO);
  EXPECT_EQ(a.strideLSE, (std::array<int64_t, 3>{8 * 300, 300, 1}));
  Status launch = attentionBackward(Kernel::unloaded(m), a, kWorkspace);
  ASSERT_FALSE(launch.ok());
  EXPECT_NE(launch.message().find("kernel is not loaded"), std::string::npos)
      << launch.message();
}

TEST(RuntimeBackward, WorkspaceSize) {
  KernelMetadata m = backwardMeta();
  // delta: 2*8*300 f32 = 19200 bytes -> 19200 (a multiple of 256: 75*256);
  // dq_acc: 2*8*300*64 f32 = 1228800 bytes.
  BackwardWorkspaceLayout l = backwardWorkspaceLayout(m);
  EXPECT_EQ(l.deltaOffset, 0u);
  EXPECT_EQ(l.deltaBytes, 19200u);
  EXPECT_EQ(l.dqAccOffset, 19200u);
  EXPECT_EQ(l.dqAccBytes, 1228800u);
  EXPECT_EQ(attentionBackwardWorkspaceBytes(m), 19200u + 1228800u);
  // Pieces are padded to 256 bytes: B=1, Hq=1, Nq=1, D=64 (heads_kv 1).
  MetaJson meta =
      patched(goodBackwardMeta(),
              {{"batch", 1}, {"heads_q", 1}, {"heads_kv", 1}, {"seq_q", 1}});
  KernelMetadata tiny = parseOrDie(meta);
  l = backwardWorkspaceLayout(tiny);
  EXPECT_EQ(l.deltaBytes, 4u);
  EXPECT_EQ(l.dqAccOffset, 256u);
  EXPECT_EQ(l.dqAccBytes, 256u);
  EXPECT_EQ(attentionBackwardWorkspaceBytes(tiny), 512u);
  meta["head_dim"] = 72;
  EXPECT_EQ(attentionBackwardWorkspaceBytes(parseOrDie(meta)), 256u + 512u);
  EXPECT_EQ(l.totalBytes % kWorkspaceAlignment, 0u);
}

/// A deterministic backward: dq_turns (i32, one per batch, query head and
/// Q block) after dq_acc in the workspace; the metadata must say so with
/// both the key and the parameter.
TEST(RuntimeBackward, DeterministicTurnsInTheWorkspace) {
  const MetaJson turnsArgs = {"q",     "k",      "v",  "do", "lse",
                              "delta", "dq_acc", "dk", "dv", "dq_turns"};
  KernelMetadata m = parseOrDie(patched(
      goodBackwardMeta(), {{"args", turnsArgs}, {"deterministic", true}}));
  EXPECT_TRUE(m.deterministic);
  BackwardWorkspaceLayout l = backwardWorkspaceLayout(m);
  // 2 batches x 8 heads x ceil(300 / 64) = 5 Q blocks, i32.
  EXPECT_EQ(l.dqTurnsOffset, 19200u + 1228800u);
  EXPECT_EQ(l.dqTurnsBytes, 2u * 8u * 5u * 4u);
  EXPECT_EQ(attentionBackwardWorkspaceBytes(m), 19200u + 1228800u + 512u);
  EXPECT_EQ(l.totalBytes % kWorkspaceAlignment, 0u);
  // Without the key, the parameter is an error; with it, its absence is.
  EXPECT_NE(parseError(patched(goodBackwardMeta(), {{"args", turnsArgs}}))
                .find("deterministic backward's"),
            std::string::npos);
  EXPECT_NE(parseError(patched(goodBackwardMeta(), {{"deterministic", true}}))
                .find("must take 'dq_turns'"),
            std::string::npos);
  // A forward is never deterministic in this sense.
  EXPECT_NE(parseError(patched(goodMeta(), {{"deterministic", true}}))
                .find("only backward kernels"),
            std::string::npos);
  // Without it the layout is as before.
  EXPECT_EQ(backwardWorkspaceLayout(backwardMeta()).dqTurnsBytes, 0u);
}

TEST(RuntimeBackward, RejectsForwardKernels) {
  KernelMetadata f = parseOrDie(goodMeta());
  AttentionBackwardArgs a = goodArgs(f);
  expectRejected(f, a,
                 "kernel 'fa_fwd' is a forward kernel; attentionBackward "
                 "needs a backward kernel");
}

TEST(RuntimeBackward, RejectsNullPointers) {
  KernelMetadata m = backwardMeta();
  struct {
    CUdeviceptr AttentionBackwardArgs::*field;
    const char *name;
  } cases[] = {{&AttentionBackwardArgs::q, "query"},
               {&AttentionBackwardArgs::k, "key"},
               {&AttentionBackwardArgs::v, "value"},
               {&AttentionBackwardArgs::o, "output"},
               {&AttentionBackwardArgs::dO, "grad_output"},
               {&AttentionBackwardArgs::lse, "lse"},
               {&AttentionBackwardArgs::dq, "grad_query"},
               {&AttentionBackwardArgs::dk, "grad_key"},
               {&AttentionBackwardArgs::dv, "grad_value"}};
  for (const auto &c : cases) {
    AttentionBackwardArgs a = goodArgs(m);
    a.*c.field = 0;
    expectRejected(m, a, std::string(c.name) + " pointer is null");
  }
}

TEST(RuntimeBackward, RejectsBadWorkspaces) {
  KernelMetadata m = backwardMeta();
  AttentionBackwardArgs a = goodArgs(m);
  expectRejected(m, a, "workspace pointer is null (allocate "
                       "attentionBackwardWorkspaceBytes() = 1248000 bytes)",
                 0);
  expectRejected(m, a, "workspace pointer 0x280000010 is not 256-byte aligned",
                 kWorkspace + 16);
  // Overlapping a tensor (dq_acc would clobber the query).
  expectRejected(m, a, "workspace [0x40000000, 0x40130b00) overlaps query",
                 a.q);
  expectRejected(m, a, "overlaps grad_key", a.dk - 256);
  // Right after dV: fine.
  Status s = validateAttentionBackward(m, a, a.dv + 2 * 2 * 200 * 64 * 2);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(RuntimeBackward, RejectsMisalignedPointers) {
  KernelMetadata m = backwardMeta();
  AttentionBackwardArgs a = goodArgs(m);
  a.dO += 8;
  expectRejected(m, a, "grad_output pointer 0x140000008 is not 16-byte aligned");
  a = goodArgs(m);
  a.dk += 2;
  expectRejected(m, a, "grad_key pointer 0x200000002 is not 16-byte aligned");
  a = goodArgs(m);
  a.lse += 2;
  expectRejected(m, a, "lse pointer 0x180000002 is not 4-byte aligned");
  a = goodArgs(m);
  a.lse += 4;
  EXPECT_TRUE(validateAttentionBackward(m, a, kWorkspace).ok());
}

TEST(RuntimeBackward, RejectsNonContiguousStrides) {
  KernelMetadata m = backwardMeta();
  struct {
    std::array<int64_t, 4> AttentionBackwardArgs::*field;
    const char *name;
  } cases[] = {{&AttentionBackwardArgs::strideQ, "query stride"},
               {&AttentionBackwardArgs::strideK, "key stride"},
               {&AttentionBackwardArgs::strideV, "value stride"},
               {&AttentionBackwardArgs::strideO, "output stride"},
               {&AttentionBackwardArgs::strideDO, "grad_output stride"},
               {&AttentionBackwardArgs::strideDQ, "grad_query stride"},
               {&AttentionBackwardArgs::strideDK, "grad_key stride"},
               {&AttentionBackwardArgs::strideDV, "grad_value stride"}};
  for (const auto &c : cases) {
    AttentionBackwardArgs a = goodArgs(m);
    (a.*c.field)[2] += 8; // Padded rows.
    expectRejected(m, a, c.name);
  }
  AttentionBackwardArgs a = goodArgs(m);
  a.strideLSE = {300, 2 * 300, 1};
  expectRejected(m, a, "lse stride");
}

TEST(RuntimeBackward, RejectsShapeDtypeAndFlagMismatches) {
  KernelMetadata m = backwardMeta();
  struct {
    int64_t AttentionBackwardArgs::*field;
    int64_t value;
    const char *expected;
  } cases[] = {
      {&AttentionBackwardArgs::batch, 3,
       "batch = 3 does not match the kernel's batch = 2"},
      {&AttentionBackwardArgs::headsQ, 4,
       "heads_q = 4 does not match the kernel's heads_q = 8"},
      {&AttentionBackwardArgs::headsKV, 4,
       "heads_kv = 4 does not match the kernel's heads_kv = 2"},
      {&AttentionBackwardArgs::seqQ, 301,
       "seq_q = 301 does not match the kernel's seq_q = 300"},
      {&AttentionBackwardArgs::seqKV, 300,
       "seq_kv = 300 does not match the kernel's seq_kv = 200"},
      {&AttentionBackwardArgs::headDim, 128,
       "head_dim = 128 does not match the kernel's head_dim = 64"},
      {&AttentionBackwardArgs::headDimV, 32,
       "head_dim_v = 32 does not match the kernel's head_dim_v = 64"},
      {&AttentionBackwardArgs::seqKV, 0, "seq_kv must be positive, got 0"},
      {&AttentionBackwardArgs::headsKV, 3,
       "heads_q (8) must be a multiple of heads_kv (3)"},
  };
  for (const auto &c : cases) {
    AttentionBackwardArgs a = goodArgs(m);
    a.*c.field = c.value;
    a.setContiguousStrides();
    expectRejected(m, a, c.expected);
  }
  AttentionBackwardArgs a = goodArgs(m);
  a.dtype = DType::F16;
  expectRejected(m, a, "dtype f16 does not match the kernel's bf16");
  a = goodArgs(m);
  a.causal = false;
  expectRejected(m, a, "causal = 0 does not match the kernel's causal = 1");
  a = goodArgs(m);
  a.windowRight = 8;
  expectRejected(m, a, "window (-1, 8) does not match");
  a = goodArgs(m);
  a.softcap = 30;
  expectRejected(m, a, "softcap = 30 does not match the kernel's softcap = 0");
  a = goodArgs(m);
  a.scale = 0.1;
  expectRejected(m, a, "scale = 0.1 does not match the kernel's scale = 0.125");
}

TEST(RuntimeBackward, RejectsTensorsBeyond32BitIndexing) {
  KernelMetadata m = backwardMeta();
  AttentionBackwardArgs a = goodArgs(m);
  a.seqKV = int64_t(1) << 24; // 2*2*2^24*64 = 2^32 key elements.
  a.setContiguousStrides();
  expectRejected(m, a,
                 "key tensor of shape [2, 2, 16777216, 64] has 4294967296 "
                 "elements; at most 2^31-1 are supported");
  a = goodArgs(m);
  a.seqQ = int64_t(1) << 62;
  a.setContiguousStrides();
  expectRejected(m, a, "has more than 2^63 elements");
}

TEST(RuntimeBackward, RejectsOverlappingOutputs) {
  KernelMetadata m = backwardMeta();
  AttentionBackwardArgs a = goodArgs(m);
  a.dq = a.q + 4096;
  expectRejected(m, a, "grad_query [0x40001000, 0x40097000) overlaps query");
  a = goodArgs(m);
  a.dk = a.dv; // The two gradients must be distinct.
  expectRejected(m, a, "grad_key");
  a = goodArgs(m);
  a.dv = a.lse + 1024;
  expectRejected(m, a, "overlaps lse");
  a = goodArgs(m);
  a.dq = a.dO;
  expectRejected(m, a, "overlaps grad_output");
  // Inputs may alias each other (K == V, O == dO are the caller's business).
  a = goodArgs(m);
  a.k = a.v;
  Status s = validateAttentionBackward(m, a, kWorkspace);
  EXPECT_TRUE(s.ok()) << s.message();
}

/// goodBackwardMeta() as a varlen kernel set (fa-compile --varlen
/// --backward): no batch, lengths or grids; the offsets and the size
/// parameters in the arguments.
KernelMetadata varlenBackwardMeta() {
  return parseOrDie(patched(
      goodBackwardMeta(),
      {{"batch", nullptr},
       {"seq_q", nullptr},
       {"seq_kv", nullptr},
       {"grid", nullptr},
       {"args", {"q",
                 "k",
                 "v",
                 "do",
                 "lse",
                 "delta",
                 "dq_acc",
                 "dk",
                 "dv",
                 "cu_seqlens_q",
                 "cu_seqlens_k",
                 "seq_q",
                 "seq_kv",
                 "seq_kv",
                 "seq_q",
                 "seq_q",
                 "seq_q",
                 "seq_q",
                 "seq_kv",
                 "seq_kv",
                 "seq_offsets",
                 "seq_offsets"}},
       {"pre",
        {{"grid", nullptr},
         {"args",
          {"o", "do", "delta", "dq_acc", "seq_q", "seq_q", "seq_q", "seq_q"}}}},
       {"post",
        {{"grid", nullptr}, {"args", {"dq_acc", "dq", "seq_q", "seq_q"}}}},
       {"runtime_shapes", true},
       {"varlen", true}}));
}

/// Valid packed-sequence arguments: 3 sequences, 900 query rows (the
/// longest 500), 700 key rows (the longest 400).
AttentionBackwardArgs varlenArgs(const KernelMetadata &m) {
  AttentionBackwardArgs a = goodArgs(m);
  a.batch = 1;
  a.seqQ = 900;
  a.seqKV = 700;
  a.setContiguousStrides();
  a.cuSeqlensQ = 11 * kGiB;
  a.cuSeqlensK = 12 * kGiB;
  a.sequences = 3;
  a.maxSeqQ = 500;
  a.maxSeqKV = 400;
  return a;
}

TEST(RuntimeBackward, VarlenGridsAndWorkspaceAreTheCalls) {
  KernelMetadata m = varlenBackwardMeta();
  EXPECT_TRUE(m.varlen && m.runtimeShapes);
  AttentionBackwardArgs a = varlenArgs(m);
  StatusOr<KernelMetadata> shaped =
      m.instantiate(1, a.seqQ, a.seqKV, a.sequences, a.maxSeqQ, a.maxSeqKV);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  // The main kernel: a block per KV block of the longest key sequence.
  EXPECT_EQ(shaped->grid.x, 7u); // ceil(400 / 64)
  EXPECT_EQ(shaped->grid.y, 2u);
  EXPECT_EQ(shaped->grid.z, 3u);
  // The row kernels: a warp per query row of every sequence.
  for (const LaunchSpec *rows : {&shaped->pre, &shaped->post}) {
    EXPECT_EQ(rows->grid.x, 225u); // 900 / 4
    EXPECT_EQ(rows->grid.y, 8u);
    EXPECT_EQ(rows->grid.z, 1u);
  }
  // delta [1, 8, 900] (28,800 bytes, to 256: 28,928) and dq_acc [1, 8,
  // 900, 64], f32; the kernel's own metadata has no rows to size.
  EXPECT_EQ(attentionBackwardWorkspaceBytes(m, a),
            size_t(28928) + size_t(900) * 8 * 64 * 4);
  EXPECT_EQ(attentionBackwardWorkspaceBytes(m), 0u);
  EXPECT_TRUE(validateAttentionBackward(m, a, kWorkspace).ok());

  auto refused = [&](AttentionBackwardArgs bad, const std::string &expected) {
    Status s = validateAttentionBackward(m, bad, kWorkspace);
    ASSERT_FALSE(s.ok()) << expected;
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  };
  AttentionBackwardArgs bad = a;
  bad.maxSeqKV = 0;
  refused(bad, "longest key sequence in [1, seq_kv = 700]");
  bad = a;
  bad.maxSeqKV = 701;
  refused(bad, "got max_seqlen_k 701");
  bad = a;
  bad.cuSeqlensK = 0;
  refused(bad, "cu_seqlens_k is null");
  bad = a;
  bad.cuSeqlensQ = 11 * kGiB + 2;
  refused(bad, "cu_seqlens_q must be 4-byte aligned");
  // A kernel built for one shape takes no offsets.
  AttentionBackwardArgs dense = goodArgs(backwardMeta());
  dense.cuSeqlensQ = 11 * kGiB;
  Status s = validateAttentionBackward(backwardMeta(), dense, kWorkspace);
  EXPECT_NE(s.message().find("takes no packed sequences"), std::string::npos)
      << s.message();
}

TEST(RuntimeBackward, RuntimeShapesGridsAndWorkspaceAreTheCalls) {
  // goodBackwardMeta() compiled with --runtime-shapes: no batch, lengths
  // or grids; the size parameters in the arguments.
  KernelMetadata m = parseOrDie(patched(
      goodBackwardMeta(),
      {{"batch", nullptr},
       {"seq_q", nullptr},
       {"seq_kv", nullptr},
       {"grid", nullptr},
       {"args",
        {"q",      "k",     "v",     "do",     "lse",   "delta",  "dq_acc",
         "dk",     "dv",    "batch", "seq_q",  "batch", "seq_kv", "batch",
         "seq_kv", "batch", "seq_q", "batch",  "seq_q", "batch",  "seq_q",
         "batch",  "seq_q", "batch", "seq_kv", "batch", "seq_kv"}},
       {"pre",
        {{"grid", nullptr},
         {"args", {"o", "do", "delta", "dq_acc", "batch", "seq_q"}}}},
       {"post",
        {{"grid", nullptr}, {"args", {"dq_acc", "dq", "batch", "seq_q"}}}},
       {"runtime_shapes", true}}));
  EXPECT_TRUE(m.runtimeShapes && !m.varlen);
  StatusOr<KernelMetadata> shaped = m.instantiate(3, 300, 200);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  EXPECT_EQ(shaped->grid.x, 4u); // ceil(200 / 64) KV blocks
  EXPECT_EQ(shaped->grid.y, 2u);
  EXPECT_EQ(shaped->grid.z, 3u);
  for (const LaunchSpec *rows : {&shaped->pre, &shaped->post}) {
    EXPECT_EQ(rows->grid.x, 75u); // 300 / 4 rows a block
    EXPECT_EQ(rows->grid.y, 8u);
    EXPECT_EQ(rows->grid.z, 3u);
  }
  AttentionBackwardArgs a = goodArgs(m);
  a.batch = 3;
  a.seqQ = 300;
  a.seqKV = 200;
  a.setContiguousStrides();
  EXPECT_TRUE(validateAttentionBackward(m, a, kWorkspace).ok());
  EXPECT_EQ(attentionBackwardWorkspaceBytes(m, a),
            attentionBackwardWorkspaceBytes(*shaped));
  a.seqKV = 0;
  Status s = validateAttentionBackward(m, a, kWorkspace);
  EXPECT_NE(s.message().find("must be positive"), std::string::npos)
      << s.message();
}

/// A kernel set compiled with grad_lse takes dLSE (f32, lse's shape) in
/// its pre kernel; others refuse one, so that a gradient is never dropped.
TEST(RuntimeBackward, GradLseGoesOnlyToKernelsThatTakeIt) {
  KernelMetadata without = parseOrDie(goodBackwardMeta());
  AttentionBackwardArgs a = goodArgs(without);
  a.dlse = 11 * kGiB;
  expectRejected(without, a, "grad_lse pointer given, but kernel");

  KernelMetadata with = parseOrDie(
      patched(goodBackwardMeta(),
              {{"pre", {{"args", {"o", "do", "dlse", "delta", "dq_acc"}}}}}));
  AttentionBackwardArgs b = goodArgs(with);
  expectRejected(with, b, "grad_lse pointer is null");
  b.dlse = 11 * kGiB + 2;
  expectRejected(with, b, "grad_lse pointer 0x");
  b.dlse = 11 * kGiB;
  Status s = validateAttentionBackward(with, b, kWorkspace);
  EXPECT_TRUE(s.ok()) << s.message();
  // It is an input: an output over it is an overlap.
  b.dq = b.dlse;
  expectRejected(with, b, "overlap");
}

TEST(RuntimeBackward, FlopCountIsTwoAndAHalfForwards) {
  KernelMetadata m = backwardMeta();
  EXPECT_DOUBLE_EQ(attentionBackwardFlops(m), 2.5 * attentionForwardFlops(m));
  EXPECT_DOUBLE_EQ(kBackwardFlopsFactor, 2.5);
}

} // namespace
