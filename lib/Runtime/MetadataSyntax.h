//===- MetadataSyntax.h - Lexical pieces of the .meta format ---*- C++ -*-===//
//
// The values of a .meta file are chips, integers, doubles, identifiers and
// comma-separated lists; these read them strictly (no sign, space or suffix
// that the writer would not produce), for Metadata.cpp and the tensor-map
// grammar.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_RUNTIME_METADATASYNTAX_H
#define FA_LIB_RUNTIME_METADATASYNTAX_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fa::rt::detail {

bool contains(const std::vector<std::string> &list, std::string_view name);
/// Parses "sm_<digits>[suffix letters]"; returns the number or -1.
int parseChip(std::string_view chip, bool *archSpecific = nullptr);
std::string_view trim(std::string_view s);
bool parseInt(std::string_view s, int64_t &out);
bool parseDouble(std::string_view s, double &out);
bool isIdentifier(std::string_view s);
std::vector<std::string_view> splitCommas(std::string_view s);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATASYNTAX_H
