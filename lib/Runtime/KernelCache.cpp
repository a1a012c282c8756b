//===- KernelCache.cpp - On-disk and in-memory kernel cache ---------------===//

#include "fa/Runtime/KernelCache.h"

#include "CacheFiles.h"
#include "fa/Runtime/Sha256.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <pwd.h>
#include <unistd.h>

namespace fa::rt {

namespace {

/// Format 3: the metadata is JSON (format 2 held `key = value` lines).
constexpr const char kMagic[] = "FLASHMLIR-KERNEL-CACHE 3\n";
/// Every format's magic starts so: an entry of another version is named as
/// such, not as garbage.
constexpr const char kMagicPrefix[] = "FLASHMLIR-KERNEL-CACHE ";
constexpr size_t kDigestHexDigits = 64;

/// Parses "<label> <decimal number>\n" at `pos`.
bool parseSizeLine(const std::string &data, size_t &pos, const char *label,
                   uint64_t &value) {
  size_t len = std::strlen(label);
  if (data.compare(pos, len, label) != 0 || pos + len >= data.size() ||
      data[pos + len] != ' ')
    return false;
  size_t nl = data.find('\n', pos);
  if (nl == std::string::npos)
    return false;
  std::string number = data.substr(pos + len + 1, nl - pos - len - 1);
  if (number.empty() || number.size() > 19)
    return false;
  for (char c : number)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  value = std::strtoull(number.c_str(), nullptr, 10);
  pos = nl + 1;
  return true;
}

/// Parses "sha256 <64 lowercase hex digits>\n" at `pos`.
bool parseDigestLine(const std::string &data, size_t &pos,
                     std::string &digest) {
  const std::string label = "sha256 ";
  if (data.compare(pos, label.size(), label) != 0)
    return false;
  size_t start = pos + label.size();
  if (data.size() < start + kDigestHexDigits + 1 ||
      data[start + kDigestHexDigits] != '\n')
    return false;
  digest = data.substr(start, kDigestHexDigits);
  for (char c : digest)
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f'))
      return false;
  pos = start + kDigestHexDigits + 1;
  return true;
}

/// `reason` for a warning: a reason can quote bytes of a hostile entry
/// (metadata values), which must not reach a terminal as escape sequences
/// or flood it. Bytes outside printable ASCII become '?'; at most 300 kept.
std::string printable(std::string_view reason) {
  constexpr size_t kMaxReasonBytes = 300;
  std::string out;
  for (char c : reason.substr(0, kMaxReasonBytes))
    out += c >= 0x20 && c < 0x7f ? c : '?';
  if (reason.size() > kMaxReasonBytes)
    out += "...";
  return out;
}

/// Whether $FLASHMLIR_CACHE_TRUST_DIR is set to something other than 0.
bool trustDirectoryFromEnvironment() {
  const char *value = std::getenv(KernelCache::kTrustDirectoryVariable);
  return value && *value && std::strcmp(value, "0") != 0;
}

} // namespace

std::string CacheKey::serialize() const {
  std::string s;
  for (const std::string *field : {&config, &compilerVersion, &chip}) {
    s += std::to_string(field->size());
    s += ':';
    s += *field;
    s += '\n';
  }
  return s;
}

std::string entryDigest(std::string_view serializedKey,
                        const CacheEntry &entry) {
  Sha256 sha;
  sha.update(kMagic);
  for (std::string_view field :
       {serializedKey, std::string_view(entry.metadata),
        std::string_view(entry.payload)}) {
    sha.updateU64(field.size());
    sha.update(field);
  }
  return Sha256::toHex(sha.digest());
}

const char *toString(CacheOutcome outcome) {
  switch (outcome) {
  case CacheOutcome::MemoryHit:
    return "memory-hit";
  case CacheOutcome::DiskHit:
    return "disk-hit";
  case CacheOutcome::Built:
    return "built";
  case CacheOutcome::RebuiltCorrupt:
    return "rebuilt-corrupt";
  }
  return "?";
}

std::string KernelCache::defaultDirectory() {
  if (const char *env = std::getenv("FLASHMLIR_CACHE_DIR"); env && *env)
    return env;
  const char *home = std::getenv("HOME");
  if (!home || !*home) {
    if (struct passwd *pw = ::getpwuid(::getuid()))
      home = pw->pw_dir;
  }
  if (!home || !*home)
    return "";
  return std::string(home) + "/.cache/flashmlir";
}

KernelCache::KernelCache(std::string directory)
    : directory_(directory.empty() ? defaultDirectory() : std::move(directory)),
      trustDirectory_(trustDirectoryFromEnvironment()) {
  while (directory_.size() > 1 && directory_.back() == '/')
    directory_.pop_back();
  if (directory_.empty()) {
    diskProblem_ = "no cache directory (neither $FLASHMLIR_CACHE_DIR nor a "
                   "home directory)";
    return;
  }
  diskProblem_ = detail::makePrivateDirectories(directory_);
  if (diskProblem_.empty() && !trustDirectory_) {
    std::string why = detail::checkDirectoryIsPrivate(directory_);
    if (!why.empty())
      diskProblem_ = why +
                     ": whoever can write it can plant kernels that "
                     "this process would run, so it is not used (set " +
                     std::string(kTrustDirectoryVariable) +
                     "=1 to use it anyway)";
  }
  diskEnabled_ = diskProblem_.empty();
}

std::string KernelCache::entryPath(const CacheKey &key) const {
  // The chip is in the name for humans; the hash covers the whole key. 128
  // bits of SHA-256: two keys never share a file, so an entry of another
  // key at this path was copied there.
  std::string chip;
  for (char c : key.chip)
    chip += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return directory_ + "/" + (chip.empty() ? "any" : chip) + "-" +
         Sha256::hex(key.serialize()).substr(0, 32) + ".fakernel";
}

KernelCache::DiskResult KernelCache::readEntry(const std::string &path,
                                               const std::string &key,
                                               CacheEntry &entry,
                                               std::string &why) const {
  std::string data;
  switch (detail::readCacheFile(path, kMaxEntryBytes, !trustDirectory_, data,
                                why)) {
  case detail::FileRead::Missing:
    return DiskResult::Missing;
  case detail::FileRead::Unusable:
    return DiskResult::Unusable;
  case detail::FileRead::Ok:
    break;
  }
  size_t magicLen = sizeof kMagic - 1;
  if (data.compare(0, magicLen, kMagic) != 0) {
    size_t prefixLen = sizeof kMagicPrefix - 1;
    size_t nl = data.find('\n');
    std::string version =
        data.compare(0, prefixLen, kMagicPrefix) == 0 && nl != std::string::npos
            ? data.substr(prefixLen, nl - prefixLen)
            : "";
    bool isVersion = !version.empty() && version.size() <= 9;
    for (char c : version)
      isVersion = isVersion && std::isdigit(static_cast<unsigned char>(c));
    why = isVersion ? "an entry of another cache format (" +
                          std::string(kMagicPrefix) + version + ")"
                    : "bad magic";
    return DiskResult::Unusable;
  }
  size_t pos = magicLen;
  uint64_t keyBytes = 0, metadataBytes = 0, payloadBytes = 0;
  std::string digest;
  if (!parseSizeLine(data, pos, "key-bytes", keyBytes) ||
      !parseSizeLine(data, pos, "metadata-bytes", metadataBytes) ||
      !parseSizeLine(data, pos, "payload-bytes", payloadBytes) ||
      !parseDigestLine(data, pos, digest) || pos >= data.size() ||
      data[pos] != '\n') {
    why = "bad header";
    return DiskResult::Unusable;
  }
  ++pos;
  // Each size is below 10^19 and the sum of three fits 64 bits.
  uint64_t bodyBytes = keyBytes + metadataBytes + payloadBytes;
  if (data.size() - pos != bodyBytes) {
    why = "size mismatch (truncated?): header says " +
          std::to_string(bodyBytes) + " bytes, file has " +
          std::to_string(data.size() - pos);
    return DiskResult::Unusable;
  }
  std::string_view storedKey(data.data() + pos, keyBytes);
  CacheEntry stored{data.substr(pos + keyBytes, metadataBytes),
                    data.substr(pos + keyBytes + metadataBytes, payloadBytes)};
  if (entryDigest(storedKey, stored) != digest) {
    why = "sha256 mismatch: the entry was damaged or altered";
    return DiskResult::Unusable;
  }
  if (storedKey != key) {
    why = "it holds the entry of another key";
    return DiskResult::Unusable;
  }
  entry = std::move(stored);
  return DiskResult::Hit;
}

Status KernelCache::writeEntry(const std::string &path, const std::string &key,
                               const CacheEntry &entry) const {
  std::string data = kMagic;
  data += "key-bytes " + std::to_string(key.size()) + "\n";
  data += "metadata-bytes " + std::to_string(entry.metadata.size()) + "\n";
  data += "payload-bytes " + std::to_string(entry.payload.size()) + "\n";
  data += "sha256 " + entryDigest(key, entry) + "\n\n";
  data += key;
  data += entry.metadata;
  data += entry.payload;
  return detail::writeFileAtomically(path, data);
}

Status KernelCache::store(const CacheKey &key, const CacheEntry &entry) {
  std::string serialized = key.serialize();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_[serialized] = entry;
  }
  if (!diskEnabled_)
    return Status::error("cache directory '" + directory_ + "' is unusable (" +
                         diskProblem_ + "); entry kept in memory only");
  return writeEntry(entryPath(key), serialized, entry);
}

Status KernelCache::getOrBuild(const CacheKey &key, const Builder &builder,
                               CacheEntry &entry, CacheOutcome *outcome,
                               std::string *warning,
                               const Validator &validator) {
  if (warning)
    warning->clear();
  std::string serialized = key.serialize();
  CacheOutcome result = CacheOutcome::Built;
  std::string notes;
  auto note = [&](const std::string &text) {
    notes += (notes.empty() ? "" : "; ") + text;
  };
  auto rejection = [&](const CacheEntry &found) {
    return validator ? printable(validator(found)) : std::string();
  };
  auto found = [&](CacheOutcome how, const CacheEntry &hit) {
    entry = hit;
    if (outcome)
      *outcome = how;
    if (warning)
      *warning = notes;
    return Status::success();
  };

  CacheEntry candidate;
  bool inMemory = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = memory_.find(serialized);
    if (it != memory_.end()) {
      candidate = it->second;
      inMemory = true;
    }
  }
  if (inMemory) {
    std::string why = rejection(candidate);
    std::lock_guard<std::mutex> lock(mutex_);
    if (why.empty()) {
      ++stats_.memoryHits;
      return found(CacheOutcome::MemoryHit, candidate);
    }
    // Put there by store(): nothing this process built.
    memory_.erase(serialized);
    ++stats_.corrupt;
    result = CacheOutcome::RebuiltCorrupt;
    note("the in-memory entry does not match the request (" + why +
         "): dropped");
  }

  if (diskEnabled_) {
    std::string path = entryPath(key), why;
    DiskResult read = readEntry(path, serialized, candidate, why);
    if (read == DiskResult::Hit) {
      why = rejection(candidate);
      if (why.empty()) {
        std::lock_guard<std::mutex> lock(mutex_);
        memory_[serialized] = candidate;
        ++stats_.diskHits;
        return found(CacheOutcome::DiskHit, candidate);
      }
      why = "it does not match the request: " + why;
    }
    if (read != DiskResult::Missing) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.corrupt;
      }
      std::string text = "unusable cache entry '" + path + "' (" +
                         printable(why) + "): deleted and rebuilt";
      if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        text += std::string(" (unlink failed: ") + std::strerror(errno) + ")";
      note(text);
      result = CacheOutcome::RebuiltCorrupt;
    }
  }

  CacheEntry built;
  FA_RT_RETURN_IF_ERROR(builder(built).withContext("building cache entry"));
  if (std::string why = rejection(built); !why.empty())
    return Status::error("building cache entry: the built entry does not "
                         "match the request: " +
                         why);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.builds;
  }
  Status stored = store(key, built);
  if (!stored.ok())
    note(stored.message());
  return found(result, built);
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

} // namespace fa::rt
