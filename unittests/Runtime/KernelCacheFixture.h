//===- KernelCacheFixture.h - Set-up of the kernel cache tests --*- C++ -*-===//

#ifndef FA_UNITTESTS_RUNTIME_KERNELCACHEFIXTURE_H
#define FA_UNITTESTS_RUNTIME_KERNELCACHEFIXTURE_H

#include "fa/Runtime/KernelCache.h"

#include "../ScratchDir.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace fa::rt::test {

inline std::vector<std::string> listDirectory(const std::string &dir) {
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

inline std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void writeAll(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

/// The permission bits of `path` (0 if it does not exist).
inline mode_t modeOf(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

/// Sets (or, for nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      saved_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved_)
      setenv(name_, saved_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
  std::optional<std::string> saved_;
};

/// A scratch directory per test; the cache goes in a missing subdirectory
/// (it creates missing parents).
class RuntimeCache : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_FALSE(root_.empty()); }

  /// A builder that counts its calls and produces `payload` with
  /// `metadata`.
  KernelCache::Builder builder(const std::string &payload,
                               const std::string &metadata = "meta") {
    return [this, payload, metadata](CacheEntry &entry) {
      ++builds_;
      entry = CacheEntry{metadata, payload};
      return Status::success();
    };
  }

  /// The tests decide what the cache trusts, whatever the environment says.
  ScopedEnv trust_{KernelCache::kTrustDirectoryVariable, nullptr};
  fa::test::ScratchDir scratch_{"fa-runtime-cache-test"};
  const std::string root_ = scratch_.path();
  const std::string dir_ = root_ + "/nested/cache";
  int builds_ = 0;
  const CacheKey key_{"kind=forward;seq_q=1024", "fa-compile 0.1 (abc123)",
                      "sm_90"};
};

} // namespace fa::rt::test

#endif // FA_UNITTESTS_RUNTIME_KERNELCACHEFIXTURE_H
