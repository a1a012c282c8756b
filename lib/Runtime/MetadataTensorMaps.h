//===- MetadataTensorMaps.h - The `tensor_maps` key of .meta ---*- C++ -*-===//
//
// "tensor_maps": {"q": [128, 64], "k": [128, 64], ...}: which kernel
// parameters are TMA descriptors and their boxes (rows, cols); read
// strictly, then checked against the kernel's kind and parameter lists once
// the whole file is read.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_RUNTIME_METADATATENSORMAPS_H
#define FA_LIB_RUNTIME_METADATATENSORMAPS_H

#include "fa/Runtime/Metadata.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace fa::rt::detail {

/// Reads a `tensor_maps` value (at `path`) into `maps`, sorted in canonical
/// tensor order so that the order written does not change configString();
/// returns "" or the problem.
std::string readTensorMaps(const nlohmann::json &value, const std::string &path,
                           std::vector<TensorMapParam> &maps);

/// `tensor_maps` against the kind and the parameter lists.
Status checkTensorMaps(const KernelMetadata &m);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATATENSORMAPS_H
