//===- JitTestFixture.h - Shared set-up of the JIT tests --------*- C++ -*-===//

#ifndef FA_UNITTESTS_JIT_JITTESTFIXTURE_H
#define FA_UNITTESTS_JIT_JITTESTFIXTURE_H

#include "fa/Jit/Jit.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fa::jit::test {

using mlir::fa::AttentionConfig;

inline bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// A small GQA problem with Nq != Nk: compiles in about a second.
inline AttentionConfig smallConfig() {
  AttentionConfig c;
  c.dtype = "bf16";
  c.batch = 1;
  c.headsQ = 4;
  c.headsKV = 2;
  c.seqQ = 100;
  c.seqKV = 130;
  c.headDim = c.headDimV = 64;
  c.causal = true;
  return c;
}

class JitTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fa-jit-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    nftw(
        dir_.c_str(),
        [](const char *path, const struct stat *, int, struct FTW *) {
          return std::remove(path);
        },
        16, FTW_DEPTH | FTW_PHYS);
  }
  int entries() const {
    int n = 0;
    if (DIR *d = opendir(dir_.c_str())) {
      while (dirent *e = readdir(d))
        n += std::string(e->d_name).find(".fakernel") != std::string::npos;
      closedir(d);
    }
    return n;
  }

  std::string dir_;
  rt::Driver noDriver_{"/nonexistent/libcuda.so.1"};
  const JitOptions ptxFor90_{"sm_90", ImageFormat::PTX};
};

} // namespace fa::jit::test

#endif // FA_UNITTESTS_JIT_JITTESTFIXTURE_H
