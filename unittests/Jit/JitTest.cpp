//===- JitTest.cpp - The runtime's JIT: compile once, then cache ----------===//
//
// CPU-only parts compile to PTX for an explicit chip (no driver needed) and
// use a driver that is deterministically absent; the tests that need a GPU
// report SKIPPED without one.
//
//===----------------------------------------------------------------------===//

#include "JitTestFixture.h"

#include "fa/Reference/Reference.h"
#include "fa/Runtime/Runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace fa;
using namespace fa::jit;
using namespace fa::jit::test;
using namespace fa::rt;

namespace {

TEST_F(JitTest, MissThenHitCompilesOnce) {
  const AttentionConfig config = smallConfig();
  uint64_t before = compilerInvocations();
  KernelCache cache(dir_);
  StatusOr<JitArtifact> first =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(compilerInvocations(), before + 1);
  EXPECT_TRUE(first->compiled);
  EXPECT_EQ(first->outcome, CacheOutcome::Built);
  EXPECT_TRUE(first->warning.empty()) << first->warning;
  EXPECT_EQ(entries(), 1);
  EXPECT_TRUE(contains(first->image, ".target sm_90")) << first->image;
  EXPECT_TRUE(contains(first->image, ".entry fa_fwd"));
  const KernelMetadata &m = first->metadata;
  EXPECT_EQ(m.kind, KernelKind::Forward);
  EXPECT_EQ(m.entry, "fa_fwd");
  // sm_90 gets the warp-specialized WGMMA forward, built for sm_90a.
  EXPECT_EQ(m.chip, "sm_90a");
  EXPECT_EQ(m.headsQ, 4);
  EXPECT_EQ(m.headsKV, 2);
  EXPECT_EQ(m.seqQ, 100);
  EXPECT_EQ(m.seqKV, 130);
  EXPECT_EQ(m.headDim, 64);
  EXPECT_TRUE(m.causal);
  EXPECT_EQ(first->key.chip, "sm_90");
  EXPECT_EQ(first->key.compilerVersion, mlir::fa::compilerVersion());

  // The same cache object: from memory.
  StatusOr<JitArtifact> again =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->outcome, CacheOutcome::MemoryHit);
  EXPECT_FALSE(again->compiled);

  // Another cache object on the same directory (another process): from disk.
  KernelCache other(dir_);
  StatusOr<JitArtifact> disk =
      buildForwardKernel(config, other, ptxFor90_, noDriver_);
  ASSERT_TRUE(disk.ok()) << disk.status().message();
  EXPECT_EQ(disk->outcome, CacheOutcome::DiskHit);
  EXPECT_FALSE(disk->compiled);
  EXPECT_EQ(disk->image, first->image);
  EXPECT_EQ(disk->metadataText, first->metadataText);
  EXPECT_EQ(compilerInvocations(), before + 1);
}

TEST_F(JitTest, KeySeparatesConfigsChipsAndFormats) {
  AttentionConfig a = smallConfig(), b = smallConfig();
  b.causal = false;
  CacheKey ka = forwardCacheKey(a, "sm_90", ImageFormat::PTX);
  EXPECT_NE(ka.serialize(),
            forwardCacheKey(b, "sm_90", ImageFormat::PTX).serialize());
  EXPECT_NE(ka.serialize(),
            forwardCacheKey(a, "sm_80", ImageFormat::PTX).serialize());
  EXPECT_NE(ka.serialize(),
            forwardCacheKey(a, "sm_90", ImageFormat::Cubin).serialize());
  // config.chip is replaced by the target chip, not mixed in.
  a.chip = "sm_75";
  EXPECT_EQ(ka.serialize(),
            forwardCacheKey(a, "sm_90", ImageFormat::PTX).serialize());
}

TEST_F(JitTest, RuntimeShapesAreOneEntryForEveryLength) {
  AttentionConfig config = smallConfig();
  config.runtimeShapes = true;
  uint64_t before = compilerInvocations();
  KernelCache cache(dir_);
  StatusOr<JitArtifact> first =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  const KernelMetadata &m = first->metadata;
  EXPECT_TRUE(m.runtimeShapes);
  EXPECT_EQ(m.batch, 0);
  EXPECT_EQ(m.seqQ, 0);
  EXPECT_EQ(m.seqKV, 0);
  EXPECT_TRUE(m.hasArg("seq_kv"));
  // The sizes after the tensors and maps, each distinct one once: batch,
  // seq_q, seq_kv.
  EXPECT_TRUE(contains(first->image, ".param .u64 fa_fwd_param_10"));
  EXPECT_FALSE(contains(first->image, "fa_fwd_param_11"));

  // Other lengths and batches: the same entry, not compiled again.
  config.batch = 3;
  config.seqQ = 4097;
  config.seqKV = 17;
  KernelCache other(dir_);
  StatusOr<JitArtifact> again =
      buildForwardKernel(config, other, ptxFor90_, noDriver_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(compilerInvocations(), before + 1);
  EXPECT_EQ(entries(), 1);
  // A static kernel of the same problem is a different entry.
  config.runtimeShapes = false;
  EXPECT_NE(forwardCacheKey(config, "sm_90", ImageFormat::PTX).serialize(),
            again->key.serialize());

  // Below Hopper the GPU tile level's mma.sync kernel takes them.
  config.runtimeShapes = true;
  StatusOr<JitArtifact> ampere =
      buildForwardKernel(config, cache, {"sm_80", ImageFormat::PTX}, noDriver_);
  ASSERT_TRUE(ampere.ok()) << ampere.status().message();
  EXPECT_TRUE(contains(ampere->metadataText, "\"runtime_shapes\": true"));
  EXPECT_TRUE(contains(ampere->metadataText, "\"chip\": \"sm_80\""));
}

TEST_F(JitTest, BadConfigsGiveTheCompilersDiagnostics) {
  struct Case {
    const char *what;
    void (*edit)(AttentionConfig &);
    const char *expected;
  };
  const Case cases[] = {
      {"dtype", [](AttentionConfig &c) { c.dtype = "f32"; },
       "unsupported dtype 'f32'"},
      {"zero dim", [](AttentionConfig &c) { c.seqQ = 0; },
       "every dimension must be positive"},
      // The cache key's default blocks multiplied these (int64 overflow,
      // UBSan) before the compiler refused them.
      {"negative head dim",
       [](AttentionConfig &c) { c.headDim = c.headDimV = -(int64_t(1) << 62); },
       "every dimension must be positive"},
      {"minimal head dim",
       [](AttentionConfig &c) { c.headDim = c.headDimV = INT64_MIN; },
       "every dimension must be positive"},
      {"GQA", [](AttentionConfig &c) { c.headsKV = 3; }, "3"},
      {"block", [](AttentionConfig &c) { c.blockQ = 48; }, "48"},
      {"backward", [](AttentionConfig &c) { c.backward = true; },
       "forward kernels only"},
  };
  KernelCache cache(dir_);
  for (const Case &c : cases) {
    AttentionConfig config = smallConfig();
    c.edit(config);
    StatusOr<JitArtifact> a =
        buildForwardKernel(config, cache, ptxFor90_, noDriver_);
    ASSERT_FALSE(a.ok()) << c.what;
    EXPECT_TRUE(contains(a.status().message(), c.expected))
        << c.what << ": " << a.status().message();
    if (!config.backward) {
      EXPECT_TRUE(contains(a.status().message(), "compiling "))
          << c.what << ": " << a.status().message();
    }
  }
  EXPECT_EQ(entries(), 0); // Failures are not cached.
}

TEST(AttentionConfigLimits, WgmmaKernelsTakePositiveHeadDimsOnly) {
  // -16 and -256 are multiples of 16 and at most 256: the limits must ask
  // for positive dims first, whoever calls them before the verifier.
  for (bool backward : {false, true})
    for (int64_t d : {int64_t(-16), int64_t(-256), int64_t(0)}) {
      AttentionConfig c;
      c.chip = "sm_90a";
      c.backward = backward;
      c.headDim = c.headDimV = d;
      EXPECT_FALSE(backward ? c.usesWgmmaBackward() : c.usesWgmmaForward())
          << (backward ? "backward" : "forward") << " at head dim " << d;
    }
}

TEST_F(JitTest, BackwardCompilesToPTXWithoutADriverAndIsCachedApart) {
  const AttentionConfig config = smallConfig(); // backward = false: still bwd.
  KernelCache cache(dir_);
  uint64_t before = compilerInvocations();
  StatusOr<JitArtifact> bwd =
      buildBackwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(bwd.ok()) << bwd.status().message();
  EXPECT_TRUE(bwd->compiled);
  EXPECT_EQ(bwd->format, ImageFormat::PTX);
  const KernelMetadata &m = bwd->metadata;
  EXPECT_EQ(m.kind, KernelKind::Backward);
  // sm_90 backwards at head dims 64 and 128 are the WGMMA kernels.
  EXPECT_EQ(m.chip, "sm_90a");
  EXPECT_EQ(m.entry, "fa_fwd");
  EXPECT_EQ(m.pre.entry, "fa_fwd_pre");
  EXPECT_EQ(m.post.entry, "fa_fwd_post");
  EXPECT_EQ(m.pre.args,
            (std::vector<std::string>{"o", "do", "delta", "dq_acc"}));
  EXPECT_EQ(m.post.args, (std::vector<std::string>{"dq_acc", "dq"}));
  for (const LaunchSpec &l : m.launches())
    EXPECT_TRUE(contains(bwd->image, ".entry " + l.entry + "(")) << l.entry;
  EXPECT_GT(attentionBackwardWorkspaceBytes(m), 0u);

  // The forward of the same config is a different entry; both stay cached.
  StatusOr<JitArtifact> fwd =
      buildForwardKernel(config, cache, ptxFor90_, noDriver_);
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_EQ(fwd->metadata.kind, KernelKind::Forward);
  EXPECT_NE(fwd->key.config, bwd->key.config);
  EXPECT_EQ(entries(), 2);
  EXPECT_EQ(compilerInvocations(), before + 2);

  KernelCache other(dir_);
  AttentionConfig asked = config;
  asked.backward = true; // Either spelling of the request finds the entry.
  StatusOr<JitArtifact> again =
      buildBackwardKernel(asked, other, ptxFor90_, noDriver_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FALSE(again->compiled);
  EXPECT_EQ(again->outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(again->image, bwd->image);
  EXPECT_EQ(again->metadata.configString(), m.configString());
  EXPECT_EQ(compilerInvocations(), before + 2);

  // Loading needs the driver.
  StatusOr<JitKernel> k =
      getBackwardKernel(config, other, ptxFor90_, noDriver_);
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(contains(k.status().message(), "no CUDA driver"))
      << k.status().message();
}

TEST_F(JitTest, NoDriverIsAnErrorNotACrash) {
  const AttentionConfig config = smallConfig();
  uint64_t before = compilerInvocations();
  KernelCache cache(dir_);
  StatusOr<JitKernel> k = getForwardKernel(config, cache, {}, noDriver_);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().message().rfind("no CUDA driver: ", 0), 0u)
      << k.status().message();
  // The chip comes from the device, and a cubin needs the driver.
  StatusOr<JitArtifact> a = buildForwardKernel(config, cache, {}, noDriver_);
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(contains(a.status().message(), "no CUDA driver"));
  a = buildForwardKernel(config, cache, {"sm_90", ImageFormat::Cubin},
                         noDriver_);
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(contains(a.status().message(), "no CUDA driver"));
  EXPECT_EQ(compilerInvocations(), before); // Nothing was compiled.
  EXPECT_FALSE(loadPrecompiledKernel("/nonexistent.ptx", "/nonexistent.meta",
                                     cache, noDriver_)
                   .ok());
}

TEST_F(JitTest, OfflineCubinNeedsNoDriverAndIsKeyedAsTheDevicesWouldBe) {
  const AttentionConfig config = smallConfig();
  KernelCache cache(dir_);
  JitOptions offline{"sm_90", ImageFormat::Cubin};
  offline.assembleOffline = true;
  StatusOr<JitArtifact> built =
      buildForwardKernel(config, cache, offline, noDriver_);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_TRUE(built->compiled);
  EXPECT_EQ(built->format, ImageFormat::Cubin);
  EXPECT_EQ(built->image.compare(0, 4,
                                 "\x7f"
                                 "ELF"),
            0);
  // The key a device reporting sm_90 computes for a driver-built cubin.
  EXPECT_EQ(built->key.serialize(),
            forwardCacheKey(config, "sm_90", ImageFormat::Cubin).serialize());
  StatusOr<JitArtifact> again =
      buildBackwardKernel(config, cache, offline, noDriver_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->metadata.kind, KernelKind::Backward);
  EXPECT_EQ(entries(), 2);
  // Offline assembly has no device to take the chip from.
  offline.chip.clear();
  StatusOr<JitArtifact> noChip =
      buildForwardKernel(config, cache, offline, noDriver_);
  ASSERT_FALSE(noChip.ok());
  EXPECT_TRUE(contains(noChip.status().message(), "needs the target chip"))
      << noChip.status().message();
}

//===----------------------------------------------------------------------===//
// With a GPU
//===----------------------------------------------------------------------===//

class JitGpuTest : public JitTest {
protected:
  void SetUp() override {
    JitTest::SetUp();
    Status s = Driver::get().initialize();
    if (!s.ok())
      GTEST_SKIP() << "no GPU: " << s.message();
  }
};

/// Runs `kernel` on random inputs, at `call`'s shape for a kernel with
/// runtime shapes, into poisoned (NaN) outputs; returns
/// ||O - ref|| / ||ref||.
double runAndCompare(const Kernel &kernel,
                     const KernelMetadata *call = nullptr) {
  const KernelMetadata &m = call ? *call : kernel.metadata();
  ref::AttentionShape shape{m.batch, m.headsQ,  m.headsKV, m.seqQ,
                            m.seqKV, m.headDim, m.headDimV};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<uint16_t> bits[3];
  std::vector<double> values[3];
  int64_t counts[3] = {ref::numelQ(shape), ref::numelK(shape),
                       ref::numelV(shape)};
  DeviceBuffer in[3];
  for (int t = 0; t < 3; ++t) {
    for (int64_t i = 0; i < counts[t]; ++i) {
      bits[t].push_back(floatTo16(m.dtype, normal(rng)));
      values[t].push_back(from16(m.dtype, bits[t].back()));
    }
    StatusOr<DeviceBuffer> b = DeviceBuffer::allocate(counts[t] * 2);
    EXPECT_TRUE(b.ok()) << b.status().message();
    if (!b.ok())
      return INFINITY;
    in[t] = std::move(*b);
    EXPECT_TRUE(in[t].upload(bits[t].data(), counts[t] * 2).ok());
  }
  int64_t nO = ref::numelO(shape), nLSE = ref::numelLSE(shape);
  StatusOr<DeviceBuffer> o = DeviceBuffer::allocate(nO * 2),
                         lse = DeviceBuffer::allocate(nLSE * 4);
  if (!o.ok() || !lse.ok())
    return INFINITY;
  EXPECT_TRUE(o->fill(0xFF).ok());
  AttentionArgs args = AttentionArgs::fromMetadata(m);
  args.q = in[0].ptr();
  args.k = in[1].ptr();
  args.v = in[2].ptr();
  args.o = o->ptr();
  args.lse = lse->ptr();
  Status s = attentionForward(kernel, args);
  if (s.ok())
    s = synchronize();
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<uint16_t> out(nO);
  EXPECT_TRUE(o->download(out.data(), nO * 2).ok());
  std::vector<double> got(nO), want(nO), wantLSE(nLSE);
  for (int64_t i = 0; i < nO; ++i)
    got[i] = from16(m.dtype, out[i]);
  ref::AttentionParams params;
  params.scale = m.scale;
  params.causal = m.causal;
  ref::attentionForward(shape, params, values[0].data(), values[1].data(),
                        values[2].data(), want.data(), wantLSE.data());
  return ref::relativeL2Error(got.data(), want.data(), nO);
}

TEST_F(JitGpuTest, CompilesOnFirstUseThenLoadsFromTheCache) {
  const AttentionConfig config = smallConfig();
  uint64_t before = compilerInvocations();
  KernelCache cache(dir_);
  StatusOr<JitKernel> first = getForwardKernel(config, cache);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->compiled);
  EXPECT_FALSE(first->cacheHit());
  EXPECT_EQ(first->kernel.metadata().chip, Driver::get().device().chip());
  EXPECT_LT(runAndCompare(first->kernel), 1e-2);

  KernelCache other(dir_);
  StatusOr<JitKernel> second = getForwardKernel(config, other);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE(second->cacheHit());
  EXPECT_FALSE(second->compiled);
  EXPECT_EQ(compilerInvocations(), before + 1);
  EXPECT_LT(runAndCompare(second->kernel), 1e-2);

  // Cubin entries (assembled by the driver's linker) load too.
  StatusOr<JitKernel> cubin =
      getForwardKernel(config, other, {"", ImageFormat::Cubin});
  ASSERT_TRUE(cubin.ok()) << cubin.status().message();
  EXPECT_EQ(cubin->kernel.metadata().chip, Driver::get().device().chip());
  EXPECT_LT(runAndCompare(cubin->kernel), 1e-2);
}

TEST_F(JitGpuTest, RuntimeShapesRunEveryLength) {
  AttentionConfig config = smallConfig();
  config.runtimeShapes = true;
  KernelCache cache(dir_);
  StatusOr<JitKernel> k = getForwardKernel(config, cache);
  ASSERT_TRUE(k.ok()) << k.status().message();
  ASSERT_TRUE(k->kernel.metadata().runtimeShapes);
  // Ragged lengths, Nq != Nk both ways (bottom-right causal: the first
  // 1000 - 64 rows of the fourth are fully masked), one row, batches.
  const int64_t shapes[][3] = {
      {1, 100, 130}, {2, 257, 257}, {3, 64, 1000}, {1, 1000, 64}, {2, 1, 300}};
  for (const auto &[batch, seqQ, seqKV] : shapes) {
    StatusOr<KernelMetadata> call =
        k->kernel.metadata().instantiate(batch, seqQ, seqKV);
    ASSERT_TRUE(call.ok()) << call.status().message();
    EXPECT_LT(runAndCompare(k->kernel, &*call), 1e-2)
        << "batch " << batch << ", seq_q " << seqQ << ", seq_kv " << seqKV;
  }
}

/// Runs backward kernel set `kernel` on random inputs (O and LSE from the
/// reference forward); returns the worst relative L2 error of dQ, dK, dV
/// (denominator floored at 0.1 sqrt(n)).
double runBackwardAndCompare(const Kernel &kernel) {
  const KernelMetadata &m = kernel.metadata();
  ref::AttentionShape shape{m.batch, m.headsQ,  m.headsKV, m.seqQ,
                            m.seqKV, m.headDim, m.headDimV};
  ref::AttentionParams params;
  params.scale = m.scale;
  params.causal = m.causal;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  // q, k, v, dO, o (from the reference), then dq, dk, dv.
  const int64_t counts[8] = {ref::numelQ(shape), ref::numelK(shape),
                             ref::numelV(shape), ref::numelO(shape),
                             ref::numelO(shape), ref::numelQ(shape),
                             ref::numelK(shape), ref::numelV(shape)};
  std::vector<uint16_t> bits[8];
  std::vector<double> values[8];
  for (int t = 0; t < 4; ++t)
    for (int64_t i = 0; i < counts[t]; ++i) {
      bits[t].push_back(floatTo16(m.dtype, normal(rng)));
      values[t].push_back(from16(m.dtype, bits[t].back()));
    }
  std::vector<double> o(counts[4]), lse(ref::numelLSE(shape));
  ref::attentionForward(shape, params, values[0].data(), values[1].data(),
                        values[2].data(), o.data(), lse.data());
  std::vector<float> lseF(lse.begin(), lse.end());
  for (int64_t i = 0; i < counts[4]; ++i) {
    bits[4].push_back(floatTo16(m.dtype, float(o[i])));
    values[4].push_back(from16(m.dtype, bits[4].back()));
  }
  for (size_t i = 0; i < lse.size(); ++i)
    lse[i] = lseF[i];
  DeviceBuffer buf[8];
  for (int t = 0; t < 8; ++t) {
    StatusOr<DeviceBuffer> b = DeviceBuffer::allocate(counts[t] * 2);
    EXPECT_TRUE(b.ok()) << b.status().message();
    if (!b.ok())
      return INFINITY;
    buf[t] = std::move(*b);
    if (t < 5)
      EXPECT_TRUE(buf[t].upload(bits[t].data(), counts[t] * 2).ok());
    else
      EXPECT_TRUE(buf[t].fill(0xFF).ok());
  }
  StatusOr<DeviceBuffer> lseBuf = DeviceBuffer::allocate(lseF.size() * 4),
                         ws = DeviceBuffer::allocate(
                             attentionBackwardWorkspaceBytes(m));
  if (!lseBuf.ok() || !ws.ok())
    return INFINITY;
  EXPECT_TRUE(lseBuf->upload(lseF.data(), lseF.size() * 4).ok());
  EXPECT_TRUE(ws->fill(0xFF).ok());
  AttentionBackwardArgs args = AttentionBackwardArgs::fromMetadata(m);
  args.q = buf[0].ptr();
  args.k = buf[1].ptr();
  args.v = buf[2].ptr();
  args.dO = buf[3].ptr();
  args.o = buf[4].ptr();
  args.lse = lseBuf->ptr();
  args.dq = buf[5].ptr();
  args.dk = buf[6].ptr();
  args.dv = buf[7].ptr();
  Status s = attentionBackward(kernel, args, ws->ptr());
  if (s.ok())
    s = synchronize();
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<double> want[3] = {std::vector<double>(counts[5]),
                                 std::vector<double>(counts[6]),
                                 std::vector<double>(counts[7])};
  ref::attentionBackward(shape, params, values[0].data(), values[1].data(),
                         values[2].data(), values[4].data(), values[3].data(),
                         lse.data(), want[0].data(), want[1].data(),
                         want[2].data());
  double worst = 0;
  for (int t = 0; t < 3; ++t) {
    std::vector<uint16_t> out(counts[5 + t]);
    EXPECT_TRUE(buf[5 + t].download(out.data(), out.size() * 2).ok());
    double num = 0, den = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      double got = from16(m.dtype, out[i]), d = got - want[t][i];
      num += std::isfinite(got) ? d * d : INFINITY;
      den += want[t][i] * want[t][i];
    }
    worst = std::max(worst, std::sqrt(num) /
                                std::max(std::sqrt(den),
                                         0.1 * std::sqrt(double(out.size()))));
  }
  return worst;
}

TEST_F(JitGpuTest, BackwardCompilesLoadsAndMatchesTheReference) {
  const AttentionConfig config = smallConfig();
  KernelCache cache(dir_);
  StatusOr<JitKernel> k = getBackwardKernel(config, cache);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_TRUE(k->compiled);
  EXPECT_EQ(k->kernel.metadata().kind, KernelKind::Backward);
  EXPECT_NE(k->kernel.preFunction(), nullptr);
  EXPECT_NE(k->kernel.function(), nullptr);
  EXPECT_NE(k->kernel.postFunction(), nullptr);
  EXPECT_LT(runBackwardAndCompare(k->kernel), 2e-2);
  KernelCache again(dir_);
  StatusOr<JitKernel> hit = getBackwardKernel(config, again);
  ASSERT_TRUE(hit.ok()) << hit.status().message();
  EXPECT_TRUE(hit->cacheHit());
  EXPECT_LT(runBackwardAndCompare(hit->kernel), 2e-2);
}

TEST_F(JitGpuTest, LoadsAheadOfTimeKernels) {
  AttentionConfig config = smallConfig();
  config.chip = Driver::get().device().chip();
  llvm::Expected<mlir::fa::CompiledKernel> aot =
      mlir::fa::compileAttention(config, mlir::fa::EmitKind::PTX);
  ASSERT_TRUE(bool(aot)) << llvm::toString(aot.takeError());
  std::string prefix = dir_ + "/aot";
  std::ofstream(prefix + ".ptx") << aot->payload;
  std::ofstream(prefix + ".meta") << aot->metadata;
  KernelCache cache(dir_ + "/cache");
  StatusOr<JitKernel> k =
      loadPrecompiledKernel(prefix + ".ptx", prefix + ".meta", cache);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_FALSE(k->compiled);
  EXPECT_LT(runAndCompare(k->kernel), 1e-2);
  KernelCache again(dir_ + "/cache");
  k = loadPrecompiledKernel(prefix + ".ptx", prefix + ".meta", again);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_TRUE(k->cacheHit());
}

} // namespace
