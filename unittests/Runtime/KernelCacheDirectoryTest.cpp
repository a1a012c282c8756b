//===- KernelCacheDirectoryTest.cpp - Who may write the kernel cache ------===//
//
// The cache directory is created private (0700), entries owner-only (0600);
// a directory someone else can write, or an entry someone else wrote, is not
// used unless $FLASHMLIR_CACHE_TRUST_DIR says so; a directory that cannot be
// created or written, or a full disk, is reported, never fatal.
//
//===----------------------------------------------------------------------===//

#include "KernelCacheFixture.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using namespace fa::rt;
using namespace fa::rt::test;

namespace {

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// A user and group that are not the test's (nobody, nogroup).
constexpr uid_t kOtherUser = 65534;
constexpr gid_t kOtherGroup = 65534;

TEST_F(RuntimeCache, CreatesAPrivateDirectoryAndOwnerOnlyEntries) {
  // Whatever the umask allows, the directory is 0700 and entries are 0600.
  mode_t oldMask = umask(0);
  KernelCache cache(dir_);
  CacheEntry entry;
  Status built = cache.getOrBuild(key_, builder("X"), entry);
  umask(oldMask);
  ASSERT_TRUE(built.ok()) << built.message();
  ASSERT_TRUE(cache.diskEnabled()) << cache.diskProblem();
  EXPECT_EQ(modeOf(dir_), 0700u);
  EXPECT_EQ(modeOf(root_ + "/nested"), 0700u); // A parent it created.
  EXPECT_EQ(modeOf(cache.entryPath(key_)), 0600u);
  // A directory of an older version (0755) is still the user's alone to
  // write: accepted.
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  EXPECT_TRUE(KernelCache(dir_).diskEnabled());
}

/// Anyone who can write the directory can plant kernels: a group- or
/// world-writable one is refused (memory only, with the reason), and what
/// lies in it is never read.
TEST_F(RuntimeCache, GroupOrWorldWritableDirectoryIsRefused) {
  ASSERT_TRUE(KernelCache(dir_).store(key_, {"meta", "PLANTED"}).ok());
  for (mode_t mode : {0777, 0770, 0703, 01777}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(chmod(dir_.c_str(), mode), 0);
    KernelCache cache(dir_);
    EXPECT_FALSE(cache.diskEnabled());
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", unsigned(mode));
    EXPECT_TRUE(contains(cache.diskProblem(),
                         "'" + dir_ +
                             "' is writable by its group or by others "
                             "(mode " +
                             octal + ")"))
        << cache.diskProblem();
    EXPECT_TRUE(contains(cache.diskProblem(), "FLASHMLIR_CACHE_TRUST_DIR=1"))
        << cache.diskProblem();
    CacheEntry entry;
    CacheOutcome outcome;
    std::string warning;
    ASSERT_TRUE(
        cache.getOrBuild(key_, builder("NEW"), entry, &outcome, &warning).ok());
    EXPECT_EQ(outcome, CacheOutcome::Built);
    EXPECT_EQ(entry.payload, "NEW");
    EXPECT_TRUE(contains(warning, "cache directory '" + dir_ +
                                      "' is unusable ('" + dir_ +
                                      "' is writable by its group"))
        << warning;
    EXPECT_EQ(listDirectory(dir_).size(), 1u); // Nothing written.
  }

  // The explicit opt-out uses it as it is.
  ScopedEnv trust(KernelCache::kTrustDirectoryVariable, "1");
  KernelCache trusting(dir_);
  EXPECT_TRUE(trusting.diskEnabled()) << trusting.diskProblem();
  CacheEntry entry;
  CacheOutcome outcome;
  ASSERT_TRUE(trusting.getOrBuild(key_, builder("NEW"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::DiskHit);
  EXPECT_EQ(entry.payload, "PLANTED");
  ScopedEnv distrust(KernelCache::kTrustDirectoryVariable, "0");
  EXPECT_FALSE(KernelCache(dir_).diskEnabled());
}

TEST_F(RuntimeCache, DirectoryOwnedByAnotherUserIsRefused) {
  std::string theirs = root_ + "/theirs";
  uid_t owner = 0;
  if (geteuid() == 0) {
    ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
    ASSERT_EQ(chown(theirs.c_str(), kOtherUser, kOtherGroup), 0);
    owner = kOtherUser;
  } else {
    theirs = "/"; // root's, and not writable by others.
  }
  KernelCache cache(theirs);
  EXPECT_FALSE(cache.diskEnabled());
  EXPECT_TRUE(contains(
      cache.diskProblem(),
      "'" + theirs + "' is owned by uid " + std::to_string(owner) +
          ", not by the current user (uid " + std::to_string(geteuid()) + ")"))
      << cache.diskProblem();
  EXPECT_TRUE(contains(cache.diskProblem(), "plant kernels"))
      << cache.diskProblem();
}

/// In a private directory only its owner creates files, but one written
/// before it became private (or by root) is not the user's: rejected and
/// replaced.
TEST_F(RuntimeCache, EntryOwnedByAnotherUserIsRejected) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to give a file away";
  ASSERT_TRUE(KernelCache(dir_).store(key_, {"meta", "THEIRS"}).ok());
  const std::string path = KernelCache(dir_).entryPath(key_);
  ASSERT_EQ(chown(path.c_str(), kOtherUser, kOtherGroup), 0);
  {
    ScopedEnv trust(KernelCache::kTrustDirectoryVariable, "1");
    CacheEntry entry;
    CacheOutcome outcome;
    ASSERT_TRUE(
        KernelCache(dir_).getOrBuild(key_, builder("X"), entry, &outcome).ok());
    EXPECT_EQ(outcome, CacheOutcome::DiskHit);
    EXPECT_EQ(entry.payload, "THEIRS");
  }
  CacheEntry entry;
  CacheOutcome outcome;
  std::string warning;
  KernelCache cache(dir_);
  ASSERT_TRUE(
      cache.getOrBuild(key_, builder("MINE"), entry, &outcome, &warning).ok());
  EXPECT_EQ(outcome, CacheOutcome::RebuiltCorrupt);
  EXPECT_EQ(entry.payload, "MINE");
  EXPECT_TRUE(contains(warning, "(owned by uid 65534, not by the current "
                                "user (uid 0)): deleted and rebuilt"))
      << warning;
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST_F(RuntimeCache, UncreatableDirectoryFallsBackToMemory) {
  std::string file = root_ + "/a-file";
  writeAll(file, "x");
  KernelCache cache(file + "/cache"); // Cannot mkdir below a file.
  EXPECT_FALSE(cache.diskEnabled());
  EXPECT_TRUE(contains(cache.diskProblem(), "Not a directory"))
      << cache.diskProblem();
  CacheEntry entry;
  std::string warning;
  CacheOutcome outcome;
  ASSERT_TRUE(
      cache.getOrBuild(key_, builder("MEM"), entry, &outcome, &warning).ok());
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_TRUE(contains(warning, "cache directory '" + file +
                                    "/cache' is unusable (mkdir(" + file +
                                    "/cache): Not a directory); entry kept "
                                    "in memory only"))
      << warning;
  ASSERT_TRUE(cache.getOrBuild(key_, builder("X"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::MemoryHit);
  EXPECT_EQ(entry.payload, "MEM");
  EXPECT_TRUE(KernelCache(dir_).diskProblem().empty());
}

TEST_F(RuntimeCache, UnwritableDirectoryIsAWarning) {
  if (geteuid() == 0)
    GTEST_SKIP() << "root writes any directory";
  KernelCache cache(dir_);
  ASSERT_EQ(chmod(dir_.c_str(), 0500), 0);
  CacheEntry entry;
  std::string warning;
  CacheOutcome outcome;
  Status s = cache.getOrBuild(key_, builder("X"), entry, &outcome, &warning);
  chmod(dir_.c_str(), 0700);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_TRUE(contains(warning, "cannot create '")) << warning;
  EXPECT_TRUE(contains(warning, "Permission denied")) << warning;
}

/// A write that fails half-way (a full disk; here the file size limit, which
/// fails the same write(2) with EFBIG) is a warning, and leaves neither the
/// temporary file nor an entry behind.
TEST_F(RuntimeCache, FailedWriteIsAWarningAndLeavesNothing) {
  KernelCache cache(dir_);
  ASSERT_TRUE(cache.diskEnabled());
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit small = old;
  small.rlim_cur = 1000;
  auto oldHandler = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  CacheEntry entry;
  std::string warning;
  CacheOutcome outcome;
  Status s = cache.getOrBuild(key_, builder(std::string(100000, 'x')), entry,
                              &outcome, &warning);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, oldHandler);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(outcome, CacheOutcome::Built);
  EXPECT_EQ(entry.payload.size(), 100000u);
  EXPECT_TRUE(
      contains(warning, "cannot write '" + cache.entryPath(key_) + ".tmp."))
      << warning;
  EXPECT_TRUE(contains(warning, std::strerror(EFBIG))) << warning;
  EXPECT_TRUE(listDirectory(dir_).empty());
  // The kernel is still served, from memory.
  ASSERT_TRUE(cache.getOrBuild(key_, builder("Y"), entry, &outcome).ok());
  EXPECT_EQ(outcome, CacheOutcome::MemoryHit);
}

} // namespace
