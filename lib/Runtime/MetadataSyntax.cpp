//===- MetadataSyntax.cpp - Lexical pieces of the .meta format ------------===//

#include "MetadataSyntax.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

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

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r'))
    ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r'))
    --e;
  return s.substr(b, e - b);
}

/// Strict integer parse: optional '-', decimal digits, nothing else.
bool parseInt(std::string_view s, int64_t &out) {
  if (s.empty() || s.size() > 30)
    return false;
  std::string buf(s);
  const char *p = buf.c_str();
  if (*p != '-' && (*p < '0' || *p > '9'))
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(p, &end, 10);
  if (errno != 0 || end != p + buf.size())
    return false;
  out = v;
  return true;
}

/// Strict floating-point parse (decimal or exponent notation, finite).
bool parseDouble(std::string_view s, double &out) {
  if (s.empty() || s.size() > 64)
    return false;
  std::string buf(s);
  for (char c : buf)
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' ||
          c == 'e' || c == 'E'))
      return false;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(buf.c_str(), &end);
  if (errno != 0 || end != buf.c_str() + buf.size() || !std::isfinite(v))
    return false;
  out = v;
  return true;
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

std::vector<std::string_view> splitCommas(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) {
      parts.push_back(trim(s.substr(start)));
      break;
    }
    parts.push_back(trim(s.substr(start, comma - start)));
    start = comma + 1;
  }
  return parts;
}

} // namespace fa::rt::detail
