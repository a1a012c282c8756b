//===- JitTestFixture.h - Shared set-up of the JIT tests --------*- C++ -*-===//

#ifndef FA_UNITTESTS_JIT_JITTESTFIXTURE_H
#define FA_UNITTESTS_JIT_JITTESTFIXTURE_H

#include "fa/Jit/Jit.h"

#include "../ScratchDir.h"

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
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  int entries() const {
    int n = 0;
    if (DIR *d = opendir(dir_.c_str())) {
      while (dirent *e = readdir(d))
        n += std::string(e->d_name).find(".fakernel") != std::string::npos;
      closedir(d);
    }
    return n;
  }

  fa::test::ScratchDir scratch_{"fa-jit-test"};
  const std::string dir_ = scratch_.path();
  rt::Driver noDriver_{"/nonexistent/libcuda.so.1"};
  const JitOptions ptxFor90_{"sm_90", ImageFormat::PTX};
};

} // namespace fa::jit::test

#endif // FA_UNITTESTS_JIT_JITTESTFIXTURE_H
