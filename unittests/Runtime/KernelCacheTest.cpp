//===- KernelCacheTest.cpp - On-disk and in-memory kernel cache -----------===//
//
// Entries: hits and misses, the entry format and its SHA-256, damaged,
// foreign and rejected entries. The directory's and files' permissions are
// tested in KernelCacheDirectoryTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "KernelCacheFixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

TEST_F(RuntimeCache, MissThenHits) {
  KernelCache cache(dir_);
  ASSERT_TRUE(cache.diskEnabled()) << cache.diskProblem();
  CacheEntry entry;
  CacheOutcome outcome;
  ASSERT_TRUE(cache.getOrBuild(key_, builder("CUBIN-1"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_EQ(entry, (CacheEntry{"meta", "CUBIN-1"}));
  EXPECT_EQ(builds_, 1);

  // Same object: from memory.
  entry = {};
  ASSERT_TRUE(cache.getOrBuild(key_, builder("OTHER"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::MemoryHit);
  EXPECT_EQ(entry.payload, "CUBIN-1");
  EXPECT_EQ(builds_, 1);

  // A new object (a new process, say): from disk.
  KernelCache again(dir_);
  ASSERT_TRUE(again.getOrBuild(key_, builder("OTHER"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(entry, (CacheEntry{"meta", "CUBIN-1"}));
  EXPECT_EQ(builds_, 1);
  ASSERT_TRUE(again.getOrBuild(key_, builder("OTHER"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::MemoryHit);

  KernelCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.builds, 1u);
  EXPECT_EQ(stats.memoryHits, 1u);
  EXPECT_EQ(again.stats().diskHits, 1u);
}

TEST_F(RuntimeCache, BinaryMetadataAndPayloadsSurvive) {
  std::string payload;
  for (int i = 0; i < 70000; ++i)
    payload += char(i * 131 % 256);
  payload += std::string(3, '\0');
  const CacheEntry stored{std::string("a\0b\nc", 5), payload};
  ASSERT_TRUE(KernelCache(dir_).store(key_, stored).ok());
  CacheEntry entry;
  CacheOutcome outcome;
  KernelCache cache(dir_);
  ASSERT_TRUE(cache.getOrBuild(key_, builder("X"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(entry, stored);
  // Empty metadata and payload are entries too.
  ASSERT_TRUE(cache.store(key_, CacheEntry{}).ok());
  ASSERT_TRUE(
      KernelCache(dir_).getOrBuild(key_, builder("X"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(entry, CacheEntry{});
}

TEST_F(RuntimeCache, EveryKeyComponentCounts) {
  KernelCache cache(dir_);
  CacheEntry entry;
  CacheOutcome outcome;
  CacheKey keys[] = {key_, key_, key_, key_};
  keys[1].config += ";causal=0";
  keys[2].compilerVersion = "fa-compile 0.2";
  keys[3].chip = "sm_100";
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(cache
                    .getOrBuild(keys[i], builder("K" + std::to_string(i)),
                                entry, &outcome)
                    .ok());
    EXPECT_EQ(outcome, CacheOutcome::Built) << i;
    EXPECT_EQ(entry.payload, "K" + std::to_string(i));
  }
  EXPECT_EQ(builds_, 4);
  EXPECT_EQ(listDirectory(dir_).size(), 4u);
  // Field boundaries are unambiguous: moving text between fields changes
  // the key.
  CacheKey a{"ab", "c", "sm_90"}, b{"a", "bc", "sm_90"};
  EXPECT_NE(a.serialize(), b.serialize());
  EXPECT_NE(cache.entryPath(a), cache.entryPath(b));
}

/// The digest is pinned: this value was computed independently (Python's
/// hashlib over the magic line and the three length-prefixed fields), so
/// the format documented in KernelCache.h is the one written.
TEST(RuntimeCacheDigest, CoversKeyMetadataAndPayloadUnambiguously) {
  const std::string key = CacheKey{"k", "v", "sm_90"}.serialize();
  EXPECT_EQ(entryDigest(key, CacheEntry{"meta", "payload"}),
            "1e990f9cb6f47c6c4a15dca48d671684f290136be3056eae4b3e7d5e4928d871");
  const std::string base = entryDigest(key, CacheEntry{"meta", "payload"});
  EXPECT_NE(entryDigest(key + "x", CacheEntry{"meta", "payload"}), base);
  EXPECT_NE(entryDigest(key, CacheEntry{"metb", "payload"}), base);
  EXPECT_NE(entryDigest(key, CacheEntry{"meta", "payloae"}), base);
  // Bytes moved across a field boundary change it.
  EXPECT_NE(entryDigest(key, CacheEntry{"metap", "ayload"}), base);
  EXPECT_NE(entryDigest(key + "m", CacheEntry{"eta", "payload"}), base);
}

TEST_F(RuntimeCache, DamagedEntryIsDetectedDeletedAndRebuilt) {
  CacheEntry entry;
  CacheOutcome outcome;
  ASSERT_TRUE(KernelCache(dir_)
                  .getOrBuild(key_, builder("GOOD-CUBIN-BYTES", "GOOD-META"),
                              entry, &outcome)
                  .ok());
  const std::string path = KernelCache(dir_).entryPath(key_);
  const std::string original = readAll(path);
  ASSERT_FALSE(original.empty());

  struct Damage {
    const char *what;
    std::string data;
    const char *why;
  };
  auto edit = [&](const std::string &at, size_t offset, char to) {
    std::string copy = original;
    size_t pos = original.find(at);
    EXPECT_NE(pos, std::string::npos) << at;
    copy[pos + offset] = copy[pos + offset] == to ? char(to + 1) : to;
    return copy;
  };
  std::string flipped = original;
  flipped[flipped.size() - 3] ^= 0x20; // One payload bit.
  const Damage damages[] = {
      {"payload bit flip", flipped, "sha256 mismatch"},
      {"metadata byte", edit("GOOD-META", 0, 'X'), "sha256 mismatch"},
      {"key byte", edit("kind=", 0, 'K'), "sha256 mismatch"},
      {"digest digit", edit("sha256 ", 7, '0'), "sha256 mismatch"},
      // A byte moved from the metadata to the payload: the sizes still add
      // up, the digest does not.
      {"field boundary",
       std::string(original).replace(
           original.find("metadata-bytes 9\npayload-bytes 16"), 33,
           "metadata-bytes 8\npayload-bytes 17"),
       "sha256 mismatch"},
      {"metadata size",
       std::string(original).replace(original.find("metadata-bytes 9"), 16,
                                     "metadata-bytes 8"),
       "size mismatch"},
      {"truncated payload", original.substr(0, original.size() - 5),
       "size mismatch"},
      {"truncated header", original.substr(0, 30), "bad header"},
      {"appended bytes", original + "xyz", "size mismatch"},
      {"empty file", "", "bad magic"},
      {"garbage", "this is not a cache entry\n", "bad magic"},
      {"bad size field", edit("payload-bytes ", 14, 'x'), "bad header"},
      {"short digest", edit("sha256 ", 70, '\n'), "bad header"},
      {"upper-case digest", edit("sha256 ", 7, 'A'), "bad header"},
  };
  for (const Damage &d : damages) {
    SCOPED_TRACE(d.what);
    writeAll(path, d.data);
    builds_ = 0;
    KernelCache cache(dir_);
    std::string warning;
    ASSERT_TRUE(cache
                    .getOrBuild(key_, builder("GOOD-CUBIN-BYTES", "GOOD-META"),
                                entry, &outcome, &warning)
                    .ok());
    EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
    EXPECT_EQ(builds_, 1);
    EXPECT_EQ(entry, (CacheEntry{"GOOD-META", "GOOD-CUBIN-BYTES"}));
    EXPECT_TRUE(
        contains(warning, "unusable cache entry '" + path + "' (" + d.why))
        << warning;
    EXPECT_TRUE(contains(warning, "deleted and rebuilt")) << warning;
    EXPECT_EQ(cache.stats().corrupt, 1u);
    // The rebuilt entry replaced the damaged one.
    EXPECT_EQ(readAll(path), original);
  }
}

/// Entries written by the FNV-1a format (1) or with `key = value` metadata
/// (2) are named as such and rebuilt, not taken for garbage or, worse, read.
TEST_F(RuntimeCache, EntryOfAnOlderFormatIsRebuiltWithAWarning) {
  KernelCache cache(dir_);
  const std::string path = cache.entryPath(key_);
  for (const char *old :
       {"FLASHMLIR-KERNEL-CACHE 1\nkey-bytes 3\npayload-bytes 1\n"
        "fnv1a64 0123456789abcdef\n\nkeyX",
        "FLASHMLIR-KERNEL-CACHE 2\nkey-bytes 3\nmetadata-bytes 14\n"
        "payload-bytes 1\nsha256 "
        "0000000000000000000000000000000000000000000000000000000000000000\n\n"
        "keykind = forward\nX"}) {
    writeAll(path, old);
    CacheEntry entry;
    CacheOutcome outcome;
    std::string warning;
    ASSERT_TRUE(
        cache.getOrBuild(key_, builder("NEW"), entry, &outcome, &warning).ok());
    EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
    const std::string version(old, std::strchr(old, '\n'));
    EXPECT_TRUE(
        contains(warning, "an entry of another cache format (" + version + ")"))
        << warning;
    cache.clearMemory();
  }
}

/// With SHA-256 file names two keys never share a file: another key's entry
/// at this path was copied or renamed there. It is rejected, loudly (it was
/// a silent miss).
TEST_F(RuntimeCache, EntryCopiedUnderAnotherKeyIsRejected) {
  KernelCache cache(dir_);
  CacheKey other = key_;
  other.config = "kind=forward;seq_q=999";
  ASSERT_TRUE(cache.store(other, CacheEntry{"seq_q = 999", "FOREIGN"}).ok());
  ASSERT_EQ(std::rename(cache.entryPath(other).c_str(),
                        cache.entryPath(key_).c_str()),
            0);
  KernelCache fresh(dir_);
  CacheEntry entry;
  CacheOutcome outcome;
  std::string warning;
  ASSERT_TRUE(
      fresh.getOrBuild(key_, builder("MINE"), entry, &outcome, &warning).ok());
  EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
  EXPECT_EQ(entry.payload, "MINE");
  EXPECT_TRUE(contains(warning, "it holds the entry of another key"))
      << warning;
  EXPECT_EQ(fresh.stats().corrupt, 1u);
}

/// An entry with a valid digest whose metadata the caller rejects (forged
/// with a recomputed hash, or of a buggy build) is a miss with a warning
/// and a rebuild, in memory and on disk; a built entry the validator
/// rejects is an error and is not stored.
TEST_F(RuntimeCache, ValidatorRejectsForgedEntries) {
  const CacheEntry forged{R"({"seq_q": 999, "grid": [1, 1, 1]})", "OTHER-PTX"};
  auto validator = [](const CacheEntry &entry) -> std::string {
    return entry.metadata == R"({"seq_q": 100})"
               ? ""
               : "seq_q is 999, the request has 100";
  };
  KernelCache cache(dir_);
  ASSERT_TRUE(cache.store(key_, forged).ok()); // Memory and disk.
  CacheEntry entry;
  CacheOutcome outcome;
  std::string warning;
  ASSERT_TRUE(cache
                  .getOrBuild(key_, builder("PTX", R"({"seq_q": 100})"), entry,
                              &outcome, &warning, validator)
                  .ok());
  EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
  EXPECT_EQ(entry, (CacheEntry{R"({"seq_q": 100})", "PTX"}));
  EXPECT_TRUE(contains(warning, "the in-memory entry does not match the "
                                "request (seq_q is 999, the request has 100)"))
      << warning;
  EXPECT_TRUE(contains(warning, "(it does not match the request: seq_q is "
                                "999, the request has 100): deleted and "
                                "rebuilt"))
      << warning;

  // On disk only, as another process would find it.
  ASSERT_TRUE(cache.store(key_, forged).ok());
  builds_ = 0;
  KernelCache fresh(dir_);
  ASSERT_TRUE(fresh
                  .getOrBuild(key_, builder("PTX", R"({"seq_q": 100})"), entry,
                              &outcome, &warning, validator)
                  .ok());
  EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
  EXPECT_EQ(builds_, 1);
  EXPECT_EQ(entry.payload, "PTX");
  EXPECT_TRUE(contains(warning, "does not match the request")) << warning;
  ASSERT_TRUE(
      KernelCache(dir_)
          .getOrBuild(key_, builder("X"), entry, &outcome, &warning, validator)
          .ok());
  EXPECT_EQ(outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(warning, "");

  // A builder that produces a rejected entry.
  KernelCache other(root_ + "/other");
  Status s = other.getOrBuild(key_, builder("PTX", "seq_q = 7"), entry,
                              &outcome, nullptr, validator);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "building cache entry: the built entry does not "
                         "match the request: seq_q is 999, the request has "
                         "100");
  EXPECT_TRUE(listDirectory(root_ + "/other").empty());
}

/// A reason can quote a hostile entry's bytes: the warning carries them as
/// printable ASCII only (no terminal escape sequences), and not endlessly.
TEST_F(RuntimeCache, WarningsQuoteEntriesPrintably) {
  KernelCache cache(dir_);
  ASSERT_TRUE(cache.store(key_, {"compiler = \x1b[2J\x9b", "X"}).ok());
  auto quoting = [](const CacheEntry &entry) -> std::string {
    return entry.metadata == "meta" ? ""
                                    : entry.metadata + std::string(1000, '.');
  };
  CacheEntry entry;
  std::string warning;
  ASSERT_TRUE(
      KernelCache(dir_)
          .getOrBuild(key_, builder("NEW"), entry, nullptr, &warning, quoting)
          .ok());
  EXPECT_TRUE(contains(warning, "(it does not match the request: compiler = "
                                "?[2J?...."))
      << warning;
  EXPECT_TRUE(contains(warning, "...): deleted and rebuilt")) << warning;
  EXPECT_LT(warning.size(), 600u);
  for (char c : warning)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
  // A format line with something other than a version number is no format.
  writeAll(cache.entryPath(key_), "FLASHMLIR-KERNEL-CACHE \x1b[2J\n");
  ASSERT_TRUE(KernelCache(dir_)
                  .getOrBuild(key_, builder("NEW"), entry, nullptr, &warning)
                  .ok());
  EXPECT_TRUE(contains(warning, "(bad magic)")) << warning;
}

TEST_F(RuntimeCache, AtomicWritesLeaveNoTemporaryFiles) {
  KernelCache cache(dir_);
  CacheEntry entry;
  for (int i = 0; i < 20; ++i) {
    CacheKey key = key_;
    key.config += ";i=" + std::to_string(i);
    ASSERT_TRUE(
        cache.getOrBuild(key, builder(std::string(1000 + i, 'x')), entry).ok());
    ASSERT_TRUE(cache.store(key, {"m", std::string(2000 + i, 'y')}).ok());
  }
  std::vector<std::string> names = listDirectory(dir_);
  EXPECT_EQ(names.size(), 20u);
  for (const std::string &name : names) {
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
    EXPECT_EQ(name.substr(name.size() - 9), ".fakernel") << name;
  }
  // A stale temporary file of a crashed writer is ignored.
  writeAll(cache.entryPath(key_) + ".tmp.1234.0", "half-written");
  CacheOutcome outcome;
  KernelCache fresh(dir_);
  ASSERT_TRUE(fresh.getOrBuild(key_, builder("NEW"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_EQ(entry.payload, "NEW");
}

TEST_F(RuntimeCache, BuilderFailureIsReportedAndNotCached) {
  KernelCache cache(dir_);
  CacheEntry entry;
  Status s = cache.getOrBuild(
      key_, [](CacheEntry &) { return Status::error("ptxas exploded"); },
      entry);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "building cache entry: ptxas exploded");
  EXPECT_TRUE(listDirectory(dir_).empty());
  CacheOutcome outcome;
  ASSERT_TRUE(cache.getOrBuild(key_, builder("OK"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
}

/// Something other than a regular file at an entry's path is rebuilt over,
/// never read: a FIFO blocked the open forever, a link to /dev/zero read
/// until std::bad_alloc.
TEST_F(RuntimeCache, SpecialFilesAreNeverRead) {
  KernelCache cache(dir_);
  const std::string path = cache.entryPath(key_);
  struct Case {
    const char *what;
    std::function<int()> make;
  };
  const Case cases[] = {
      {"not a regular file", [&] { return mkfifo(path.c_str(), 0644); }},
      {"a symbolic link", [&] { return symlink("/dev/zero", path.c_str()); }},
      {"a symbolic link",
       [&] { return symlink((root_ + "/elsewhere").c_str(), path.c_str()); }},
      {"larger than 1073741824 bytes",
       [&] {
         // Sparse: no disk space, but past the size cap.
         writeAll(path, "");
         return truncate(path.c_str(), KernelCache::kMaxEntryBytes + 1);
       }},
  };
  writeAll(root_ + "/elsewhere", "FLASHMLIR-KERNEL-CACHE 2\n");
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    cache.clearMemory();
    ASSERT_EQ(c.make(), 0) << std::strerror(errno);
    CacheEntry entry;
    std::string warning;
    CacheOutcome outcome;
    ASSERT_TRUE(
        cache.getOrBuild(key_, builder("NEW"), entry, &outcome, &warning).ok());
    EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
    EXPECT_EQ(entry.payload, "NEW");
    EXPECT_TRUE(contains(warning, c.what)) << warning;
    // Replaced by a regular entry that the next cache reads back.
    struct stat st;
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    ASSERT_TRUE(
        KernelCache(dir_).getOrBuild(key_, builder("X"), entry, &outcome).ok());
    EXPECT_EQ(outcome, CacheOutcome::DiskHit);
    EXPECT_EQ(entry.payload, "NEW");
    ASSERT_EQ(unlink(path.c_str()), 0);
  }
  // A link's target is left alone.
  EXPECT_EQ(readAll(root_ + "/elsewhere"), "FLASHMLIR-KERNEL-CACHE 2\n");
}

TEST_F(RuntimeCache, DirectoryFromEnvironment) {
  ScopedEnv cacheDir("FLASHMLIR_CACHE_DIR", dir_.c_str());
  EXPECT_EQ(KernelCache::defaultDirectory(), dir_);
  EXPECT_EQ(KernelCache().directory(), dir_);
  ScopedEnv noCacheDir("FLASHMLIR_CACHE_DIR", "");
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(KernelCache::defaultDirectory(), "/home/someone/.cache/flashmlir");
}

} // namespace
