//===- MetadataTensorMaps.h - The `tensor_maps` key of .meta ---*- C++ -*-===//
//
// "tensor_maps = q:128x64,k:128x64,...": which kernel parameters are TMA
// descriptors and their boxes; parsed strictly, then checked against the
// kernel's kind and parameter lists once the whole file is read.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_RUNTIME_METADATATENSORMAPS_H
#define FA_LIB_RUNTIME_METADATATENSORMAPS_H

#include "fa/Runtime/Metadata.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fa::rt::detail {

/// Parses a whole `tensor_maps` value into `maps`, sorted in canonical
/// tensor order so that the order written does not change configString();
/// returns "" or the problem.
std::string parseTensorMaps(std::string_view value,
                            std::vector<TensorMapParam> &maps);

/// `tensor_maps` against the kind and the parameter lists (`lines`: the
/// line of each key read, for the messages).
Status checkTensorMaps(const KernelMetadata &m,
                       const std::map<std::string, int> &lines);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATATENSORMAPS_H
