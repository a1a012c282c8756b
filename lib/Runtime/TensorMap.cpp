//===- TensorMap.cpp - TMA descriptors (CUtensorMap) for tiles ------------===//

#include "fa/Runtime/TensorMap.h"

#include <algorithm>
#include <array>
#include <string>

namespace fa::rt {

namespace {

/// The widest inner box row, in bytes, a swizzle mode allows; 0: no limit.
uint64_t swizzleSpanBytes(CUtensorMapSwizzle swizzle) {
  switch (swizzle) {
  case CU_TENSOR_MAP_SWIZZLE_32B:
    return 32;
  case CU_TENSOR_MAP_SWIZZLE_64B:
    return 64;
  case CU_TENSOR_MAP_SWIZZLE_128B:
    return 128;
  default:
    return 0;
  }
}

std::string at(const char *field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

Status invalid(const std::string &what) {
  return Status::error("tensor map: " + what);
}

} // namespace

unsigned tensorMapElementBytes(CUtensorMapDataType dataType) {
  switch (dataType) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    return 4;
  default:
    return 0;
  }
}

uint64_t TensorMapSpec::boxBytes() const {
  uint64_t bytes = tensorMapElementBytes(dataType);
  for (uint32_t b : box)
    bytes *= b;
  return bytes;
}

TensorMapSpec attentionTileMap(CUtensorMapDataType dataType, CUdeviceptr base,
                               uint64_t batch, uint64_t heads, uint64_t seq,
                               uint64_t dim, uint32_t rows, uint32_t boxCols,
                               const std::array<int64_t, 4> &strides) {
  TensorMapSpec spec;
  spec.dataType = dataType;
  spec.base = base;
  uint64_t elementBytes = tensorMapElementBytes(dataType);
  spec.dims = {dim, seq, heads, batch};
  spec.strideBytes = {dim * elementBytes, seq * dim * elementBytes,
                      heads * seq * dim * elementBytes};
  // The given strides of (seq, heads, batch), except where the size is 1
  // (never stepped; a framework may give such a dimension any stride).
  // Negative strides wrap to values TMA refuses.
  if (strides != std::array<int64_t, 4>{})
    for (int i = 0; i < 3; ++i)
      if (spec.dims[i + 1] > 1)
        spec.strideBytes[i] = uint64_t(strides[2 - i]) * elementBytes;
  if (boxCols == 0 && elementBytes != 0)
    boxCols = static_cast<uint32_t>(
        std::min<uint64_t>(dim, swizzleSpanBytes(spec.swizzle) / elementBytes));
  // A box row of 64 or 32 bytes is a narrower swizzle's span: the kernel's
  // tiles of rows that 128 bytes do not divide (head dim 96: 192 bytes).
  if (uint64_t rowBytes = uint64_t(boxCols) * elementBytes; rowBytes == 64)
    spec.swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
  else if (rowBytes == 32)
    spec.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  spec.box = {boxCols, rows, 1, 1};
  return spec;
}

Status validateTensorMap(const TensorMapSpec &s) {
  const uint64_t elementBytes = tensorMapElementBytes(s.dataType);
  if (elementBytes == 0)
    return invalid("unsupported data type " + std::to_string(s.dataType) +
                   " (uint8/FP8, f16, bf16 or f32)");
  const size_t rank = s.dims.size();
  if (rank < 1 || rank > 5)
    return invalid("rank " + std::to_string(rank) + " is not in [1, 5]");
  if (s.box.size() != rank || s.strideBytes.size() != rank - 1)
    return invalid("rank " + std::to_string(rank) + " needs " +
                   std::to_string(rank) + " box sizes and " +
                   std::to_string(rank - 1) + " strides, got " +
                   std::to_string(s.box.size()) + " and " +
                   std::to_string(s.strideBytes.size()));
  if (s.base == 0 || s.base % 16 != 0)
    return invalid("base address " + std::to_string(s.base) +
                   " is not a non-null multiple of 16 bytes");
  for (size_t i = 0; i < rank; ++i)
    if (s.dims[i] == 0 || s.dims[i] > (uint64_t(1) << 32))
      return invalid(at("dims", i) + " = " + std::to_string(s.dims[i]) +
                     " is not in [1, 2^32]");
  // Strides need not nest (a [B, N, H, D] view read as [B, H, N, D] has a
  // head stride below its row stride); each must step past one innermost
  // row, as TMA reads a row's elements densely.
  const uint64_t rowSpan = s.dims[0] * elementBytes;
  for (size_t i = 0; i + 1 < rank; ++i) {
    uint64_t stride = s.strideBytes[i];
    if (stride % 16 != 0 || stride >= (uint64_t(1) << 40))
      return invalid(at("strideBytes", i) + " = " + std::to_string(stride) +
                     " is not a multiple of 16 below 2^40");
    if (stride < rowSpan && s.dims[i + 1] > 1)
      return invalid(at("strideBytes", i) + " = " + std::to_string(stride) +
                     " is smaller than the " + std::to_string(rowSpan) +
                     " bytes of one innermost row");
  }
  for (size_t i = 0; i < rank; ++i)
    if (s.box[i] == 0 || s.box[i] > 256)
      return invalid(at("box", i) + " = " + std::to_string(s.box[i]) +
                     " is not in [1, 256]");
  const uint64_t rowBytes = s.box[0] * elementBytes;
  if (rowBytes % 16 != 0)
    return invalid("box[0] = " + std::to_string(s.box[0]) + " elements (" +
                   std::to_string(rowBytes) +
                   " bytes) is not a multiple of 16 bytes");
  if (uint64_t span = swizzleSpanBytes(s.swizzle); span && rowBytes > span)
    return invalid("box[0] = " + std::to_string(s.box[0]) + " elements (" +
                   std::to_string(rowBytes) + " bytes) exceeds the " +
                   std::to_string(span) + "-byte swizzle span");
  return Status::success();
}

namespace {

/// encodeTensorMap() for a spec validateTensorMap() accepted.
StatusOr<CUtensorMap> encodeValid(const TensorMapSpec &s,
                                  TensorMapEncodeFn encode) {
  std::vector<cuuint64_t> dims(s.dims.begin(), s.dims.end());
  std::vector<cuuint64_t> strides(s.strideBytes.begin(), s.strideBytes.end());
  std::vector<cuuint32_t> box(s.box.begin(), s.box.end());
  std::vector<cuuint32_t> elementStrides(s.dims.size(), 1);
  CUtensorMap map{};
  CUresult r =
      encode(&map, s.dataType, static_cast<cuuint32_t>(s.dims.size()),
             reinterpret_cast<void *>(s.base), dims.data(), strides.data(),
             box.data(), elementStrides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
             s.swizzle, s.l2Promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status::error("cuTensorMapEncodeTiled failed: CUresult " +
                         std::to_string(r));
  return map;
}

} // namespace

StatusOr<CUtensorMap> encodeTensorMap(const TensorMapSpec &s,
                                      TensorMapEncodeFn encode) {
  FA_RT_RETURN_IF_ERROR(validateTensorMap(s));
  return encodeValid(s, encode);
}

StatusOr<TensorMapEncodeFn> tensorMapEncoder(Driver &driver) {
  FA_RT_RETURN_IF_ERROR(driver.loadStatus());
  if (!driver.api().tensorMapEncodeTiled)
    return Status::error("the CUDA driver " + driver.libraryName() +
                         " has no cuTensorMapEncodeTiled (CUDA 12.0 or later "
                         "is needed for TMA)");
  return driver.api().tensorMapEncodeTiled;
}

StatusOr<CUtensorMap> encodeTensorMap(const TensorMapSpec &s, Driver &driver) {
  StatusOr<TensorMapEncodeFn> encode = tensorMapEncoder(driver);
  if (!encode.ok())
    return encode.status();
  FA_RT_RETURN_IF_ERROR(validateTensorMap(s));
  ContextScope scope(driver);
  FA_RT_RETURN_IF_ERROR(scope.status());
  return encodeValid(s, *encode);
}

bool TensorMapCache::Key::operator==(const Key &o) const {
  return encode == o.encode && dataType == o.dataType && base == o.base &&
         swizzle == o.swizzle && l2Promotion == o.l2Promotion &&
         rank == o.rank && dims == o.dims && strideBytes == o.strideBytes &&
         box == o.box;
}

bool TensorMapCache::keyOf(const TensorMapSpec &s, TensorMapEncodeFn encode,
                           Key &key) {
  const size_t rank = s.dims.size();
  // Specs the checks refuse are not keyed: they go to encodeTensorMap().
  if (rank == 0 || rank > key.dims.size() || s.box.size() != rank ||
      s.strideBytes.size() + 1 != rank)
    return false;
  key.encode = encode;
  key.dataType = s.dataType;
  key.base = s.base;
  key.swizzle = s.swizzle;
  key.l2Promotion = s.l2Promotion;
  key.rank = rank;
  std::copy(s.dims.begin(), s.dims.end(), key.dims.begin());
  std::copy(s.strideBytes.begin(), s.strideBytes.end(),
            key.strideBytes.begin());
  std::copy(s.box.begin(), s.box.end(), key.box.begin());
  return true;
}

StatusOr<CUtensorMap> TensorMapCache::encode(const TensorMapSpec &spec,
                                             TensorMapEncodeFn encode) {
  Key key;
  if (!keyOf(spec, encode, key))
    return encodeTensorMap(spec, encode);
  if (std::optional<CUtensorMap> kept = recent_.find(key))
    return *kept;
  StatusOr<CUtensorMap> map = encodeTensorMap(spec, encode);
  if (map.ok())
    recent_.insert(key, *map);
  return map;
}

} // namespace fa::rt
