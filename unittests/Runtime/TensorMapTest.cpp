//===- TensorMapTest.cpp - TMA descriptor specs, checks, encoding ---------===//
//
// Runs without a GPU: the encoder is a stand-in that records what the driver
// would be given.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/TensorMap.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

using namespace fa::rt;

namespace {

constexpr CUdeviceptr kBase = 1 << 20;

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// What the stand-in encoder was called with.
struct Call {
  int calls = 0;
  CUtensorMapDataType dataType{};
  unsigned rank = 0;
  void *base = nullptr;
  std::vector<cuuint64_t> dims, strides;
  std::vector<cuuint32_t> box, elementStrides;
  CUtensorMapInterleave interleave{};
  CUtensorMapSwizzle swizzle{};
  CUtensorMapL2promotion l2{};
  CUtensorMapFloatOOBfill oobFill{};
  CUresult result = CUDA_SUCCESS;
} call;

CUresult fakeEncode(CUtensorMap *map, CUtensorMapDataType dataType,
                    cuuint32_t rank, void *base, const cuuint64_t *dims,
                    const cuuint64_t *strides, const cuuint32_t *box,
                    const cuuint32_t *elementStrides,
                    CUtensorMapInterleave interleave,
                    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                    CUtensorMapFloatOOBfill oobFill) {
  ++call.calls;
  call.dataType = dataType;
  call.rank = rank;
  call.base = base;
  call.dims.assign(dims, dims + rank);
  call.strides.assign(strides, strides + rank - 1);
  call.box.assign(box, box + rank);
  call.elementStrides.assign(elementStrides, elementStrides + rank);
  call.interleave = interleave;
  call.swizzle = swizzle;
  call.l2 = l2;
  call.oobFill = oobFill;
  map->opaque[0] = 0x7e57;
  return call.result;
}

TEST(TensorMap, AttentionTileIsFourDimensionalSoRowsPastSeqAreZero) {
  TensorMapSpec s = attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase,
                                     /*batch=*/2, /*heads=*/16, /*seq=*/8192,
                                     /*dim=*/128, /*rows=*/128);
  EXPECT_EQ(s.dims, (std::vector<uint64_t>{128, 8192, 16, 2}));
  EXPECT_EQ(s.strideBytes,
            (std::vector<uint64_t>{256, 8192 * 256, 16ull * 8192 * 256}));
  // 128-byte swizzle: 64 bf16 columns per box, two boxes per 128-wide row.
  EXPECT_EQ(s.box, (std::vector<uint32_t>{64, 128, 1, 1}));
  EXPECT_EQ(s.boxBytes(), 64u * 128 * 2);
  EXPECT_TRUE(validateTensorMap(s).ok()) << validateTensorMap(s).message();
}

TEST(TensorMap, DefaultBoxWidthFollowsElementSizeAndHeadDim) {
  auto cols = [](CUtensorMapDataType t, uint64_t dim) {
    return attentionTileMap(t, kBase, 1, 1, 100, dim, 64).box[0];
  };
  EXPECT_EQ(cols(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 64), 64u);
  EXPECT_EQ(cols(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 32), 32u);
  EXPECT_EQ(cols(CU_TENSOR_MAP_DATA_TYPE_UINT8, 256), 128u); // FP8
  EXPECT_EQ(cols(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 128), 32u);
  // An explicit width is kept (and checked by validateTensorMap).
  EXPECT_EQ(attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 1, 1, 100,
                             128, 64, 32)
                .box[0],
            32u);
}

TEST(TensorMap, BoxRowsNarrowerThan128BytesTakeTheirSpansSwizzle) {
  // The kernels' tiles of 192-byte rows (head dim 96) are stored in 64-byte
  // swizzle atoms, and their maps' 32-column boxes must write that swizzle.
  auto swizzle = [](uint32_t cols) {
    return attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 1, 1, 100,
                            96, 64, cols)
        .swizzle;
  };
  EXPECT_EQ(swizzle(64), CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(swizzle(32), CU_TENSOR_MAP_SWIZZLE_64B);
  EXPECT_EQ(swizzle(16), CU_TENSOR_MAP_SWIZZLE_32B);
  TensorMapSpec s = attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 2,
                                     4, 300, 96, 64, 32);
  EXPECT_TRUE(validateTensorMap(s).ok()) << validateTensorMap(s).message();
  EXPECT_EQ(s.boxBytes(), 32u * 64 * 2);
}

TEST(TensorMap, EveryLimitIsAnErrorNamingTheField) {
  auto good = [] {
    return attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 2, 4, 300,
                            64, 64);
  };
  ASSERT_TRUE(validateTensorMap(good()).ok());
  struct Case {
    const char *expect;
    void (*mutate)(TensorMapSpec &);
  } cases[] = {
      {"unsupported data type",
       [](TensorMapSpec &s) { s.dataType = CU_TENSOR_MAP_DATA_TYPE_INT64; }},
      {"rank 6 is not in [1, 5]",
       [](TensorMapSpec &s) {
         s.dims.assign(6, 2);
         s.box.assign(6, 1);
         s.strideBytes.assign(5, 16);
       }},
      {"needs 4 box sizes and 3 strides, got 3 and 3",
       [](TensorMapSpec &s) { s.box.pop_back(); }},
      {"base address 1048578 is not a non-null multiple of 16",
       [](TensorMapSpec &s) { s.base += 2; }},
      {"base address 0", [](TensorMapSpec &s) { s.base = 0; }},
      {"dims[1] = 0 is not in [1, 2^32]",
       [](TensorMapSpec &s) { s.dims[1] = 0; }},
      {"strideBytes[0] = 72 is not a multiple of 16",
       [](TensorMapSpec &s) {
         s.dims[0] = 36; // a 36-wide bf16 row is 72 bytes
         s.strideBytes[0] = 72;
         s.box[0] = 32;
       }},
      {"strideBytes[1] = 112 is smaller than the 128 bytes of one innermost "
       "row",
       [](TensorMapSpec &s) { s.strideBytes[1] = 112; }},
      {"box[1] = 512 is not in [1, 256]",
       [](TensorMapSpec &s) { s.box[1] = 512; }},
      {"box[0] = 4 elements (8 bytes) is not a multiple of 16 bytes",
       [](TensorMapSpec &s) { s.box[0] = 4; }},
      {"box[0] = 128 elements (256 bytes) exceeds the 128-byte swizzle span",
       [](TensorMapSpec &s) { s.box[0] = 128; }},
      {"box[0] = 64 elements (128 bytes) exceeds the 64-byte swizzle span",
       [](TensorMapSpec &s) { s.swizzle = CU_TENSOR_MAP_SWIZZLE_64B; }},
  };
  for (const Case &c : cases) {
    TensorMapSpec s = good();
    c.mutate(s);
    Status st = validateTensorMap(s);
    ASSERT_FALSE(st.ok()) << c.expect;
    EXPECT_TRUE(contains(st.message(), std::string("tensor map: ")))
        << st.message();
    EXPECT_TRUE(contains(st.message(), c.expect))
        << "want '" << c.expect << "', got '" << st.message() << "'";
  }
  // Without swizzling a row may be as wide as 256 elements.
  TensorMapSpec wide = good();
  wide.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  wide.dims[0] = 256;
  wide.strideBytes = {512, 512 * 300, 512 * 300 * 4};
  wide.box[0] = 256;
  EXPECT_TRUE(validateTensorMap(wide).ok())
      << validateTensorMap(wide).message();
}

TEST(TensorMap, EncodePassesTheSpecAndZeroFill) {
  call = Call{};
  TensorMapSpec s = attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, kBase, 3,
                                     2, 77, 128, 64);
  StatusOr<CUtensorMap> map = encodeTensorMap(s, fakeEncode);
  ASSERT_TRUE(map.ok()) << map.status().message();
  EXPECT_EQ(map->opaque[0], 0x7e57u);
  EXPECT_EQ(call.calls, 1);
  EXPECT_EQ(call.dataType, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(call.rank, 4u);
  EXPECT_EQ(call.base, reinterpret_cast<void *>(kBase));
  EXPECT_EQ(call.dims, (std::vector<cuuint64_t>{128, 77, 2, 3}));
  EXPECT_EQ(call.strides,
            (std::vector<cuuint64_t>{256, 77 * 256, 2 * 77 * 256}));
  EXPECT_EQ(call.box, (std::vector<cuuint32_t>{64, 64, 1, 1}));
  EXPECT_EQ(call.elementStrides, (std::vector<cuuint32_t>{1, 1, 1, 1}));
  EXPECT_EQ(call.interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
  EXPECT_EQ(call.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(call.l2, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(call.oobFill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

TEST(TensorMap, StridedViewsAreReadInPlace) {
  // [B = 2, N = 300, H = 4, D = 64] memory read as [B, H, N, D]: the head
  // stride (64 elements) is below the row stride (4 * 64), as after a fused
  // QKV projection.
  const std::array<int64_t, 4> bnhd = {300 * 4 * 64, 64, 4 * 64, 1};
  TensorMapSpec s = attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 2,
                                     4, 300, 64, 64, 0, bnhd);
  EXPECT_EQ(s.dims, (std::vector<uint64_t>{64, 300, 4, 2}));
  EXPECT_EQ(s.strideBytes,
            (std::vector<uint64_t>{4 * 64 * 2, 64 * 2, 300 * 4 * 64 * 2}));
  EXPECT_TRUE(validateTensorMap(s).ok()) << validateTensorMap(s).message();
  // A slice of a packed [B, N, 3, H, D] QKV tensor: row stride 3 * H * D.
  const std::array<int64_t, 4> packed = {300 * 3 * 4 * 64, 64, 3 * 4 * 64, 1};
  EXPECT_TRUE(
      validateTensorMap(attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                         kBase, 2, 4, 300, 64, 64, 0, packed))
          .ok());
  // All-zero strides mean dense.
  EXPECT_EQ(attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 2, 4, 300,
                             64, 64)
                .strideBytes,
            (std::vector<uint64_t>{128, 300 * 128, 4 * 300 * 128}));
}

TEST(TensorMap, BadSpecsNeverReachTheDriverAndDriverErrorsAreReported) {
  call = Call{};
  TensorMapSpec s = attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 1,
                                     1, 64, 64, 64);
  s.base += 8;
  EXPECT_FALSE(encodeTensorMap(s, fakeEncode).ok());
  EXPECT_EQ(call.calls, 0);
  s.base = kBase;
  call.result = CUDA_ERROR_INVALID_VALUE;
  StatusOr<CUtensorMap> map = encodeTensorMap(s, fakeEncode);
  ASSERT_FALSE(map.ok());
  EXPECT_TRUE(contains(map.status().message(), "cuTensorMapEncodeTiled failed"))
      << map.status().message();
}

TEST(TensorMap, CacheEncodesEachDistinctMapOnceAndKeepsNoFailures) {
  call = Call{};
  TensorMapCache cache;
  TensorMapSpec s = attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 2,
                                     4, 300, 64, 64);
  // A repeated launch: the encoder runs once, the map comes back as built.
  for (int i = 0; i < 3; ++i) {
    StatusOr<CUtensorMap> map = cache.encode(s, fakeEncode);
    ASSERT_TRUE(map.ok()) << map.status().message();
    EXPECT_EQ(map->opaque[0], 0x7e57u);
  }
  EXPECT_EQ(call.calls, 1);
  // Anything the encoder reads makes another map: address, rows, strides,
  // box, data type.
  TensorMapSpec other = s;
  other.base += 1024;
  ASSERT_TRUE(cache.encode(other, fakeEncode).ok());
  other = s;
  other.dims[1] = 301;
  ASSERT_TRUE(cache.encode(other, fakeEncode).ok());
  other = s;
  other.strideBytes[1] += 128;
  ASSERT_TRUE(cache.encode(other, fakeEncode).ok());
  other = s;
  other.box[1] = 32;
  ASSERT_TRUE(cache.encode(other, fakeEncode).ok());
  other = s;
  other.dataType = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  ASSERT_TRUE(cache.encode(other, fakeEncode).ok());
  EXPECT_EQ(call.calls, 6);
  EXPECT_EQ(cache.size(), 6u);
  // A driver error is reported each time, never kept.
  other.base += 4096;
  call.result = CUDA_ERROR_INVALID_VALUE;
  EXPECT_FALSE(cache.encode(other, fakeEncode).ok());
  EXPECT_FALSE(cache.encode(other, fakeEncode).ok());
  EXPECT_EQ(call.calls, 8);
  call.result = CUDA_SUCCESS;
  // A spec the checks refuse never reaches the encoder.
  other.base += 8;
  EXPECT_FALSE(cache.encode(other, fakeEncode).ok());
  EXPECT_EQ(call.calls, 8);
  EXPECT_EQ(cache.size(), 6u);
  // Full, the oldest map goes first: the first spec is encoded again.
  for (size_t i = 0; i < TensorMapCache::kCapacity; ++i) {
    other = s;
    other.base += (i + 1) * (1 << 16);
    ASSERT_TRUE(cache.encode(other, fakeEncode).ok());
  }
  EXPECT_EQ(cache.size(), TensorMapCache::kCapacity);
  const int before = call.calls;
  ASSERT_TRUE(cache.encode(s, fakeEncode).ok());
  EXPECT_EQ(call.calls, before + 1);
}

TEST(TensorMap, WithoutADriverEncodingIsAnError) {
  Driver none("/nonexistent/libcuda.so.1");
  TensorMapSpec s = attentionTileMap(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, kBase, 1,
                                     1, 64, 64, 64);
  StatusOr<CUtensorMap> map = encodeTensorMap(s, none);
  ASSERT_FALSE(map.ok());
  EXPECT_TRUE(contains(map.status().message(), "no CUDA driver"))
      << map.status().message();
}

} // namespace
