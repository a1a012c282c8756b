//===- KernelParamsTest.cpp - Launch parameters, TMA descriptors ----------===//
//
// What attentionForward()/attentionBackward() hand cuLaunchKernel as
// kernelParams, built with a stand-in cuTensorMapEncodeTiled that records
// its calls: runs without a GPU.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "fa/Runtime/Attention.h"
#include "fa/Runtime/KernelParams.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

constexpr CUdeviceptr kGiB = CUdeviceptr(1) << 30;

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// One call of the stand-in encoder.
struct EncodeCall {
  CUtensorMapDataType dataType{};
  void *base = nullptr;
  std::vector<cuuint64_t> dims, strides;
  std::vector<cuuint32_t> box;
  CUtensorMapSwizzle swizzle{};
  CUtensorMapFloatOOBfill oobFill{};
};
std::vector<EncodeCall> calls;
CUresult encodeResult = CUDA_SUCCESS;

/// Records the call and writes a map that says which call made it:
/// opaque[0] = the call's index, opaque[1] = base, opaque[15] = a marker.
CUresult fakeEncode(CUtensorMap *map, CUtensorMapDataType dataType,
                    cuuint32_t rank, void *base, const cuuint64_t *dims,
                    const cuuint64_t *strides, const cuuint32_t *box,
                    const cuuint32_t *, CUtensorMapInterleave,
                    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                    CUtensorMapFloatOOBfill oobFill) {
  EncodeCall c;
  c.dataType = dataType;
  c.base = base;
  c.dims.assign(dims, dims + rank);
  c.strides.assign(strides, strides + rank - 1);
  c.box.assign(box, box + rank);
  c.swizzle = swizzle;
  c.oobFill = oobFill;
  *map = CUtensorMap{};
  map->opaque[0] = calls.size();
  map->opaque[1] = reinterpret_cast<uintptr_t>(base);
  map->opaque[15] = 0x7e57;
  calls.push_back(c);
  return encodeResult;
}

class RuntimeKernelParams : public ::testing::Test {
protected:
  void SetUp() override {
    calls.clear();
    encodeResult = CUDA_SUCCESS;
  }
};

/// A TMA forward: f16, B=2, Hq=8, Hkv=2, Nq=300, Nk=200, D=128, Dv=64 (all
/// different, so a swapped dimension shows), maps over q, k and v
/// interleaved with the pointers.
KernelMetadata tmaForwardMeta() {
  return parseOrDie(patched(
      goodMeta(),
      {{"dtype", "f16"},
       {"seq_q", 300},
       {"seq_kv", 200},
       {"head_dim_v", 64},
       {"causal", false},
       {"args", {"q", "tmap_q", "k", "v", "o", "lse", "tmap_k", "tmap_v"}},
       {"tensor_maps", {{"q", {128, 64}}, {"k", {64, 64}}, {"v", {64, 32}}}}}));
}

AttentionArgs forwardArgs(const KernelMetadata &m) {
  AttentionArgs a = AttentionArgs::fromMetadata(m);
  a.q = 1 * kGiB;
  a.k = 2 * kGiB;
  a.v = 3 * kGiB;
  a.o = 4 * kGiB;
  a.lse = 5 * kGiB;
  return a;
}

CUdeviceptr pointerAt(KernelParams &p, size_t i) {
  return *static_cast<CUdeviceptr *>(p.data()[i]);
}

const CUtensorMap &mapAt(KernelParams &p, size_t i) {
  return *static_cast<const CUtensorMap *>(p.data()[i]);
}

bool aligned64(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST_F(RuntimeKernelParams, ForwardPassesPointersAndEncodedMapsInArgsOrder) {
  KernelMetadata m = tmaForwardMeta();
  AttentionArgs a = forwardArgs(m);
  ASSERT_TRUE(validateAttentionForward(m, a).ok());
  StatusOr<KernelParams> params = forwardKernelParams(m, a, fakeEncode);
  ASSERT_TRUE(params.ok()) << params.status().message();
  KernelParams &p = *params;
  ASSERT_EQ(p.size(), 8u); // q,tmap_q,k,v,o,lse,tmap_k,tmap_v

  // Pointer parameters: the call's pointers, unchanged.
  const std::pair<size_t, CUdeviceptr> pointers[] = {
      {0, a.q}, {2, a.k}, {3, a.v}, {4, a.o}, {5, a.lse}};
  for (const auto &[i, ptr] : pointers) {
    EXPECT_FALSE(p.isTensorMap(i)) << i;
    EXPECT_EQ(pointerAt(p, i), ptr) << i;
  }

  // Map parameters: 64-byte aligned 128-byte maps, encoded in args order.
  ASSERT_EQ(calls.size(), 3u);
  const std::pair<size_t, CUdeviceptr> maps[] = {{1, a.q}, {6, a.k}, {7, a.v}};
  for (size_t n = 0; n < 3; ++n) {
    const auto &[i, base] = maps[n];
    ASSERT_TRUE(p.isTensorMap(i)) << i;
    EXPECT_TRUE(aligned64(p.data()[i])) << i;
    const CUtensorMap &map = mapAt(p, i);
    EXPECT_EQ(map.opaque[0], n) << "param " << i << " is another map";
    EXPECT_EQ(map.opaque[1], base) << i;
    EXPECT_EQ(map.opaque[15], 0x7e57u) << i;
    EXPECT_EQ(calls[n].base, reinterpret_cast<void *>(base));
    EXPECT_EQ(calls[n].dataType, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    // A box row is the swizzle's span: v's 32 f16 columns are 64 bytes.
    EXPECT_EQ(calls[n].swizzle,
              n == 2 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B);
    EXPECT_EQ(calls[n].oobFill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  }
  // q [2, 8, 300, 128] in boxes of 128 rows x 64 cols.
  EXPECT_EQ(calls[0].dims, (std::vector<cuuint64_t>{128, 300, 8, 2}));
  EXPECT_EQ(calls[0].strides,
            (std::vector<cuuint64_t>{256, 300 * 256, 8 * 300 * 256}));
  EXPECT_EQ(calls[0].box, (std::vector<cuuint32_t>{64, 128, 1, 1}));
  // k [2, 2, 200, 128] in boxes of 64 x 64.
  EXPECT_EQ(calls[1].dims, (std::vector<cuuint64_t>{128, 200, 2, 2}));
  EXPECT_EQ(calls[1].strides,
            (std::vector<cuuint64_t>{256, 200 * 256, 2 * 200 * 256}));
  EXPECT_EQ(calls[1].box, (std::vector<cuuint32_t>{64, 64, 1, 1}));
  // v [2, 2, 200, 64] (head_dim_v) in boxes of 64 x 32.
  EXPECT_EQ(calls[2].dims, (std::vector<cuuint64_t>{64, 200, 2, 2}));
  EXPECT_EQ(calls[2].strides,
            (std::vector<cuuint64_t>{128, 200 * 128, 2 * 200 * 128}));
  EXPECT_EQ(calls[2].box, (std::vector<cuuint32_t>{32, 64, 1, 1}));
}

TEST_F(RuntimeKernelParams, StridedViewsOfMappedTensorsAreReadInPlace) {
  KernelMetadata m = tmaForwardMeta();
  AttentionArgs a = forwardArgs(m);
  // q: [B, N, H, D] memory (row stride H * D = 1024, head stride 128); k: a
  // slice of a packed [B, N, 2, Hkv, D] tensor (row stride 512).
  a.strideQ = {300 * 8 * 128, 128, 8 * 128, 1};
  a.strideK = {200 * 2 * 2 * 128, 128, 2 * 2 * 128, 1};
  ASSERT_TRUE(validateAttentionForward(m, a).ok())
      << validateAttentionForward(m, a).message();
  StatusOr<KernelParams> params = forwardKernelParams(m, a, fakeEncode);
  ASSERT_TRUE(params.ok()) << params.status().message();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].strides,
            (std::vector<cuuint64_t>{8 * 128 * 2, 128 * 2, 300 * 8 * 128 * 2}));
  EXPECT_EQ(calls[1].strides,
            (std::vector<cuuint64_t>{4 * 128 * 2, 128 * 2, 200 * 4 * 128 * 2}));
  // v stays dense.
  EXPECT_EQ(calls[2].strides,
            (std::vector<cuuint64_t>{128, 200 * 128, 2 * 200 * 128}));

  // What TMA cannot read is refused before any launch, naming the tensor.
  AttentionArgs bad = a;
  bad.strideQ[3] = 2;
  Status s = validateAttentionForward(m, bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("query stride"), std::string::npos);
  EXPECT_NE(s.message().find("TMA descriptor"), std::string::npos)
      << s.message();
  bad = a;
  bad.strideQ[2] = 8 * 128 + 4; // not a multiple of 16 bytes
  EXPECT_FALSE(validateAttentionForward(m, bad).ok());
  bad = a;
  bad.strideQ[1] = 0;
  EXPECT_FALSE(validateAttentionForward(m, bad).ok());
  // The output is written through its pointer: dense only.
  bad = a;
  bad.strideO = {300 * 8 * 64, 64, 8 * 64, 1};
  s = validateAttentionForward(m, bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pass a contiguous tensor"), std::string::npos)
      << s.message();
  // A kernel without tensor maps takes dense tensors only.
  KernelMetadata plain = parseOrDie(goodMeta()); // [2, 8, 1024, 128]
  AttentionArgs bnhd = forwardArgs(plain);
  bnhd.strideQ = {1024 * 8 * 128, 128, 8 * 128, 1};
  s = validateAttentionForward(plain, bnhd);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pass a contiguous tensor"), std::string::npos)
      << s.message();
}

TEST_F(RuntimeKernelParams, WithoutTensorMapsOnlyPointersAndNoEncoder) {
  KernelMetadata m = parseOrDie(goodMeta());
  AttentionArgs a = forwardArgs(m);
  StatusOr<KernelParams> params = forwardKernelParams(m, a, nullptr);
  ASSERT_TRUE(params.ok()) << params.status().message();
  ASSERT_EQ(params->size(), 5u);
  const CUdeviceptr expected[] = {a.q, a.k, a.v, a.o, a.lse};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_FALSE(params->isTensorMap(i));
    EXPECT_EQ(pointerAt(*params, i), expected[i]);
  }
  EXPECT_TRUE(calls.empty());
}

TEST_F(RuntimeKernelParams, RuntimeShapesPassTheCallsSizesAndMaps) {
  // The TMA forward as a kernel with runtime shapes: its sizes go after the
  // maps, as fa-pass-runtime-sizes appends them.
  KernelMetadata m = parseOrDie(patched(
      goodMeta(),
      {{"batch", nullptr},
       {"seq_q", nullptr},
       {"seq_kv", nullptr},
       {"grid", nullptr},
       {"args",
        {"q", "k", "v", "o", "lse", "tmap_q", "tmap_k", "tmap_v", "batch",
         "seq_q", "batch", "seq_kv"}},
       {"tensor_maps", {{"q", {128, 64}}, {"k", {64, 64}}, {"v", {64, 64}}}},
       {"runtime_shapes", true}}));
  StatusOr<KernelMetadata> shaped = m.instantiate(3, 77, 500);
  ASSERT_TRUE(shaped.ok()) << shaped.status().message();
  AttentionArgs a = forwardArgs(*shaped);
  // Checked against the kernel as built for the call's shape.
  ASSERT_TRUE(validateAttentionForward(m, a).ok());
  a.headsKV = 4;
  EXPECT_FALSE(validateAttentionForward(m, a).ok());
  a.headsKV = 2;

  // Not instantiated: the sizes have no values.
  LaunchSpec sizesOnly = m.mainLaunch();
  sizesOnly.args = {"seq_q"};
  StatusOr<KernelParams> unshaped =
      buildKernelParams(m, sizesOnly, {}, nullptr);
  ASSERT_FALSE(unshaped.ok());
  EXPECT_NE(unshaped.status().message().find("is a runtime size"),
            std::string::npos);

  calls.clear();
  StatusOr<KernelParams> params = forwardKernelParams(*shaped, a, fakeEncode);
  ASSERT_TRUE(params.ok()) << params.status().message();
  ASSERT_EQ(params->size(), 12u);
  const int64_t sizes[] = {3, 77, 3, 500};
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(params->isScalar(8 + i)) << i;
    EXPECT_EQ(*static_cast<int64_t *>(params->data()[8 + i]), sizes[i]) << i;
  }
  // The maps span the call's tensors: q [3, 8, 77, 128], k [3, 2, 500, 128].
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].dims, (std::vector<cuuint64_t>{128, 77, 8, 3}));
  EXPECT_EQ(calls[1].dims, (std::vector<cuuint64_t>{128, 500, 2, 3}));
}

TEST_F(RuntimeKernelParams, MapsStayAlignedAndInPlaceAsParamsGrow) {
  // Enough maps that the storage reallocates while they are added.
  KernelParams p;
  for (uint64_t i = 0; i < 40; ++i) {
    CUtensorMap map{};
    map.opaque[0] = i;
    if (i % 3 == 0)
      p.addPointer(CUdeviceptr(1000 + i));
    p.addTensorMap(map);
  }
  ASSERT_EQ(p.size(), 54u);
  void **data = p.data();
  uint64_t nextMap = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (!p.isTensorMap(i)) {
      EXPECT_EQ(*static_cast<CUdeviceptr *>(data[i]), 1000 + nextMap);
      continue;
    }
    EXPECT_TRUE(aligned64(data[i])) << i;
    EXPECT_EQ(static_cast<const CUtensorMap *>(data[i])->opaque[0], nextMap++);
  }
}

TEST_F(RuntimeKernelParams, EncodeFailuresNameTheParameter) {
  KernelMetadata m = tmaForwardMeta();
  AttentionArgs a = forwardArgs(m);

  // A spec the encoder would refuse never reaches it.
  AttentionArgs misaligned = a;
  misaligned.k += 8;
  StatusOr<KernelParams> p = forwardKernelParams(m, misaligned, fakeEncode);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(contains(p.status().message(),
                       "parameter 'tmap_k' (tensor map k:64x64): tensor map: "
                       "base address"))
      << p.status().message();

  // The driver's own error.
  calls.clear();
  encodeResult = CUDA_ERROR_INVALID_VALUE;
  p = forwardKernelParams(m, a, fakeEncode);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(contains(p.status().message(),
                       "parameter 'tmap_q' (tensor map q:128x64): "
                       "cuTensorMapEncodeTiled failed"))
      << p.status().message();

  // A box wider than the 128-byte swizzle span (f16: 64 columns).
  encodeResult = CUDA_SUCCESS;
  KernelMetadata wide = parseOrDie(
      patched(goodMeta(), {{"args", {"q", "k", "v", "o", "lse", "tmap_v"}},
                           {"tensor_maps", {{"v", {64, 128}}}}}));
  p = forwardKernelParams(wide, forwardArgs(wide), fakeEncode);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(contains(p.status().message(),
                       "parameter 'tmap_v' (tensor map v:64x128): tensor "
                       "map: box[0] = 128 elements (256 bytes) exceeds"))
      << p.status().message();

  // No encoder for a kernel that needs one.
  p = forwardKernelParams(m, a, nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(contains(p.status().message(),
                       "parameter 'tmap_q' (tensor map q:128x64): no tensor "
                       "map encoder"))
      << p.status().message();
}

TEST_F(RuntimeKernelParams, UnknownParametersAreErrors) {
  // Metadata built in code can name parameters that parsing would refuse.
  KernelMetadata m = parseOrDie(goodMeta());
  m.args.push_back("bias");
  StatusOr<KernelParams> p = forwardKernelParams(m, forwardArgs(m), nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "unknown parameter 'bias' of kernel 'fa_fwd'");
  m = parseOrDie(goodMeta());
  m.args.push_back("tmap_q");
  p = forwardKernelParams(m, forwardArgs(m), fakeEncode);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "unknown parameter 'tmap_q' of kernel 'fa_fwd'");
}

TEST_F(RuntimeKernelParams, SpecShapesOfEveryTensor) {
  KernelMetadata m = tmaForwardMeta(); // Hq=8 Hkv=2 Nq=300 Nk=200 D=128 Dv=64
  const struct {
    const char *tensor;
    std::vector<uint64_t> dims;
  } cases[] = {
      {"q", {128, 300, 8, 2}}, {"dq", {128, 300, 8, 2}},
      {"o", {64, 300, 8, 2}},  {"do", {64, 300, 8, 2}},
      {"k", {128, 200, 2, 2}}, {"dk", {128, 200, 2, 2}},
      {"v", {64, 200, 2, 2}},  {"dv", {64, 200, 2, 2}},
  };
  for (const auto &c : cases) {
    TensorMapParam map{c.tensor, 64, 32};
    StatusOr<TensorMapSpec> spec = tensorMapSpec(m, map, kGiB);
    ASSERT_TRUE(spec.ok()) << c.tensor;
    EXPECT_EQ(spec->dims, c.dims) << c.tensor;
    EXPECT_EQ(spec->box, (std::vector<uint32_t>{32, 64, 1, 1})) << c.tensor;
    EXPECT_EQ(spec->dataType, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    EXPECT_EQ(spec->base, kGiB);
  }
  StatusOr<TensorMapSpec> bad = tensorMapSpec(m, {"lse", 1, 1}, kGiB);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.status().message(), "'lse' is not an attention"));
  // bf16 maps to the bf16 TMA type.
  EXPECT_EQ(
      tensorMapSpec(parseOrDie(goodMeta()), {"q", 64, 64}, kGiB)->dataType,
      CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  // The backward's f32 dQ workspace (its TMA reductions): query rows, head
  // dim columns, f32 whatever the tensors' type, 4-byte strides.
  StatusOr<TensorMapSpec> acc = tensorMapSpec(m, {"dq_acc", 64, 32}, kGiB);
  ASSERT_TRUE(acc.ok()) << acc.status().message();
  EXPECT_EQ(acc->dims, (std::vector<uint64_t>{128, 300, 8, 2}));
  EXPECT_EQ(acc->dataType, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(acc->strideBytes,
            (std::vector<uint64_t>{128 * 4, 300 * 128 * 4, 8 * 300 * 128 * 4}));
}

TEST_F(RuntimeKernelParams, ForwardWithTensorMapsValidatesAsUsual) {
  KernelMetadata m = tmaForwardMeta();
  AttentionArgs a = forwardArgs(m);
  // Nothing to launch on: validation passes, then "not loaded".
  Status s = attentionForward(Kernel::unloaded(m), a);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "kernel is not loaded")) << s.message();
  a.seqQ = 301;
  s = attentionForward(Kernel::unloaded(m), a);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "seq_q = 301 does not match"))
      << s.message();
}

/// goodBackwardMeta() (B=2 Hq=8 Hkv=2 Nq=300 Nk=200 D=Dv=64) with maps:
/// the pre-kernel reads o only through one, the main kernel q and do.
KernelMetadata tmaBackwardMeta() {
  return parseOrDie(
      patched(goodBackwardMeta(),
              {{"args",
                {"q", "k", "v", "do", "lse", "delta", "dq_acc", "dk", "dv",
                 "tmap_q", "tmap_do"}},
               {"pre", {{"args", {"tmap_o", "do", "delta", "dq_acc"}}}},
               {"tensor_maps",
                {{"do", {64, 64}}, {"o", {128, 64}}, {"q", {64, 32}}}}}));
}

AttentionBackwardArgs backwardArgs(const KernelMetadata &m) {
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

TEST_F(RuntimeKernelParams, BackwardLaunchesUseTheSameMechanism) {
  KernelMetadata m = tmaBackwardMeta();
  AttentionBackwardArgs a = backwardArgs(m);
  const CUdeviceptr workspace = 10 * kGiB;
  ASSERT_TRUE(validateAttentionBackward(m, a, workspace).ok());
  StatusOr<std::vector<KernelParams>> all =
      backwardKernelParams(m, a, workspace, fakeEncode);
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 3u);
  const BackwardWorkspaceLayout ws = backwardWorkspaceLayout(m);

  KernelParams &pre = (*all)[0]; // tmap_o,do,delta,dq_acc
  ASSERT_EQ(pre.size(), 4u);
  ASSERT_TRUE(pre.isTensorMap(0));
  EXPECT_TRUE(aligned64(pre.data()[0]));
  EXPECT_EQ(mapAt(pre, 0).opaque[1], a.o);
  EXPECT_EQ(pointerAt(pre, 1), a.dO);
  EXPECT_EQ(pointerAt(pre, 2), workspace + ws.deltaOffset);
  EXPECT_EQ(pointerAt(pre, 3), workspace + ws.dqAccOffset);

  KernelParams &main = (*all)[1];
  ASSERT_EQ(main.size(), 11u);
  EXPECT_EQ(pointerAt(main, 0), a.q);
  EXPECT_EQ(pointerAt(main, 8), a.dv);
  ASSERT_TRUE(main.isTensorMap(9));
  ASSERT_TRUE(main.isTensorMap(10));
  EXPECT_EQ(mapAt(main, 9).opaque[1], a.q);
  EXPECT_EQ(mapAt(main, 10).opaque[1], a.dO);

  KernelParams &post = (*all)[2];
  ASSERT_EQ(post.size(), 2u);
  EXPECT_EQ(pointerAt(post, 1), a.dq);

  // Encoded in launch order: o (pre), then q and do (main).
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].dims, (std::vector<cuuint64_t>{64, 300, 8, 2}));
  EXPECT_EQ(calls[0].box, (std::vector<cuuint32_t>{64, 128, 1, 1}));
  EXPECT_EQ(calls[1].dims, (std::vector<cuuint64_t>{64, 300, 8, 2}));
  EXPECT_EQ(calls[1].box, (std::vector<cuuint32_t>{32, 64, 1, 1}));
  EXPECT_EQ(calls[2].base, reinterpret_cast<void *>(a.dO));
  EXPECT_EQ(calls[2].dataType, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
}

TEST_F(RuntimeKernelParams, BackwardTensorReadThroughAMapMustBeValid) {
  // o is taken only as tmap_o, yet its pointer is what the map describes.
  KernelMetadata m = tmaBackwardMeta();
  AttentionBackwardArgs a = backwardArgs(m);
  a.o = 0;
  Status s = validateAttentionBackward(m, a, 10 * kGiB);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "output pointer is null")) << s.message();
}

} // namespace
