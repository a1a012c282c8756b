//===- ScratchDir.h - A test's own temporary directory ----------*- C++ -*-===//
//
// What the unit tests that write files share: a fresh directory under /tmp,
// removed with everything in it when the test ends.
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_SCRATCHDIR_H
#define FA_UNITTESTS_SCRATCHDIR_H

#include <ftw.h>
#include <stdlib.h>

#include <cstdio>
#include <string>
#include <vector>

namespace fa::test {

class ScratchDir {
public:
  /// /tmp/<prefix>-XXXXXX; path() is empty if it could not be made.
  explicit ScratchDir(const std::string &prefix) {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()))
      path_ = buffer.data();
  }
  ~ScratchDir() {
    if (path_.empty())
      return;
    nftw(
        path_.c_str(),
        [](const char *path, const struct stat *, int, struct FTW *) {
          return std::remove(path);
        },
        16, FTW_DEPTH | FTW_PHYS);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  const std::string &path() const { return path_; }

private:
  std::string path_;
};

} // namespace fa::test

#endif // FA_UNITTESTS_SCRATCHDIR_H
