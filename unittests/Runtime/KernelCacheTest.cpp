//===- KernelCacheTest.cpp - On-disk and in-memory kernel cache -----------===//

#include "fa/Runtime/KernelCache.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using namespace fa::rt;

namespace {

std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

class RuntimeCache : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fa-runtime-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/nested/cache"; // The cache creates missing parents.
  }
  void TearDown() override {
    nftw(
        root_.c_str(),
        [](const char *path, const struct stat *, int, struct FTW *) {
          return std::remove(path);
        },
        16, FTW_DEPTH | FTW_PHYS);
  }

  /// A builder that counts its calls and produces `payload`.
  KernelCache::Builder builder(const std::string &payload) {
    return [this, payload](std::string &bytes) {
      ++builds_;
      bytes = payload;
      return Status::success();
    };
  }

  std::string root_, dir_;
  int builds_ = 0;
  const CacheKey key_{"kind=forward;seq_q=1024", "fa-compile 0.1 (abc123)",
                      "sm_90"};
};

TEST_F(RuntimeCache, MissThenHits) {
  KernelCache cache(dir_);
  ASSERT_TRUE(cache.diskEnabled());
  std::string bytes;
  CacheOutcome outcome;
  ASSERT_TRUE(cache.getOrBuild(key_, builder("CUBIN-1"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_EQ(bytes, "CUBIN-1");
  EXPECT_EQ(builds_, 1);

  // Same object: from memory.
  bytes.clear();
  ASSERT_TRUE(cache.getOrBuild(key_, builder("OTHER"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::MemoryHit);
  EXPECT_EQ(bytes, "CUBIN-1");
  EXPECT_EQ(builds_, 1);

  // A new object (a new process, say): from disk.
  KernelCache again(dir_);
  ASSERT_TRUE(again.getOrBuild(key_, builder("OTHER"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(bytes, "CUBIN-1");
  EXPECT_EQ(builds_, 1);
  ASSERT_TRUE(again.getOrBuild(key_, builder("OTHER"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::MemoryHit);

  KernelCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.builds, 1u);
  EXPECT_EQ(stats.memoryHits, 1u);
  EXPECT_EQ(again.stats().diskHits, 1u);
}

TEST_F(RuntimeCache, BinaryPayloadsSurvive) {
  std::string payload;
  for (int i = 0; i < 70000; ++i)
    payload += char(i * 131 % 256);
  payload += std::string(3, '\0');
  ASSERT_TRUE(KernelCache(dir_).store(key_, payload).ok());
  std::string bytes;
  CacheOutcome outcome;
  KernelCache cache(dir_);
  ASSERT_TRUE(cache.getOrBuild(key_, builder("X"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(bytes, payload);
}

TEST_F(RuntimeCache, EveryKeyComponentCounts) {
  KernelCache cache(dir_);
  std::string bytes;
  CacheOutcome outcome;
  CacheKey keys[] = {key_, key_, key_, key_};
  keys[1].config += ";causal=0";
  keys[2].compilerVersion = "fa-compile 0.2";
  keys[3].chip = "sm_100";
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(cache
                    .getOrBuild(keys[i], builder("K" + std::to_string(i)),
                                bytes, &outcome)
                    .ok());
    EXPECT_EQ(outcome, CacheOutcome::Built) << i;
    EXPECT_EQ(bytes, "K" + std::to_string(i));
  }
  EXPECT_EQ(builds_, 4);
  EXPECT_EQ(listDirectory(dir_).size(), 4u);
  // Field boundaries are unambiguous: moving text between fields changes
  // the key.
  CacheKey a{"ab", "c", "sm_90"}, b{"a", "bc", "sm_90"};
  EXPECT_NE(a.serialize(), b.serialize());
  EXPECT_NE(cache.entryPath(a), cache.entryPath(b));
}

TEST_F(RuntimeCache, CorruptEntryIsDetectedDeletedAndRebuilt) {
  std::string bytes;
  CacheOutcome outcome;
  ASSERT_TRUE(
      KernelCache(dir_)
          .getOrBuild(key_, builder("GOOD-CUBIN-BYTES"), bytes, &outcome)
          .ok());
  const std::string path = KernelCache(dir_).entryPath(key_);
  const std::string original = readAll(path);
  ASSERT_FALSE(original.empty());

  struct Damage {
    const char *what;
    std::string data;
  };
  std::string flipped = original;
  flipped[flipped.size() - 3] ^= 0x20; // One payload bit.
  std::string badKeyByte = original;
  badKeyByte[original.find("kind=")] = 'K';
  std::string badChecksum = original;
  size_t digits = original.find("fnv1a64 ") + 8;
  badChecksum[digits] = badChecksum[digits] == '0' ? '1' : '0';
  const Damage damages[] = {
      {"payload bit flip", flipped},
      {"key bit flip", badKeyByte},
      {"checksum digit", badChecksum},
      {"truncated payload", original.substr(0, original.size() - 5)},
      {"truncated header", original.substr(0, 30)},
      {"appended bytes", original + "xyz"},
      {"empty file", ""},
      {"garbage", "this is not a cache entry\n"},
      {"bad size field", std::string(original).replace(
                             original.find("payload-bytes ") + 14, 1, "x")},
  };
  for (const Damage &d : damages) {
    writeAll(path, d.data);
    builds_ = 0;
    KernelCache cache(dir_);
    std::string warning;
    ASSERT_TRUE(cache
                    .getOrBuild(key_, builder("GOOD-CUBIN-BYTES"), bytes,
                                &outcome, &warning)
                    .ok());
    EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt) << d.what;
    EXPECT_EQ(builds_, 1) << d.what;
    EXPECT_EQ(bytes, "GOOD-CUBIN-BYTES") << d.what;
    EXPECT_NE(warning.find("corrupt cache entry"), std::string::npos)
        << d.what << ": " << warning;
    EXPECT_EQ(cache.stats().corrupt, 1u) << d.what;
    // The rebuilt entry replaced the corrupt one.
    EXPECT_EQ(readAll(path), original) << d.what;
  }
}

TEST_F(RuntimeCache, AtomicWritesLeaveNoTemporaryFiles) {
  KernelCache cache(dir_);
  std::string bytes;
  for (int i = 0; i < 20; ++i) {
    CacheKey key = key_;
    key.config += ";i=" + std::to_string(i);
    ASSERT_TRUE(
        cache.getOrBuild(key, builder(std::string(1000 + i, 'x')), bytes).ok());
    ASSERT_TRUE(cache.store(key, std::string(2000 + i, 'y')).ok());
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
  ASSERT_TRUE(fresh.getOrBuild(key_, builder("NEW"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_EQ(bytes, "NEW");
}

TEST_F(RuntimeCache, HashCollisionIsAMissNotAWrongKernel) {
  KernelCache cache(dir_);
  CacheKey other = key_;
  other.config = "something else";
  ASSERT_TRUE(cache.store(other, "OTHER-KERNEL").ok());
  // Pretend `other` hashed to key_'s file name.
  ASSERT_EQ(std::rename(cache.entryPath(other).c_str(),
                        cache.entryPath(key_).c_str()),
            0);
  KernelCache fresh(dir_);
  std::string bytes;
  CacheOutcome outcome;
  ASSERT_TRUE(fresh.getOrBuild(key_, builder("MINE"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_EQ(bytes, "MINE");
  EXPECT_EQ(fresh.stats().corrupt, 0u);
}

TEST_F(RuntimeCache, BuilderFailureIsReportedAndNotCached) {
  KernelCache cache(dir_);
  std::string bytes;
  Status s = cache.getOrBuild(
      key_, [](std::string &) { return Status::error("ptxas exploded"); },
      bytes);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "building cache entry: ptxas exploded");
  EXPECT_TRUE(listDirectory(dir_).empty());
  CacheOutcome outcome;
  ASSERT_TRUE(cache.getOrBuild(key_, builder("OK"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
}

TEST_F(RuntimeCache, UnusableDirectoryFallsBackToMemory) {
  std::string file = root_ + "/a-file";
  writeAll(file, "x");
  KernelCache cache(file + "/cache"); // Cannot mkdir below a file.
  EXPECT_FALSE(cache.diskEnabled());
  std::string bytes, warning;
  CacheOutcome outcome;
  ASSERT_TRUE(
      cache.getOrBuild(key_, builder("MEM"), bytes, &outcome, &warning).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_NE(warning.find("memory only"), std::string::npos) << warning;
  ASSERT_TRUE(cache.getOrBuild(key_, builder("X"), bytes, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::MemoryHit);
  EXPECT_EQ(bytes, "MEM");
}

TEST_F(RuntimeCache, UnusableDirectorySaysWhy) {
  std::string file = root_ + "/a-file";
  writeAll(file, "x");
  KernelCache cache(file + "/cache");
  EXPECT_NE(cache.diskProblem().find("Not a directory"), std::string::npos)
      << cache.diskProblem();
  std::string bytes, warning;
  ASSERT_TRUE(
      cache.getOrBuild(key_, builder("MEM"), bytes, nullptr, &warning).ok());
  EXPECT_NE(warning.find("cache directory '" + file +
                         "/cache' is unusable (mkdir(" + file +
                         "/cache): Not a directory)"),
            std::string::npos)
      << warning;
  EXPECT_TRUE(KernelCache(dir_).diskProblem().empty());
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
  writeAll(root_ + "/elsewhere", "FLASHMLIR-KERNEL-CACHE 1\n");
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    cache.clearMemory();
    ASSERT_EQ(c.make(), 0) << std::strerror(errno);
    std::string bytes, warning;
    CacheOutcome outcome;
    ASSERT_TRUE(
        cache.getOrBuild(key_, builder("NEW"), bytes, &outcome, &warning).ok());
    EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
    EXPECT_EQ(bytes, "NEW");
    EXPECT_NE(warning.find(c.what), std::string::npos) << warning;
    // Replaced by a regular entry that the next cache reads back.
    struct stat st;
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    ASSERT_TRUE(
        KernelCache(dir_).getOrBuild(key_, builder("X"), bytes, &outcome).ok());
    EXPECT_EQ(outcome, CacheOutcome::DiskHit);
    EXPECT_EQ(bytes, "NEW");
    ASSERT_EQ(unlink(path.c_str()), 0);
  }
  // A link's target is left alone.
  EXPECT_EQ(readAll(root_ + "/elsewhere"), "FLASHMLIR-KERNEL-CACHE 1\n");
}

TEST_F(RuntimeCache, DirectoryFromEnvironment) {
  const char *oldCache = std::getenv("FLASHMLIR_CACHE_DIR");
  const char *oldHome = std::getenv("HOME");
  std::string savedCache = oldCache ? oldCache : "";
  std::string savedHome = oldHome ? oldHome : "";

  setenv("FLASHMLIR_CACHE_DIR", dir_.c_str(), 1);
  EXPECT_EQ(KernelCache::defaultDirectory(), dir_);
  EXPECT_EQ(KernelCache().directory(), dir_);
  setenv("FLASHMLIR_CACHE_DIR", "", 1);
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(KernelCache::defaultDirectory(), "/home/someone/.cache/flashmlir");

  if (oldCache)
    setenv("FLASHMLIR_CACHE_DIR", savedCache.c_str(), 1);
  else
    unsetenv("FLASHMLIR_CACHE_DIR");
  if (oldHome)
    setenv("HOME", savedHome.c_str(), 1);
  else
    unsetenv("HOME");
}

TEST(RuntimeCacheChecksum, Fnv1a64KnownValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // Chaining equals hashing the concatenation.
  EXPECT_EQ(fnv1a64("bar", fnv1a64("foo")), fnv1a64("foobar"));
}

} // namespace
