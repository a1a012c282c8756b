//===- DriverTest.cpp - Driver loading, kernels, launches -----------------===//
//
// RuntimeDriver tests run everywhere: without a driver every operation must
// return an error Status, never crash. RuntimeGpu tests need a CUDA device
// and report SKIPPED when there is none.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "fa/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <ftw.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

/// A stand-in "attention" kernel with the forward ABI, parameters in the
/// order o, lse, q, k, v: thread i copies q[i] to o[i] (D == Dv) and threads
/// below 128 write lse[i] = i.
const char *kCopyPTX = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry fa_fwd(
  .param .u64 p_o,
  .param .u64 p_lse,
  .param .u64 p_q,
  .param .u64 p_k,
  .param .u64 p_v)
{
  .reg .pred %p<2>;
  .reg .b16 %h<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<10>;

  ld.param.u64 %rd1, [p_o];
  ld.param.u64 %rd2, [p_lse];
  ld.param.u64 %rd3, [p_q];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mul.wide.u32 %rd4, %r4, 2;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.u16 %h1, [%rd5];
  add.s64 %rd6, %rd1, %rd4;
  st.global.u16 [%rd6], %h1;
  setp.ge.u32 %p1, %r4, 128;
  @%p1 bra DONE;
  cvt.rn.f32.u32 %f1, %r4;
  mul.wide.u32 %rd7, %r4, 4;
  add.s64 %rd8, %rd2, %rd7;
  st.global.f32 [%rd8], %f1;
DONE:
  ret;
}
)";

/// Metadata for kCopyPTX: B = Hq = Hkv = 1, N = 128, D = 64 (8192 elements
/// = 64 blocks of 128 threads), and 100000 bytes of dynamic shared memory
/// (above the 48 KiB default, so the opt-in attribute must be set).
KernelMetadata copyMeta() {
  return parseOrDie(
      patched(goodMeta(), {{"chip", "sm_80"},
                           {"batch", 1},
                           {"heads_q", 1},
                           {"heads_kv", 1},
                           {"seq_q", 128},
                           {"seq_kv", 128},
                           {"head_dim", 64},
                           {"head_dim_v", 64},
                           {"grid", {64, 1, 1}},
                           {"shared_bytes", 100000},
                           {"args", {"o", "lse", "q", "k", "v"}}}));
}

//===----------------------------------------------------------------------===//
// Without a driver
//===----------------------------------------------------------------------===//

TEST(RuntimeDriver, MissingLibraryGivesAClearError) {
  Driver driver("/nonexistent/libcuda.so.1");
  EXPECT_FALSE(driver.loaded());
  const std::string prefix =
      "no CUDA driver: dlopen(/nonexistent/libcuda.so.1) failed: ";
  EXPECT_EQ(driver.loadStatus().message().rfind(prefix, 0), 0u)
      << driver.loadStatus().message();
  Status init = driver.initialize();
  ASSERT_FALSE(init.ok());
  EXPECT_EQ(init.message(), driver.loadStatus().message());

  // Every operation fails with the same explanation instead of crashing.
  StatusOr<Kernel> kernel = Kernel::fromPTX(kCopyPTX, copyMeta(), driver);
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().message().rfind(prefix, 0), 0u);
  std::string cubin = "not really a cubin";
  EXPECT_FALSE(
      Kernel::fromCubin(cubin.data(), cubin.size(), copyMeta(), driver).ok());
  EXPECT_FALSE(Module::loadPTX(kCopyPTX, driver).ok());
  EXPECT_FALSE(compilePTXToCubin(kCopyPTX, cubin, driver).ok());
  EXPECT_FALSE(DeviceBuffer::allocate(1024, driver).ok());
  EXPECT_FALSE(Event::create(driver).ok());
  EXPECT_FALSE(synchronize(nullptr, driver).ok());
  KernelCache cache(""); // Not touched: the driver check comes first.
  CacheOutcome outcome;
  EXPECT_FALSE(loadKernelCached(cache, kCopyPTX, copyMeta(), "test", &outcome,
                                /*warning=*/nullptr, driver)
                   .ok());
}

TEST(RuntimeDriver, OrdinalsOutsideTheRangeAreNotLoaded) {
  // Driver::get of any int is a driver, never an abort; the C API's own
  // check names the ordinal (faContextCreateOnDevice).
  for (int ordinal : {-1, Driver::kMaxDevices, 1 << 30}) {
    Driver &driver = Driver::get(ordinal);
    EXPECT_FALSE(driver.loaded()) << ordinal;
    EXPECT_EQ(driver.loadStatus().message(),
              "no CUDA device: device ordinals are 0 to 63");
    EXPECT_FALSE(DeviceBuffer::allocate(16, driver).ok());
  }
  Driver own("libcuda.so.1", -5);
  EXPECT_FALSE(own.loaded());
  EXPECT_FALSE(own.initialize().ok());
}

TEST(RuntimeDriver, LibraryWithoutCudaEntryPoints) {
  Driver driver("libc.so.6");
  EXPECT_FALSE(driver.loaded());
  EXPECT_NE(driver.loadStatus().message().find("lacks entry points"),
            std::string::npos)
      << driver.loadStatus().message();
  EXPECT_NE(driver.loadStatus().message().find("cuInit"), std::string::npos);
  EXPECT_FALSE(driver.initialize().ok());
}

TEST(RuntimeDriver, LoadingWithoutADeviceReturnsAnError) {
  Driver &driver = Driver::get();
  Status init = driver.initialize();
  if (init.ok())
    GTEST_SKIP() << "a CUDA device is present: " << driver.device().describe();
  EXPECT_FALSE(init.message().empty());
  StatusOr<Kernel> kernel = Kernel::fromPTX(kCopyPTX, copyMeta());
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().message(), init.message());
  EXPECT_FALSE(DeviceBuffer::allocate(16).ok());
}

//===----------------------------------------------------------------------===//
// With a GPU
//===----------------------------------------------------------------------===//

class RuntimeGpu : public ::testing::Test {
protected:
  void SetUp() override {
    Status s = Driver::get().initialize();
    if (!s.ok())
      GTEST_SKIP() << "no GPU: " << s.message();
  }
};

TEST_F(RuntimeGpu, DeviceInfo) {
  const DeviceInfo &dev = Driver::get().device();
  EXPECT_FALSE(dev.name.empty());
  EXPECT_GE(dev.ccMajor, 5);
  EXPECT_GT(dev.multiprocessors, 0);
  EXPECT_GT(dev.maxSharedPerBlockOptin, 48 * 1024 - 1);
  EXPECT_GT(dev.driverVersion, 10000);
  EXPECT_EQ(dev.chip().rfind("sm_", 0), 0u);
  std::printf("device: %s\n", dev.describe().c_str());
}

TEST_F(RuntimeGpu, EncodesATensorMapForTMA) {
  if (Driver::get().device().ccMajor < 9)
    GTEST_SKIP() << "TMA needs sm_90";
  ASSERT_NE(Driver::get().api().tensorMapEncodeTiled, nullptr);
  StatusOr<DeviceBuffer> buf = DeviceBuffer::allocate(2 * 4 * 300 * 128 * 2);
  ASSERT_TRUE(buf.ok()) << buf.status().message();
  StatusOr<CUtensorMap> map =
      encodeTensorMap(attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                       buf->ptr(), 2, 4, 300, 128, 64),
                      Driver::get());
  ASSERT_TRUE(map.ok()) << map.status().message();
  bool anyBits = false;
  for (cuuint64_t word : map->opaque)
    anyBits |= word != 0;
  EXPECT_TRUE(anyBits);
}

/// A stand-in TMA kernel with the forward ABI plus a by-value tensor map
/// (args q,k,v,o,lse,tmap_q): one block of 128 threads copies the box at the
/// origin of tmap_q (64 rows x 64 bf16 columns, 128-byte swizzle) into
/// shared memory and from there, still swizzled, to o[0..8192 bytes); thread
/// 0 writes the tile's shared address mod 1024 to lse[0] (the swizzle
/// pattern assumes 0).
const char *kTmaCopyPTX = R"(
.version 8.0
.target sm_90
.address_size 64

.extern .shared .align 1024 .b8 smem[];

.visible .entry fa_fwd_tma(
  .param .u64 p_q,
  .param .u64 p_k,
  .param .u64 p_v,
  .param .u64 p_o,
  .param .u64 p_lse,
  .param .align 64 .b8 tmap_q[128])
{
  .reg .pred %p<3>;
  .reg .b32 %r<16>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<10>;

  mov.u32 %r1, %tid.x;
  mov.u32 %r2, smem;
  add.u32 %r3, %r2, 8192;
  setp.eq.u32 %p1, %r1, 0;
  @!%p1 bra INIT_DONE;
  mbarrier.init.shared::cta.b64 [%r3], 1;
  fence.mbarrier_init.release.cluster;
INIT_DONE:
  bar.sync 0;
  @!%p1 bra WAIT;
  ld.param.u64 %rd7, [p_lse];
  cvta.to.global.u64 %rd7, %rd7;
  and.b32 %r11, %r2, 1023;
  cvt.rn.f32.u32 %f1, %r11;
  st.global.f32 [%rd7], %f1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r3], 8192;
  mov.u64 %rd2, tmap_q;
  cvta.param.u64 %rd3, %rd2;
  mov.u32 %r4, 0;
  cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd3, {%r4, %r4, %r4, %r4}], [%r3];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
  @!%p2 bra WAIT;
  shl.b32 %r5, %r1, 6;
  add.u32 %r6, %r2, %r5;
  ld.param.u64 %rd4, [p_o];
  cvta.to.global.u64 %rd4, %rd4;
  cvt.u64.u32 %rd5, %r5;
  add.s64 %rd6, %rd4, %rd5;
  ld.shared.v4.b32 {%r7, %r8, %r9, %r10}, [%r6];
  st.global.v4.b32 [%rd6], {%r7, %r8, %r9, %r10};
  ld.shared.v4.b32 {%r7, %r8, %r9, %r10}, [%r6+16];
  st.global.v4.b32 [%rd6+16], {%r7, %r8, %r9, %r10};
  ld.shared.v4.b32 {%r7, %r8, %r9, %r10}, [%r6+32];
  st.global.v4.b32 [%rd6+32], {%r7, %r8, %r9, %r10};
  ld.shared.v4.b32 {%r7, %r8, %r9, %r10}, [%r6+48];
  st.global.v4.b32 [%rd6+48], {%r7, %r8, %r9, %r10};
  ret;
}
)";

/// Metadata for kTmaCopyPTX: B = 1, Hq = Hkv = 2, N = 40, D = Dv = 64, so
/// the 64-row box runs past the first head's 40 rows.
KernelMetadata tmaCopyMeta() {
  return parseOrDie(
      patched(goodMeta(), {{"entry", "fa_fwd_tma"},
                           {"batch", 1},
                           {"heads_q", 2},
                           {"heads_kv", 2},
                           {"seq_q", 40},
                           {"seq_kv", 40},
                           {"head_dim", 64},
                           {"head_dim_v", 64},
                           {"grid", {1, 1, 1}},
                           {"shared_bytes", 8208},
                           {"args", {"q", "k", "v", "o", "lse", "tmap_q"}},
                           {"tensor_maps", {{"q", {64, 64}}}}}));
}

TEST_F(RuntimeGpu, LaunchesWithATensorMapParameterByValue) {
  if (Driver::get().device().ccMajor < 9)
    GTEST_SKIP() << "TMA needs sm_90";
  StatusOr<Kernel> kernel = Kernel::fromPTX(kTmaCopyPTX, tmaCopyMeta());
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  const KernelMetadata &m = kernel->metadata();
  const size_t n = size_t(m.headsQ * m.seqQ * m.headDim); // 5120
  StatusOr<DeviceBuffer> q1 = DeviceBuffer::allocate(n * 2),
                         q2 = DeviceBuffer::allocate(n * 2),
                         k = DeviceBuffer::allocate(n * 2),
                         v = DeviceBuffer::allocate(n * 2),
                         o = DeviceBuffer::allocate(n * 2),
                         lse = DeviceBuffer::allocate(2 * 40 * 4);
  ASSERT_TRUE(q1.ok() && q2.ok() && k.ok() && v.ok() && o.ok() && lse.ok());
  AttentionArgs args = AttentionArgs::fromMetadata(m);
  args.k = k->ptr();
  args.v = v->ptr();
  args.o = o->ptr();
  args.lse = lse->ptr();
  // Two calls with different q buffers: each call encodes its own map.
  for (int call = 0; call < 2; ++call) {
    DeviceBuffer &q = call == 0 ? *q1 : *q2;
    std::vector<uint16_t> host(n);
    for (size_t i = 0; i < n; ++i)
      host[i] = uint16_t(1 + i + 10000 * call);
    ASSERT_TRUE(q.upload(host.data(), n * 2).ok());
    ASSERT_TRUE(o->fill(0xFF).ok());
    args.q = q.ptr();
    Status s = attentionForward(*kernel, args);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(synchronize().ok());
    float base = -1;
    ASSERT_TRUE(lse->download(&base, 4).ok());
    ASSERT_EQ(base, 0.0f) << "tile not 1024-byte aligned in shared memory";
    std::vector<uint16_t> tile(64 * 64);
    ASSERT_TRUE(o->download(tile.data(), tile.size() * 2).ok());
    // Row r's 16-byte chunk c lies at chunk c ^ (r % 8) (128-byte swizzle);
    // rows past seq_q = 40 read as zero, not as the next head's rows.
    int mismatches = 0;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c) {
        uint16_t want = r < 40 ? host[r * 64 + c] : 0;
        uint16_t got = tile[r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8];
        if (got != want && ++mismatches <= 5)
          ADD_FAILURE() << "call " << call << " row " << r << " col " << c
                        << ": got " << got << ", want " << want;
      }
    EXPECT_EQ(mismatches, 0);
  }
}

TEST_F(RuntimeGpu, BufferRoundTripAndFill) {
  StatusOr<DeviceBuffer> buf = DeviceBuffer::allocate(4096);
  ASSERT_TRUE(buf.ok()) << buf.status().message();
  std::vector<unsigned char> in(4096), out(4096);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = (unsigned char)(i * 7);
  ASSERT_TRUE(buf->upload(in.data(), in.size()).ok());
  ASSERT_TRUE(buf->download(out.data(), out.size()).ok());
  EXPECT_EQ(in, out);
  ASSERT_TRUE(buf->fill(0xFF).ok());
  ASSERT_TRUE(buf->download(out.data(), 100, 3996).ok());
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(out[i], 0xFF);
  Status tooFar = buf->download(out.data(), 200, 3996);
  ASSERT_FALSE(tooFar.ok());
  EXPECT_NE(tooFar.message().find("exceeds"), std::string::npos);
}

void runCopyKernel(const Kernel &kernel) {
  const KernelMetadata &m = kernel.metadata();
  const size_t n = size_t(m.seqQ * m.headDim);
  std::vector<uint16_t> q(n), o(n);
  for (size_t i = 0; i < n; ++i)
    q[i] = floatToBF16(float(i % 1000) * 0.25f);
  StatusOr<DeviceBuffer> dq = DeviceBuffer::allocate(n * 2),
                         dk = DeviceBuffer::allocate(n * 2),
                         dv = DeviceBuffer::allocate(n * 2),
                         dout = DeviceBuffer::allocate(n * 2),
                         dlse = DeviceBuffer::allocate(128 * 4);
  ASSERT_TRUE(dq.ok() && dk.ok() && dv.ok() && dout.ok() && dlse.ok());
  ASSERT_TRUE(dq->upload(q.data(), n * 2).ok());
  ASSERT_TRUE(dout->fill(0xFF).ok());
  ASSERT_TRUE(dlse->fill(0xFF).ok());
  AttentionArgs args = AttentionArgs::fromMetadata(m);
  args.q = dq->ptr();
  args.k = dk->ptr();
  args.v = dv->ptr();
  args.o = dout->ptr();
  args.lse = dlse->ptr();

  // A bad call is refused and launches nothing.
  AttentionArgs bad = args;
  bad.seqQ = 64;
  ASSERT_FALSE(attentionForward(kernel, bad).ok());
  ASSERT_TRUE(synchronize().ok());
  ASSERT_TRUE(dout->download(o.data(), n * 2).ok());
  EXPECT_EQ(o[0], 0xFFFF) << "a refused call must not launch";

  Status s = attentionForward(kernel, args);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(synchronize().ok());
  ASSERT_TRUE(dout->download(o.data(), n * 2).ok());
  EXPECT_EQ(o, q);
  std::vector<float> lse(128);
  ASSERT_TRUE(dlse->download(lse.data(), 128 * 4).ok());
  for (int i = 0; i < 128; ++i)
    EXPECT_EQ(lse[i], float(i));
}

TEST_F(RuntimeGpu, LoadsPTXAndLaunchesWithTheMetadataArgumentOrder) {
  StatusOr<Kernel> kernel = Kernel::fromPTX(kCopyPTX, copyMeta());
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  runCopyKernel(*kernel);
}

TEST_F(RuntimeGpu, CompilesToCubinAndLoadsIt) {
  std::string cubin;
  Status s = compilePTXToCubin(kCopyPTX, cubin);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f"
                                "ELF");
  StatusOr<Kernel> kernel =
      Kernel::fromCubin(cubin.data(), cubin.size(), copyMeta());
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  runCopyKernel(*kernel);
}

TEST_F(RuntimeGpu, KernelCacheRoundTrip) {
  char tmpl[] = "/tmp/fa-runtime-gpu-cache-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  CacheOutcome outcome;
  {
    KernelCache cache(dir);
    StatusOr<Kernel> k =
        loadKernelCached(cache, kCopyPTX, copyMeta(), "test-1", &outcome);
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(outcome, CacheOutcome::Built);
  }
  {
    KernelCache cache(dir);
    StatusOr<Kernel> k =
        loadKernelCached(cache, kCopyPTX, copyMeta(), "test-1", &outcome);
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(outcome, CacheOutcome::DiskHit);
    runCopyKernel(*k);
    // Another compiler version is another entry.
    StatusOr<Kernel> k2 =
        loadKernelCached(cache, kCopyPTX, copyMeta(), "test-2", &outcome);
    ASSERT_TRUE(k2.ok()) << k2.status().message();
    EXPECT_EQ(outcome, CacheOutcome::Built);
  }
  {
    // An entry under this key whose metadata is another kernel's (forged
    // with a valid digest) is rebuilt, with a warning.
    KernelCache cache(dir);
    const KernelMetadata meta = copyMeta();
    CacheKey key{meta.configString() + ";ptx_sha256=" + Sha256::hex(kCopyPTX),
                 "test-1", Driver::get().device().chip()};
    CacheEntry entry;
    ASSERT_TRUE(
        cache
            .getOrBuild(
                key,
                [](CacheEntry &) { return Status::error("expected a hit"); },
                entry)
            .ok());
    entry.metadata += ";seq_q=999";
    ASSERT_TRUE(cache.store(key, entry).ok());
    KernelCache fresh(dir);
    std::string warning;
    StatusOr<Kernel> k =
        loadKernelCached(fresh, kCopyPTX, meta, "test-1", &outcome, &warning);
    ASSERT_TRUE(k.ok()) << k.status().message();
    EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
    EXPECT_NE(warning.find("its metadata is not the requested kernel's"),
              std::string::npos)
        << warning;
    runCopyKernel(*k);
  }
  nftw(
      dir.c_str(),
      [](const char *path, const struct stat *, int, struct FTW *) {
        return std::remove(path);
      },
      16, FTW_DEPTH | FTW_PHYS);
}

TEST_F(RuntimeGpu, BadPTXReportsTheJitLog) {
  const char *bad = ".version 7.0\n.target sm_80\n.address_size 64\n"
                    ".visible .entry broken()\n{\n  bogus.instruction %r1;\n"
                    "  ret;\n}\n";
  StatusOr<Module> module = Module::loadPTX(bad);
  ASSERT_FALSE(module.ok());
  const std::string &msg = module.status().message();
  EXPECT_NE(msg.find("cuModuleLoadDataEx failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("JIT log:"), std::string::npos) << msg;
  std::string cubin;
  Status s = compilePTXToCubin(bad, cubin);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("JIT log:"), std::string::npos) << s.message();
}

TEST_F(RuntimeGpu, MissingEntryAndWrongChipAreReported) {
  KernelMetadata m = copyMeta();
  m.entry = "not_there";
  StatusOr<Kernel> k = Kernel::fromPTX(kCopyPTX, m);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("kernel entry 'not_there' not found"),
            std::string::npos)
      << k.status().message();
  m = copyMeta();
  m.chip = "sm_990";
  k = Kernel::fromPTX(kCopyPTX, m);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("compiled for sm_990 but the device is"),
            std::string::npos)
      << k.status().message();
  m = copyMeta();
  m.sharedBytes = 1 << 30;
  k = Kernel::fromPTX(kCopyPTX, m);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("shared memory"), std::string::npos)
      << k.status().message();
}

TEST_F(RuntimeGpu, EventsTime) {
  StatusOr<Event> a = Event::create(), b = Event::create();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->record().ok());
  ASSERT_TRUE(b->record().ok());
  ASSERT_TRUE(b->synchronize().ok());
  StatusOr<float> ms = Event::elapsedMs(*a, *b);
  ASSERT_TRUE(ms.ok()) << ms.status().message();
  EXPECT_GE(*ms, 0.0f);
}

} // namespace
