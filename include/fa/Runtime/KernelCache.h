//===- KernelCache.h - On-disk and in-memory kernel cache -------*- C++ -*-===//
//
// Caches compiled kernel images (or any bytes) under a key made of a
// configuration string, the compiler's version string and the target chip.
// Entries live in memory for the life of the cache object and on disk in a
// directory (default: $FLASHMLIR_CACHE_DIR, else ~/.cache/flashmlir), one
// file per key:
//
//   FLASHMLIR-KERNEL-CACHE 1\n
//   key-bytes <K>\n
//   payload-bytes <P>\n
//   fnv1a64 <16 hex digits over key bytes + payload>\n
//   \n
//   <K key bytes><P payload bytes>
//
// Files are written atomically (a temporary file in the same directory, then
// rename), so readers never see a half-written entry. A file that is
// truncated, has a bad header or a checksum mismatch is reported as corrupt,
// deleted and rebuilt by the caller's builder; so is anything at an entry's
// path that is not a regular file (a FIFO, a device, a symbolic link), which
// is never opened for reading. The full key is stored in the entry, so a
// file-name (hash) collision is a miss, not a wrong kernel. When the
// directory cannot be created or written, each build reports it through
// getOrBuild()'s warning.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELCACHE_H
#define FA_RUNTIME_KERNELCACHE_H

#include "fa/Runtime/Status.h"

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace fa::rt {

/// FNV-1a, 64 bit, of `size` bytes. `hash` continues a previous hash (chain
/// calls to hash several pieces).
uint64_t fnv1a64Bytes(const void *data, size_t size,
                      uint64_t hash = 0xcbf29ce484222325ull);
inline uint64_t fnv1a64(std::string_view s,
                        uint64_t hash = 0xcbf29ce484222325ull) {
  return fnv1a64Bytes(s.data(), s.size(), hash);
}

struct CacheKey {
  std::string config;          ///< E.g. KernelMetadata::configString().
  std::string compilerVersion; ///< The producing compiler's version string.
  std::string chip;            ///< "sm_90".
  /// Unambiguous serialization of the three fields (length-prefixed).
  std::string serialize() const;
};

enum class CacheOutcome {
  MemoryHit,      ///< Found in this cache object's memory.
  DiskHit,        ///< Read from a valid file.
  Built,          ///< No entry (or an entry of another key): built.
  RebuiltCorrupt, ///< The file was corrupt: deleted, rebuilt.
};
const char *toString(CacheOutcome outcome);

class KernelCache {
public:
  /// Produces the bytes for a missing entry.
  using Builder = std::function<Status(std::string &bytes)>;

  /// A cache in `directory`; "" means defaultDirectory(). If the directory
  /// cannot be created the cache works in memory only (see diskEnabled()).
  explicit KernelCache(std::string directory = "");

  /// $FLASHMLIR_CACHE_DIR if set and non-empty, else $HOME/.cache/flashmlir,
  /// else "" (no disk cache).
  static std::string defaultDirectory();

  const std::string &directory() const { return directory_; }
  bool diskEnabled() const { return diskEnabled_; }
  /// Why the disk cache is off ("" when diskEnabled()), e.g. "mkdir(/x):
  /// Permission denied".
  const std::string &diskProblem() const { return diskProblem_; }

  /// The largest entry file read: anything larger is not one of ours (a
  /// kernel set is a few MiB) and is treated as corrupt.
  static constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;
  /// The file that holds `key`'s entry.
  std::string entryPath(const CacheKey &key) const;

  /// Returns the cached bytes for `key` in `bytes`, building (and storing)
  /// them with `builder` if needed. Fails only if the builder fails.
  /// `outcome` receives how the entry was found; `warning`, if given, any
  /// non-fatal problem (e.g. the entry could not be written to disk).
  Status getOrBuild(const CacheKey &key, const Builder &builder,
                    std::string &bytes, CacheOutcome *outcome = nullptr,
                    std::string *warning = nullptr);

  /// Writes an entry to memory and (atomically) to disk.
  Status store(const CacheKey &key, std::string_view bytes);

  /// Forgets the in-memory entries (disk entries stay).
  void clearMemory();

  struct Stats {
    uint64_t memoryHits = 0, diskHits = 0, builds = 0, corrupt = 0;
  };
  Stats stats() const;

private:
  enum class DiskResult { Hit, Missing, OtherKey, Corrupt };
  DiskResult readEntry(const std::string &path, const std::string &key,
                       std::string &bytes, std::string &why) const;
  Status writeEntry(const std::string &path, const std::string &key,
                    std::string_view bytes) const;

  std::string directory_;
  bool diskEnabled_ = false;
  std::string diskProblem_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::string> memory_;
  Stats stats_;
};

} // namespace fa::rt

#endif // FA_RUNTIME_KERNELCACHE_H
