//===- MetadataSyntax.h - Reading the values of .meta JSON -----*- C++ -*-===//
//
// The pieces Metadata.cpp and MetadataTensorMaps.cpp read a .meta file's
// values with: checks of names, an integer read without narrowing, and the
// messages that locate a value by its key path ("pre"."grid"[1]).
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_RUNTIME_METADATASYNTAX_H
#define FA_LIB_RUNTIME_METADATASYNTAX_H

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fa::rt::detail {

bool contains(const std::vector<std::string> &list, std::string_view name);
/// Parses "sm_<digits>[suffix letter]"; returns the number or -1.
int parseChip(std::string_view chip, bool *archSpecific = nullptr);
bool isIdentifier(std::string_view s);

/// `key` as a path segment: `"key"`, quoted and escaped as JSON.
std::string quote(std::string_view key);
/// `value` for a message: a scalar as JSON text (ASCII, at most 40
/// characters), "an array" or "an object".
std::string show(const nlohmann::json &value);
/// "<path>: expected <what>, got <value>".
std::string expected(const std::string &path, const std::string &what,
                     const nlohmann::json &value);
/// Reads an integer in [min, max] into `out`: "" or the problem. A float
/// (1.0, 1e300) or an integer outside int64 (2^63) is no integer here.
std::string readInteger(const nlohmann::json &value, const std::string &path,
                        int64_t min, int64_t max, int64_t &out);

} // namespace fa::rt::detail

#endif // FA_LIB_RUNTIME_METADATASYNTAX_H
