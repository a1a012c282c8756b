//===- KernelCache.cpp - On-disk and in-memory kernel cache ---------------===//

#include "fa/Runtime/KernelCache.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fa::rt {

namespace {

constexpr const char kMagic[] = "FLASHMLIR-KERNEL-CACHE 1\n";

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

/// mkdir -p. Returns "" or the reason.
std::string makeDirectories(const std::string &path) {
  if (path.empty())
    return "empty path";
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    size_t slash = path.find('/', pos + 1);
    prefix = path.substr(0, slash);
    pos = slash;
    if (prefix.empty() || prefix == "/")
      continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return "mkdir(" + prefix + "): " + std::strerror(errno);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return path + " is not a directory";
  return "";
}

/// Reads the cache entry at `path`; "" or why it cannot be used (`missing`
/// set when there is no file). Only a regular file of at most
/// kMaxEntryBytes is read: the directory is shared, and a FIFO (which blocks
/// an open or read forever), a device, or a symbolic link to one (e.g.
/// /dev/zero, endless) must not hang or exhaust the process.
std::string readWholeFile(const std::string &path, std::string &out,
                          bool &missing) {
  missing = false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    missing = errno == ENOENT;
    return errno == ELOOP ? std::string("a symbolic link, not a regular file")
                          : std::string("unreadable: ") + std::strerror(errno);
  }
  const std::string tooLarge =
      "larger than " + std::to_string(KernelCache::kMaxEntryBytes) + " bytes";
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return "not a regular file";
  }
  if (uint64_t(st.st_size) > KernelCache::kMaxEntryBytes) {
    ::close(fd);
    return tooLarge;
  }
  out.clear();
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string why = std::string("unreadable: ") + std::strerror(errno);
      ::close(fd);
      return why;
    }
    if (n == 0)
      break;
    out.append(buf, size_t(n));
    // A file that grows while read is not an entry we wrote.
    if (out.size() > KernelCache::kMaxEntryBytes) {
      ::close(fd);
      return tooLarge;
    }
  }
  ::close(fd);
  return "";
}

/// Parses "<label> <number>\n" at `pos`.
bool parseHeaderLine(const std::string &data, size_t &pos, const char *label,
                     int base, uint64_t &value) {
  size_t len = std::strlen(label);
  if (data.compare(pos, len, label) != 0 || pos + len >= data.size() ||
      data[pos + len] != ' ')
    return false;
  size_t nl = data.find('\n', pos);
  if (nl == std::string::npos)
    return false;
  std::string number = data.substr(pos + len + 1, nl - pos - len - 1);
  if (number.empty() || number.size() > 20)
    return false;
  for (char c : number)
    if (!std::isxdigit(static_cast<unsigned char>(c)) ||
        (base == 10 && !std::isdigit(static_cast<unsigned char>(c))))
      return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtoull(number.c_str(), &end, base);
  if (errno != 0 || *end != '\0')
    return false;
  pos = nl + 1;
  return true;
}

} // namespace

uint64_t fnv1a64Bytes(const void *data, size_t size, uint64_t hash) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

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
    : directory_(directory.empty() ? defaultDirectory()
                                   : std::move(directory)) {
  while (directory_.size() > 1 && directory_.back() == '/')
    directory_.pop_back();
  diskProblem_ = directory_.empty() ? "no cache directory (neither "
                                      "$FLASHMLIR_CACHE_DIR nor a home "
                                      "directory)"
                                    : makeDirectories(directory_);
  diskEnabled_ = diskProblem_.empty();
}

std::string KernelCache::entryPath(const CacheKey &key) const {
  // The chip is in the name for humans; the hash covers the whole key.
  std::string chip;
  for (char c : key.chip)
    chip += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return directory_ + "/" + (chip.empty() ? "any" : chip) + "-" +
         hex64(fnv1a64(key.serialize())) + ".fakernel";
}

KernelCache::DiskResult KernelCache::readEntry(const std::string &path,
                                               const std::string &key,
                                               std::string &bytes,
                                               std::string &why) const {
  std::string data;
  bool missing = false;
  std::string problem = readWholeFile(path, data, missing);
  if (missing)
    return DiskResult::Missing;
  if (!problem.empty()) {
    why = problem;
    return DiskResult::Corrupt;
  }
  size_t magicLen = sizeof kMagic - 1;
  if (data.compare(0, magicLen, kMagic) != 0) {
    why = "bad magic";
    return DiskResult::Corrupt;
  }
  size_t pos = magicLen;
  uint64_t keyBytes = 0, payloadBytes = 0, checksum = 0;
  if (!parseHeaderLine(data, pos, "key-bytes", 10, keyBytes) ||
      !parseHeaderLine(data, pos, "payload-bytes", 10, payloadBytes) ||
      !parseHeaderLine(data, pos, "fnv1a64", 16, checksum) ||
      pos >= data.size() || data[pos] != '\n') {
    why = "bad header";
    return DiskResult::Corrupt;
  }
  ++pos;
  if (keyBytes > data.size() || payloadBytes > data.size() ||
      data.size() - pos != keyBytes + payloadBytes) {
    why = "size mismatch (truncated?): header says " +
          std::to_string(keyBytes + payloadBytes) + " bytes, file has " +
          std::to_string(data.size() - pos);
    return DiskResult::Corrupt;
  }
  uint64_t actual = fnv1a64Bytes(data.data() + pos, keyBytes + payloadBytes);
  if (actual != checksum) {
    why = "checksum mismatch";
    return DiskResult::Corrupt;
  }
  if (data.compare(pos, keyBytes, key) != 0)
    return DiskResult::OtherKey;
  bytes.assign(data, pos + keyBytes, payloadBytes);
  return DiskResult::Hit;
}

Status KernelCache::writeEntry(const std::string &path, const std::string &key,
                               std::string_view bytes) const {
  std::string body = key;
  body.append(bytes.data(), bytes.size());
  std::string data = kMagic;
  data += "key-bytes " + std::to_string(key.size()) + "\n";
  data += "payload-bytes " + std::to_string(bytes.size()) + "\n";
  data += "fnv1a64 " + hex64(fnv1a64(body)) + "\n\n";
  data += body;

  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("cannot create '" + tmp +
                         "': " + std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::error("cannot write '" + tmp + "': " + std::strerror(err));
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::error("cannot write '" + tmp + "': " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status::error("cannot rename '" + tmp + "' to '" + path +
                         "': " + std::strerror(err));
  }
  return Status::success();
}

Status KernelCache::store(const CacheKey &key, std::string_view bytes) {
  std::string serialized = key.serialize();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_[serialized] = std::string(bytes);
  }
  if (!diskEnabled_)
    return Status::error("cache directory '" + directory_ + "' is unusable (" +
                         diskProblem_ + "); entry kept in memory only");
  return writeEntry(entryPath(key), serialized, bytes);
}

Status KernelCache::getOrBuild(const CacheKey &key, const Builder &builder,
                               std::string &bytes, CacheOutcome *outcome,
                               std::string *warning) {
  if (warning)
    warning->clear();
  std::string serialized = key.serialize();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = memory_.find(serialized);
    if (it != memory_.end()) {
      bytes = it->second;
      ++stats_.memoryHits;
      if (outcome)
        *outcome = CacheOutcome::MemoryHit;
      return Status::success();
    }
  }

  CacheOutcome result = CacheOutcome::Built;
  std::string notes;
  if (diskEnabled_) {
    std::string path = entryPath(key), why;
    switch (readEntry(path, serialized, bytes, why)) {
    case DiskResult::Hit: {
      std::lock_guard<std::mutex> lock(mutex_);
      memory_[serialized] = bytes;
      ++stats_.diskHits;
      if (outcome)
        *outcome = CacheOutcome::DiskHit;
      return Status::success();
    }
    case DiskResult::Corrupt: {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.corrupt;
      }
      notes = "corrupt cache entry '" + path + "' (" + why + ") deleted";
      if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        notes += std::string(" (unlink failed: ") + std::strerror(errno) + ")";
      result = CacheOutcome::RebuiltCorrupt;
      break;
    }
    case DiskResult::Missing:
    case DiskResult::OtherKey:
      break;
    }
  }

  std::string built;
  FA_RT_RETURN_IF_ERROR(builder(built).withContext("building cache entry"));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.builds;
  }
  Status stored = store(key, built);
  if (!stored.ok())
    notes += (notes.empty() ? "" : "; ") + stored.message();
  bytes = std::move(built);
  if (outcome)
    *outcome = result;
  if (warning)
    *warning = notes;
  return Status::success();
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
