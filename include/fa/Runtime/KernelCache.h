//===- KernelCache.h - On-disk and in-memory kernel cache -------*- C++ -*-===//
//
// Caches compiled kernel images (or any bytes) with their launch metadata
// (the .meta JSON; the JIT parses what it reads back with
// parseKernelMetadata()) under a key made of a configuration string, the
// compiler's version string and the target chip. Entries live in memory for
// the life of the cache object and on disk in a directory (default:
// $FLASHMLIR_CACHE_DIR, else ~/.cache/flashmlir), one file per key:
//
//   FLASHMLIR-KERNEL-CACHE 3\n
//   key-bytes <K>\n
//   metadata-bytes <M>\n
//   payload-bytes <P>\n
//   sha256 <64 hex digits>\n
//   \n
//   <K key bytes><M metadata bytes><P payload bytes>
//
// The SHA-256 (entryDigest()) covers the key, the metadata and the payload,
// each length-prefixed: it binds the entry to its key, so a damaged entry, or
// one copied to another key's file, is rejected. It holds no secret, so it
// does not stop someone who can write the directory from forging an entry:
// that is the directory's job. The cache creates it with mode 0700 and
// refuses (memory only, with a warning naming the path and the reason) an
// existing one that another user owns or that its group or others can write,
// unless $FLASHMLIR_CACHE_TRUST_DIR=1; entry files not owned by the current
// user are rejected under the same condition.
//
// Files are written with mode 0600 to a temporary file in the same directory,
// then renamed, so readers never see a half-written entry. Anything at an
// entry's path that is not a regular file of at most kMaxEntryBytes (a FIFO, a
// device, a symbolic link) is never opened for reading. An entry that is
// unreadable, damaged, of another key or of an older format, or that the
// caller's validator rejects (metadata that does not match the request), is
// a miss: it is rebuilt by the caller's builder and replaced, and
// getOrBuild()'s warning says why. When the directory cannot be created or
// written, each build reports it the same way. The threat model:
// docs/runtime.md, "Kernel cache: threat model".
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

struct CacheKey {
  std::string config;          ///< E.g. KernelMetadata::configString().
  std::string compilerVersion; ///< The producing compiler's version string.
  std::string chip;            ///< "sm_90".
  /// Unambiguous serialization of the three fields (length-prefixed).
  std::string serialize() const;
};

/// What the cache holds for a key.
struct CacheEntry {
  /// The kernel's launch metadata (`.meta` text); "" for callers that keep
  /// none.
  std::string metadata;
  /// The kernel image (PTX text or cubin bytes).
  std::string payload;
  bool operator==(const CacheEntry &other) const {
    return metadata == other.metadata && payload == other.payload;
  }
};

/// The SHA-256, as 64 hex digits, that a disk entry of `serializedKey`
/// holding `entry` carries: over the format's magic line, then the key, the
/// metadata and the payload, each preceded by its length (8 bytes,
/// big-endian).
std::string entryDigest(std::string_view serializedKey,
                        const CacheEntry &entry);

enum class CacheOutcome {
  MemoryHit, ///< Found in this cache object's memory.
  DiskHit,   ///< Read from a valid file.
  Built,     ///< No entry: built.
  /// The entry found was unusable (damaged, an older format, another key's,
  /// not owned by this user, or rejected by the validator): rebuilt and
  /// replaced, with a warning that says why.
  RebuiltCorrupt,
};
const char *toString(CacheOutcome outcome);

class KernelCache {
public:
  /// Produces the entry for a missing key.
  using Builder = std::function<Status(CacheEntry &entry)>;
  /// Checks an entry found for the request against what the caller asked
  /// for: "" when it may be used, else why not (e.g. "seq_q is 999, the
  /// request has 100").
  using Validator = std::function<std::string(const CacheEntry &entry)>;

  /// A cache in `directory`; "" means defaultDirectory(). If the directory
  /// cannot be created, or is not private to this user (see the file
  /// comment), the cache works in memory only (see diskEnabled()).
  explicit KernelCache(std::string directory = "");

  /// $FLASHMLIR_CACHE_DIR if set and non-empty, else $HOME/.cache/flashmlir,
  /// else "" (no disk cache).
  static std::string defaultDirectory();
  /// The environment variable that makes the cache use a directory (and
  /// entry files) that is not private to the current user.
  static constexpr const char *kTrustDirectoryVariable =
      "FLASHMLIR_CACHE_TRUST_DIR";

  const std::string &directory() const { return directory_; }
  bool diskEnabled() const { return diskEnabled_; }
  /// Why the disk cache is off ("" when diskEnabled()), e.g. "mkdir(/x):
  /// Permission denied" or "'/x' is writable by its group or others (mode
  /// 0777) ...".
  const std::string &diskProblem() const { return diskProblem_; }

  /// The largest entry file read: anything larger is not one of ours (a
  /// kernel set is a few MiB) and is treated as corrupt.
  static constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;
  /// The file that holds `key`'s entry.
  std::string entryPath(const CacheKey &key) const;

  /// Returns the cached entry for `key` in `entry`, building (and storing)
  /// it with `builder` if there is none or the one found is unusable.
  /// `validator`, if given, checks every entry found (in memory or on disk)
  /// and every entry built: a found entry it rejects is rebuilt with a
  /// warning; a built one it rejects is an error (a bug of the builder).
  /// Fails only if the builder fails or builds a rejected entry. `outcome`
  /// receives how the entry was found; `warning`, if given, any non-fatal
  /// problem (an unusable entry that was rebuilt, an entry that could not be
  /// written to disk), "" if none.
  Status getOrBuild(const CacheKey &key, const Builder &builder,
                    CacheEntry &entry, CacheOutcome *outcome = nullptr,
                    std::string *warning = nullptr,
                    const Validator &validator = nullptr);

  /// Writes an entry to memory and (atomically) to disk.
  Status store(const CacheKey &key, const CacheEntry &entry);

  /// Forgets the in-memory entries (disk entries stay).
  void clearMemory();

  struct Stats {
    uint64_t memoryHits = 0, diskHits = 0, builds = 0;
    /// Entries found unusable (CacheOutcome::RebuiltCorrupt).
    uint64_t corrupt = 0;
  };
  Stats stats() const;

private:
  /// An entry at the key's path that is present but unusable gives its
  /// reason in `why`; Missing: no file.
  enum class DiskResult { Hit, Missing, Unusable };
  DiskResult readEntry(const std::string &path, const std::string &key,
                       CacheEntry &entry, std::string &why) const;
  Status writeEntry(const std::string &path, const std::string &key,
                    const CacheEntry &entry) const;

  std::string directory_;
  bool diskEnabled_ = false;
  bool trustDirectory_ = false;
  std::string diskProblem_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, CacheEntry> memory_;
  Stats stats_;
};

} // namespace fa::rt

#endif // FA_RUNTIME_KERNELCACHE_H
