//===- KernelParams.cpp - The parameter values of one launch --------------===//

#include "fa/Runtime/KernelParams.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace fa::rt {

// cuda.h declares CUtensorMap alignas(64) (CUDA 12) or alignas(128) (CUDA
// 13); std::vector's allocator honours it (C++17 aligned new), which is what
// keeps the stored maps 64-byte aligned.
static_assert(alignof(CUtensorMap) >= 64 && sizeof(CUtensorMap) == 128,
              "CUtensorMap must be a 64-byte aligned 128-byte struct");

void KernelParams::reserve(size_t parameters) {
  slots_.reserve(parameters);
  pointers_.reserve(parameters);
  maps_.reserve(parameters);
  scalars_.reserve(parameters);
  addresses_.reserve(parameters);
}

void KernelParams::addPointer(CUdeviceptr pointer) {
  slots_.push_back({Kind::Pointer, pointers_.size()});
  pointers_.push_back(pointer);
}

void KernelParams::addTensorMap(const CUtensorMap &map) {
  slots_.push_back({Kind::TensorMap, maps_.size()});
  maps_.push_back(map);
}

void KernelParams::addScalar(int64_t value) {
  slots_.push_back({Kind::Scalar, scalars_.size()});
  scalars_.push_back(value);
}

void **KernelParams::data() {
  // Built here rather than in add*(): adding may reallocate the value
  // vectors and move the values.
  addresses_.clear();
  for (const Slot &slot : slots_)
    addresses_.push_back(slot.kind == Kind::TensorMap
                             ? static_cast<void *>(&maps_[slot.index])
                         : slot.kind == Kind::Scalar
                             ? static_cast<void *>(&scalars_[slot.index])
                             : static_cast<void *>(&pointers_[slot.index]));
  return addresses_.data();
}

namespace {

struct TensorShape {
  int64_t heads, seq, dim;
};

/// The [heads, seq, dim] of attention tensor `name` (after the batch), or
/// false for a name that is not one.
bool attentionTensorShape(const KernelMetadata &m, std::string_view name,
                          TensorShape &shape) {
  const bool queryRows = name == "q" || name == "dq" || name == "o" ||
                         name == "do" || name == "dq_acc";
  const bool keyRows =
      name == "k" || name == "dk" || name == "v" || name == "dv";
  if (!queryRows && !keyRows)
    return false;
  const bool valueCols =
      name == "o" || name == "do" || name == "v" || name == "dv";
  shape.heads = queryRows ? m.headsQ : m.headsKV;
  shape.seq = queryRows ? m.seqQ : m.seqKV;
  shape.dim = valueCols ? m.headDimV : m.headDim;
  return true;
}

CUtensorMapDataType tensorMapDataType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case DType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case DType::E4M3:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8; // bytes to TMA
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

const NamedPointer *findPointer(const std::vector<NamedPointer> &pointers,
                                std::string_view name) {
  for (const NamedPointer &p : pointers)
    if (name == p.name)
      return &p;
  return nullptr;
}

/// The encoded descriptor of `map` for the call's `pointers`.
StatusOr<CUtensorMap> encodeParam(const KernelMetadata &m,
                                  const TensorMapParam &map,
                                  const std::vector<NamedPointer> &pointers,
                                  TensorMapEncodeFn encode,
                                  TensorMapCache *cache) {
  const NamedPointer *base = findPointer(pointers, map.tensor);
  if (!base)
    return Status::error("this call has no tensor '" + map.tensor + "'");
  if (!encode)
    return Status::error("no tensor map encoder (cuTensorMapEncodeTiled)");
  StatusOr<TensorMapSpec> spec =
      tensorMapSpec(m, map, base->pointer, base->strides);
  if (!spec.ok())
    return spec.status();
  return cache ? cache->encode(*spec, encode) : encodeTensorMap(*spec, encode);
}

} // namespace

StatusOr<TensorMapSpec> tensorMapSpec(const KernelMetadata &m,
                                      const TensorMapParam &map,
                                      CUdeviceptr base,
                                      const std::array<int64_t, 4> &strides) {
  TensorShape shape;
  if (!attentionTensorShape(m, map.tensor, shape))
    return Status::error("'" + map.tensor + "' is not an attention tensor");
  // dq_acc, the backward's f32 workspace, takes its dQ sums in f32.
  // O is written in the output's type (an FP8 forward's bf16 / f16).
  const CUtensorMapDataType dataType =
      map.tensor == "dq_acc" ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
      : map.tensor == "o"    ? tensorMapDataType(m.outDtype)
                             : tensorMapDataType(m.dtype);
  return attentionTileMap(dataType, base, uint64_t(m.batch),
                          uint64_t(shape.heads), uint64_t(shape.seq),
                          uint64_t(shape.dim), map.rows, map.cols, strides);
}

StatusOr<KernelParams>
buildKernelParams(const KernelMetadata &m, const LaunchSpec &launch,
                  const std::vector<NamedPointer> &pointers,
                  TensorMapEncodeFn encode, TensorMapCache *cache) {
  KernelParams params;
  params.reserve(launch.args.size());
  for (const std::string &name : launch.args) {
    if (const NamedPointer *pointer = findPointer(pointers, name)) {
      params.addPointer(pointer->pointer);
      continue;
    }
    if (isSizeParameter(name)) {
      // A runtime size: the call's, once the metadata is instantiated.
      const int64_t value = name == "batch"         ? m.batch
                            : name == "seq_q"       ? m.seqQ
                            : name == "seq_offsets" ? m.sequences + 1
                                                    : m.seqKV;
      if (m.runtimeShapes || value < 1)
        return Status::error("parameter '" + name + "' of kernel '" +
                             launch.entry +
                             "' is a runtime size: instantiate the kernel's "
                             "metadata for the call's shape first");
      params.addScalar(value);
      continue;
    }
    const TensorMapParam *map = m.findTensorMap(name);
    if (!map)
      return Status::error("unknown parameter '" + name + "' of kernel '" +
                           launch.entry + "'");
    StatusOr<CUtensorMap> encoded =
        encodeParam(m, *map, pointers, encode, cache);
    if (!encoded.ok())
      return encoded.status().withContext(
          "parameter '" + name + "' (tensor map " + map->toString() + ")");
    params.addTensorMap(*encoded);
  }
  return params;
}

} // namespace fa::rt
