//===- CApiQuantizeTest.cpp - FA_QUANTIZE through the C API, no GPU -------===//
//
// A quantization config compiles (to PTX, unloaded) into a kernel of its
// own kind whose workspace and launch are checked like an attention's:
// every bad argument fails with the documented status and a message.
//
//===----------------------------------------------------------------------===//

#include "fa-c/FlashMLIR.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

bool lastErrorContains(const std::string &part) {
  return std::string(faGetLastError()).find(part) != std::string::npos;
}

faConfig quantizeConfig() {
  faConfig c;
  EXPECT_EQ(faConfigInit(&c), FA_SUCCESS);
  EXPECT_EQ(c.rotate, 0);
  c.batch = 2;
  c.heads_q = 4;
  c.heads_kv = 2;
  c.seq_q = 100;
  c.head_dim = 128;
  c.rotate = 1;
  c.rotation_seed = 12345;
  c.chip = "sm_90a";
  return c;
}

TEST(CApiQuantize, CompilesAKernelOfItsKind) {
  faConfig c = quantizeConfig();
  ASSERT_EQ(faValidateConfig(&c, FA_QUANTIZE), FA_SUCCESS) << faGetLastError();
  faKernel kernel = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_QUANTIZE, &kernel), FA_SUCCESS)
      << faGetLastError();
  EXPECT_EQ(faKernelDirection(kernel), FA_QUANTIZE);
  std::string meta = faKernelMetadata(kernel);
  EXPECT_NE(meta.find("\"kind\": \"quantize\","), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"rotation_seed\": 12345,"), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"groups\": 2,"), std::string::npos) << meta;
  uint64_t bytes = 0;
  ASSERT_EQ(faQuantizeWorkspaceBytes(kernel, &bytes), FA_SUCCESS);
  EXPECT_EQ(bytes, 2u * 2u * 4u);
  // A valid call passes validation and stops at the missing code.
  EXPECT_EQ(faQuantize(kernel, 0x10000000, 0x20000000, 0x30000000, 0x40000000,
                       0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded")) << faGetLastError();
  EXPECT_EQ(faQuantize(kernel, 0, 0x20000000, 0x30000000, 0x40000000, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("x")) << faGetLastError();
  EXPECT_EQ(faQuantize(kernel, 0x10000000, 0x20000000, 0x30000000, 0, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("workspace")) << faGetLastError();
  EXPECT_EQ(faQuantizeWorkspaceBytes(kernel, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
  // Attention calls on it, and quantize calls on an attention kernel, are
  // refused by kind.
  EXPECT_EQ(faAttentionForward(kernel, 1, 2, 3, 4, 5, nullptr, 0),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("not a forward kernel")) << faGetLastError();
  faConfig attention;
  ASSERT_EQ(faConfigInit(&attention), FA_SUCCESS);
  faKernel forward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&attention, FA_FORWARD, &forward), FA_SUCCESS);
  EXPECT_EQ(faQuantize(forward, 1, 2, 3, 4, 0), FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("faQuantize: not a quantize kernel"))
      << faGetLastError();
  EXPECT_EQ(faQuantizeWorkspaceBytes(forward, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);
  EXPECT_EQ(faKernelDestroy(kernel), FA_SUCCESS);
}

TEST(CApiQuantize, BadConfigs) {
  struct Case {
    void (*edit)(faConfig &);
    faStatus status;
    const char *message;
  };
  const Case cases[] = {
      {[](faConfig &c) { c.dtype = FA_DTYPE_E4M3; }, FA_ERROR_INVALID_ARGUMENT,
       "FA_QUANTIZE quantizes FA_DTYPE_BF16 (0) or FA_DTYPE_F16 (1)"},
      {[](faConfig &c) { c.rotate = 2; }, FA_ERROR_INVALID_ARGUMENT,
       "rotate must be 0 or 1, got 2"},
      {[](faConfig &c) { c.seq_q = 0; }, FA_ERROR_INVALID_ARGUMENT,
       "seq_q must be positive, got 0"},
      {[](faConfig &c) { c.heads_kv = 3; }, FA_ERROR_COMPILE,
       "must be a multiple of the descale's blocks"},
      {[](faConfig &c) { c.head_dim = 96; }, FA_ERROR_COMPILE,
       "power of two"},
      {[](faConfig &c) { c.head_dim = 32; }, FA_ERROR_COMPILE,
       "head dims of 64 to 256"},
      {[](faConfig &c) { c.chip = "sm_80"; }, FA_ERROR_COMPILE,
       "e4m3 conversion needs sm_89 or later"},
  };
  for (const Case &k : cases) {
    faConfig c = quantizeConfig();
    k.edit(c);
    EXPECT_EQ(faValidateConfig(&c, FA_QUANTIZE), k.status) << k.message;
    EXPECT_TRUE(lastErrorContains(k.message))
        << k.message << " / " << faGetLastError();
  }
  faConfig c = quantizeConfig();
  EXPECT_EQ(faValidateConfig(&c, faDirection(3)), FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("FA_QUANTIZE (2)")) << faGetLastError();
}

} // namespace
