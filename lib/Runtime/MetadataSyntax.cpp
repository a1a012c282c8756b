//===- MetadataSyntax.cpp - Reading the values of .meta JSON --------------===//

#include "MetadataSyntax.h"

#include <nlohmann/json.hpp>

#include <climits>

namespace fa::rt::detail {

bool contains(const std::vector<std::string> &list, std::string_view name) {
  for (const std::string &item : list)
    if (item == name)
      return true;
  return false;
}

int parseChip(std::string_view chip, bool *archSpecific) {
  if (chip.size() < 4 || chip.substr(0, 3) != "sm_")
    return -1;
  size_t i = 3;
  int version = 0;
  while (i < chip.size() && chip[i] >= '0' && chip[i] <= '9') {
    version = version * 10 + (chip[i] - '0');
    if (version > 100000)
      return -1;
    ++i;
  }
  if (i == 3 || version < 10)
    return -1;
  size_t suffixStart = i;
  while (i < chip.size() && chip[i] >= 'a' && chip[i] <= 'z')
    ++i;
  if (i != chip.size() || i - suffixStart > 1)
    return -1;
  if (archSpecific)
    *archSpecific = suffixStart != chip.size();
  return version;
}

bool isIdentifier(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '.'))
      return false;
  return !(s[0] >= '0' && s[0] <= '9');
}

std::string quote(std::string_view key) {
  // ASCII only, invalid UTF-8 replaced: dump() would otherwise throw, which
  // aborts here (-fno-exceptions).
  return nlohmann::json(key).dump(-1, ' ', /*ensure_ascii=*/true,
                                  nlohmann::json::error_handler_t::replace);
}

std::string show(const nlohmann::json &value) {
  // Never dump a structure: a message has no room for one, and dump()
  // recurses as deep as a hostile file nests.
  if (value.is_array())
    return "an array";
  if (value.is_object())
    return "an object";
  constexpr size_t kMaxShown = 40;
  std::string text = value.dump(-1, ' ', /*ensure_ascii=*/true,
                                nlohmann::json::error_handler_t::replace);
  return text.size() <= kMaxShown ? text : text.substr(0, kMaxShown) + "...";
}

std::string expected(const std::string &path, const std::string &what,
                     const nlohmann::json &value) {
  return path + ": expected " + what + ", got " + show(value);
}

std::string readInteger(const nlohmann::json &value, const std::string &path,
                        int64_t min, int64_t max, int64_t &out) {
  // nlohmann keeps a non-negative integer as unsigned: one past INT64_MAX
  // is an integer too, which must not wrap around.
  bool isInt64 = value.is_number_integer() &&
                 !(value.is_number_unsigned() &&
                   value.get<uint64_t>() > uint64_t(INT64_MAX));
  int64_t v = isInt64 ? value.get<int64_t>() : 0;
  if (isInt64 && v >= min && v <= max) {
    out = v;
    return "";
  }
  std::string what = min == INT64_MIN && max == INT64_MAX ? "a 64-bit integer"
                     : max != INT64_MAX
                         ? "an integer in [" + std::to_string(min) + ", " +
                               std::to_string(max) + "]"
                     : min == 1 ? "a positive integer"
                     : min == 0 ? "a non-negative integer"
                                : "an integer >= " + std::to_string(min);
  return expected(path, what, value);
}

} // namespace fa::rt::detail
