//===- TensorMap.h - TMA descriptors (CUtensorMap) for tiles ----*- C++ -*-===//
//
// The Hopper kernels (docs/hopper-plan.md, milestone 1) copy tiles with TMA,
// which reads a 128-byte CUtensorMap encoded on the host by the driver's
// cuTensorMapEncodeTiled. This header describes such a map, checks it
// against the limits the driver documents (so that a bad shape is an error
// naming the field here, not a bare CUDA_ERROR_INVALID_VALUE) and encodes it.
//
// Out-of-bounds elements of a box read as zero, which is what the kernels'
// ragged last blocks rely on. A swizzled box must land at a 1024-byte aligned
// shared-memory address; that is the kernel's side.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_TENSORMAP_H
#define FA_RUNTIME_TENSORMAP_H

#include "fa/Runtime/Driver.h"
#include "fa/Runtime/RecentValues.h"
#include "fa/Runtime/Status.h"

#include <cuda.h>

#include <array>
#include <cstdint>
#include <vector>

namespace fa::rt {

/// A tiled view of global memory, every list innermost dimension first.
struct TensorMapSpec {
  CUtensorMapDataType dataType = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  CUdeviceptr base = 0;
  std::vector<uint64_t> dims;
  /// Bytes between consecutive indices of dims[1..] (the innermost dimension
  /// is dense): one fewer than dims.
  std::vector<uint64_t> strideBytes;
  std::vector<uint32_t> box;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  CUtensorMapL2promotion l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;

  /// Bytes one box copies: what a copy's mbarrier must expect.
  uint64_t boxBytes() const;
};

/// Bytes per element of the data types the kernels use (8-bit integers for
/// FP8, f16, bf16, f32); 0 for any other.
unsigned tensorMapElementBytes(CUtensorMapDataType dataType);

/// The map of a dense row-major [batch, heads, seq, dim] tensor with boxes of
/// `rows` sequence rows and `boxCols` columns of one (batch, head): dims
/// {dim, seq, heads, batch}, so rows past `seq` read as zero instead of
/// coming from the next head. boxCols = 0 takes the widest box the swizzle
/// span allows (128 bytes of elements), capped by `dim`; wider rows are
/// copied as several boxes.
/// `strides`, if not all zero, are the tensor's element strides (batch,
/// heads, seq, dim; dim's must be 1): a view such as [B, N, H, D] memory
/// seen as [B, H, N, D] is read in place.
TensorMapSpec attentionTileMap(CUtensorMapDataType dataType, CUdeviceptr base,
                               uint64_t batch, uint64_t heads, uint64_t seq,
                               uint64_t dim, uint32_t rows,
                               uint32_t boxCols = 0,
                               const std::array<int64_t, 4> &strides = {});

/// Checks `spec` against cuTensorMapEncodeTiled's documented limits.
Status validateTensorMap(const TensorMapSpec &spec);

/// The signature of cuTensorMapEncodeTiled.
using TensorMapEncodeFn =
    CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                 const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                 const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/// validateTensorMap(), then `encode` (element strides 1, no interleave,
/// out-of-bounds elements zero).
StatusOr<CUtensorMap> encodeTensorMap(const TensorMapSpec &spec,
                                      TensorMapEncodeFn encode);
/// The same through `driver`'s cuTensorMapEncodeTiled (CUDA 12.0 and later).
StatusOr<CUtensorMap> encodeTensorMap(const TensorMapSpec &spec,
                                      Driver &driver);
/// `driver`'s cuTensorMapEncodeTiled, or an error if the driver is not
/// loaded or too old to have it. For encoding several maps per launch; the
/// driver's encoder needs a current context (hold a ContextScope on
/// `driver` while it runs: CUDA_ERROR_INVALID_CONTEXT otherwise).
StatusOr<TensorMapEncodeFn> tensorMapEncoder(Driver &driver);

/// The maps a kernel's launches encoded last, by everything the encoder
/// reads (encoder, data type, address, dims, strides, box, swizzle, L2
/// promotion): a launch that repeats one (the same tensors and shapes)
/// takes its descriptor as built, without the checks and the driver's
/// encoding. Keeps kCapacity maps, the oldest replaced first; failures are
/// not kept. Thread-safe.
class TensorMapCache {
public:
  static constexpr size_t kCapacity = 16;
  /// encodeTensorMap(spec, encode), or the map it gave for the same inputs.
  StatusOr<CUtensorMap> encode(const TensorMapSpec &spec,
                               TensorMapEncodeFn encode);
  /// How many maps it holds.
  size_t size() const { return recent_.size(); }

private:
  /// What the encoder reads: spec's fields in fixed arrays (rank <= 5).
  struct Key {
    TensorMapEncodeFn encode = nullptr;
    CUtensorMapDataType dataType{};
    CUdeviceptr base = 0;
    CUtensorMapSwizzle swizzle{};
    CUtensorMapL2promotion l2Promotion{};
    size_t rank = 0;
    std::array<uint64_t, 5> dims{}, strideBytes{};
    std::array<uint32_t, 5> box{};
    bool operator==(const Key &other) const;
  };
  static bool keyOf(const TensorMapSpec &spec, TensorMapEncodeFn encode,
                    Key &key);
  RecentValues<Key, CUtensorMap, kCapacity> recent_;
};

} // namespace fa::rt

#endif // FA_RUNTIME_TENSORMAP_H
