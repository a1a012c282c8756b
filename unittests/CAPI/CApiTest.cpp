//===- CApiTest.cpp - The C API on bad handles and arguments, no GPU ------===//
//
// libFlashMLIR.so as a C caller sees it. Without a GPU (CI) nothing loads
// or launches; every call on a bad handle or argument must fail with the
// documented status and a message, never crash (the sanitizer build runs
// these too). Regression tests for what test/fuzz/CApiFuzzer and
// ConfigFuzzer found live here.
//
//===----------------------------------------------------------------------===//

#include "fa-c/FlashMLIR.h"

#include "../ScratchDir.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <ftw.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace {

bool lastErrorContains(const std::string &part) {
  return std::string(faGetLastError()).find(part) != std::string::npos;
}

faConfig defaultConfig() {
  faConfig c;
  EXPECT_EQ(faConfigInit(&c), FA_SUCCESS);
  return c;
}

/// A context whose cache is a fresh temporary directory.
class CApiTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.empty());
    ASSERT_EQ(faContextCreate(dir_.c_str(), &context_), FA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(faContextDestroy(context_), FA_SUCCESS);
  }

  fa::test::ScratchDir scratch_{"fa-capi-test"};
  const std::string dir_ = scratch_.path();
  faContext context_ = nullptr;
};

TEST(CApi, StatusStringsAndVersions) {
  EXPECT_STREQ(faStatusString(FA_ERROR_LAUNCH), "FA_ERROR_LAUNCH");
  EXPECT_STREQ(faStatusString(static_cast<faStatus>(-1)), "FA_ERROR_UNKNOWN");
  EXPECT_EQ(faGetApiVersion(), FA_CAPI_VERSION);
  EXPECT_NE(std::string(faCompilerVersion()), "");
}

TEST(CApi, NullAndForeignHandlesAreInvalid) {
  static char notAHandle[64];
  for (void *handle :
       {static_cast<void *>(nullptr), static_cast<void *>(notAHandle),
        reinterpret_cast<void *>(uintptr_t(0xdeadbeef))}) {
    auto *context = static_cast<faContext>(handle);
    auto *kernel = static_cast<faKernel>(handle);
    EXPECT_EQ(faContextDestroy(context), FA_ERROR_INVALID_HANDLE);
    EXPECT_TRUE(lastErrorContains("invalid context handle"));
    EXPECT_EQ(faContextCacheDir(context), nullptr);
    EXPECT_STREQ(faContextGetLastError(context), "invalid context handle");
    EXPECT_STREQ(faContextGetLastWarning(context), "invalid context handle");
    EXPECT_EQ(faKernelDestroy(kernel), FA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(faKernelMetadata(kernel), nullptr);
    EXPECT_EQ(faKernelDirection(kernel), -1);
    EXPECT_EQ(faKernelCacheHit(kernel), 0);
    EXPECT_STREQ(faKernelGetLastError(kernel), "invalid kernel handle");
    uint64_t bytes = 7;
    EXPECT_EQ(faBackwardWorkspaceBytes(kernel, &bytes),
              FA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(bytes, 7u);
    EXPECT_EQ(faAttentionForward(kernel, 0, 0, 0, 0, 0, nullptr, 0),
              FA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(
        faAttentionBackward(kernel, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, nullptr, 0),
        FA_ERROR_INVALID_HANDLE);
  }
}

TEST_F(CApiTest, DestroyedAndWrongKindHandlesAreInvalid) {
  faConfig c = defaultConfig();
  faKernel kernel = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &kernel), FA_SUCCESS);
  // Each handle where the other kind is expected.
  EXPECT_EQ(faKernelDestroy(reinterpret_cast<faKernel>(context_)),
            FA_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(lastErrorContains("(got a context handle)"));
  EXPECT_EQ(faContextDestroy(reinterpret_cast<faContext>(kernel)),
            FA_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(lastErrorContains("(got a kernel handle)"));
  faKernel out = kernel;
  EXPECT_EQ(
      faCompile(reinterpret_cast<faContext>(kernel), &c, FA_FORWARD, &out),
      FA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(out, nullptr);
  // Both are still alive; a second destroy is refused.
  EXPECT_EQ(faKernelDirection(kernel), FA_BACKWARD);
  EXPECT_NE(faContextCacheDir(context_), nullptr);
  EXPECT_EQ(faKernelDestroy(kernel), FA_SUCCESS);
  EXPECT_EQ(faKernelDestroy(kernel), FA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(faKernelMetadata(kernel), nullptr);
}

TEST_F(CApiTest, CompileWithoutADriverFailsCleanly) {
  if (void *cuda = dlopen("libcuda.so.1", RTLD_LAZY)) {
    dlclose(cuda);
    GTEST_SKIP() << "a CUDA driver is installed";
  }
  faConfig c = defaultConfig();
  faKernel out = reinterpret_cast<faKernel>(&c);
  EXPECT_EQ(faCompile(context_, &c, FA_FORWARD, &out), FA_ERROR_DRIVER);
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(lastErrorContains("driver"));
  EXPECT_STREQ(faContextGetLastError(context_), faGetLastError());
  EXPECT_EQ(faCompile(context_, nullptr, FA_FORWARD, &out),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(faCompile(context_, &c, FA_FORWARD, nullptr),
            FA_ERROR_INVALID_ARGUMENT);
}

TEST_F(CApiTest, UnloadedKernelsValidateButNeverLaunch) {
  faConfig c = defaultConfig();
  faKernel forward = nullptr, backward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS);
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_SUCCESS);
  // Valid arguments: only the missing code stops the launch.
  const uint64_t gib = uint64_t(1) << 30;
  EXPECT_EQ(faAttentionForward(forward, 1 * gib, 2 * gib, 3 * gib, 4 * gib,
                               5 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded"));
  uint64_t bytes = 0;
  ASSERT_EQ(faBackwardWorkspaceBytes(backward, &bytes), FA_SUCCESS);
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(faAttentionBackward(backward, 1 * gib, 2 * gib, 3 * gib, 4 * gib,
                                5 * gib, 6 * gib, 7 * gib, 8 * gib, 9 * gib,
                                10 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded"));
  // A kernel of the other direction is an argument error.
  EXPECT_EQ(faBackwardWorkspaceBytes(forward, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(faAttentionForward(backward, 0, 0, 0, 0, 0, nullptr, 0),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(faKernelGetLastError(backward), faGetLastError());
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);
  EXPECT_EQ(faKernelDestroy(backward), FA_SUCCESS);
}

TEST_F(CApiTest, RuntimeShapesKernelsTakeEachLaunchsShape) {
  faConfig c = defaultConfig();
  c.chip = "sm_90";
  c.runtime_shapes = 1;
  c.batch = c.seq_q = c.seq_kv = 0; // ignored with runtime shapes
  faKernel forward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS)
      << faGetLastError();
  EXPECT_NE(
      std::string(faKernelMetadata(forward)).find("\"runtime_shapes\": true"),
      std::string::npos);
  const uint64_t gib = uint64_t(1) << 30;
  // Any shape validates, then only the missing code stops the launch.
  EXPECT_EQ(faAttentionForwardShape(forward, 3, 1000, 77, 1 * gib, 2 * gib,
                                    3 * gib, 4 * gib, 5 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded")) << faGetLastError();
  // Without a shape there is none to run at.
  EXPECT_EQ(faAttentionForward(forward, 1 * gib, 2 * gib, 3 * gib, 4 * gib,
                               5 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("must be positive")) << faGetLastError();
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);

  // A static kernel runs only at its own shape.
  c.runtime_shapes = 0;
  c.batch = 1;
  c.seq_q = c.seq_kv = 128;
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS);
  EXPECT_EQ(faAttentionForwardShape(forward, 1, 129, 128, 1 * gib, 2 * gib,
                                    3 * gib, 4 * gib, 5 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("seq_q")) << faGetLastError();
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);

  // Only 0 or 1; below Hopper the GPU tile level's mma.sync kernel takes
  // them.
  c.runtime_shapes = 2;
  EXPECT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("runtime_shapes must be 0 or 1"));
  c.runtime_shapes = 1;
  c.chip = "sm_80";
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS)
      << faGetLastError();
  const std::string ampere = faKernelMetadata(forward);
  EXPECT_NE(ampere.find("\"chip\": \"sm_80\""), std::string::npos) << ampere;
  EXPECT_NE(ampere.find("\"runtime_shapes\": true"), std::string::npos)
      << ampere;
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);
}

TEST_F(CApiTest, VarlenKernelsTakePackedSequences) {
  faConfig c = defaultConfig();
  c.chip = "sm_90";
  c.varlen = 1;
  c.batch = c.seq_q = c.seq_kv = 0; // ignored for packed sequences
  faKernel forward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS)
      << faGetLastError();
  EXPECT_NE(std::string(faKernelMetadata(forward)).find("\"varlen\": true"),
            std::string::npos);
  const uint64_t gib = uint64_t(1) << 30;
  // Three sequences in 300 query and 500 key rows, the longest 200: valid,
  // then only the missing code stops the launch.
  EXPECT_EQ(faAttentionForwardVarlen(forward, 300, 500, 3, 200, 1 * gib,
                                     2 * gib, 3 * gib, 4 * gib, 5 * gib,
                                     6 * gib, 6 * gib + 64, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded")) << faGetLastError();
  EXPECT_EQ(faAttentionForwardVarlen(forward, 300, 500, 3, 200, 1 * gib,
                                     2 * gib, 3 * gib, 4 * gib, 5 * gib, 0,
                                     6 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("cu_seqlens_q is null")) << faGetLastError();
  // A dense launch of it has no sequences.
  EXPECT_EQ(faAttentionForwardShape(forward, 1, 300, 500, 1 * gib, 2 * gib,
                                    3 * gib, 4 * gib, 5 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("need at least one sequence"))
      << faGetLastError();
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);
  c.varlen = 2;
  EXPECT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("varlen must be 0 or 1"));
}

TEST_F(CApiTest, VarlenBackwardTakesPackedSequences) {
  faConfig c = defaultConfig();
  c.chip = "sm_90";
  c.varlen = 1;
  c.batch = c.seq_q = c.seq_kv = 0; // ignored for packed sequences
  faKernel backward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_SUCCESS)
      << faGetLastError();
  const std::string meta = faKernelMetadata(backward);
  EXPECT_NE(meta.find("\"kind\": \"backward\""), std::string::npos);
  EXPECT_NE(meta.find("\"varlen\": true"), std::string::npos);
  // The workspace is the call's: delta and dQ (f32) of every packed row.
  uint64_t bytes = 0;
  EXPECT_EQ(faBackwardWorkspaceBytes(backward, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("faBackwardWorkspaceBytesVarlen"));
  ASSERT_EQ(faBackwardWorkspaceBytesVarlen(backward, 300, &bytes), FA_SUCCESS)
      << faGetLastError();
  const uint64_t rows = 300 * uint64_t(c.heads_q);
  EXPECT_EQ(bytes, (rows * 4 + 255) / 256 * 256 + rows * c.head_dim * 4);
  EXPECT_EQ(faBackwardWorkspaceBytesVarlen(backward, 0, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("total_q = 0 must be positive"));
  const uint64_t gib = uint64_t(1) << 30;
  // Three sequences in 300 query and 500 key rows, the longest 200 and
  // 250: valid, then only the missing code stops the launch.
  auto launch = [&](int64_t maxK, uint64_t cuQ) {
    return faAttentionBackwardVarlen(
        backward, 300, 500, 3, 200, maxK, 1 * gib, 2 * gib, 3 * gib, 4 * gib,
        5 * gib, 6 * gib, 7 * gib, 8 * gib, 9 * gib, cuQ, 10 * gib + 64,
        11 * gib, nullptr, 0);
  };
  EXPECT_EQ(launch(250, 10 * gib), FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded")) << faGetLastError();
  EXPECT_EQ(launch(250, 0), FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("cu_seqlens_q is null")) << faGetLastError();
  EXPECT_EQ(launch(501, 10 * gib), FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("max_seqlen_k 501")) << faGetLastError();
  // A dense launch of it has no sequences.
  EXPECT_EQ(faAttentionBackward(backward, 1 * gib, 2 * gib, 3 * gib, 4 * gib,
                                5 * gib, 6 * gib, 7 * gib, 8 * gib, 9 * gib,
                                11 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_EQ(faKernelDestroy(backward), FA_SUCCESS);
  // Not deterministic.
  c.deterministic = 1;
  EXPECT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_ERROR_COMPILE);
  EXPECT_TRUE(lastErrorContains("deterministic with packed sequences"));
  c.deterministic = 0;
  // Below Hopper: the tile level's mma.sync backward, the same arguments.
  c.chip = "sm_80";
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_SUCCESS)
      << faGetLastError();
  const std::string sm80 = faKernelMetadata(backward);
  EXPECT_NE(sm80.find("\"chip\": \"sm_80\""), std::string::npos);
  EXPECT_NE(sm80.find("\"varlen\": true"), std::string::npos);
  ASSERT_EQ(faBackwardWorkspaceBytesVarlen(backward, 300, &bytes), FA_SUCCESS)
      << faGetLastError();
  EXPECT_EQ(bytes, (rows * 4 + 255) / 256 * 256 + rows * c.head_dim * 4);
  EXPECT_EQ(faKernelDestroy(backward), FA_SUCCESS);
}

TEST_F(CApiTest, RuntimeShapesBackwardTakesEachLaunchsShape) {
  faConfig c = defaultConfig();
  c.chip = "sm_90";
  c.runtime_shapes = 1;
  faKernel backward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_SUCCESS)
      << faGetLastError();
  EXPECT_NE(
      std::string(faKernelMetadata(backward)).find("\"runtime_shapes\": true"),
      std::string::npos);
  // The workspace is the call's: delta and dQ (f32) of every row.
  uint64_t bytes = 0;
  ASSERT_EQ(faBackwardWorkspaceBytesShape(backward, 3, 300, 200, &bytes),
            FA_SUCCESS)
      << faGetLastError();
  const uint64_t rows = 3 * 300 * uint64_t(c.heads_q);
  EXPECT_EQ(bytes, (rows * 4 + 255) / 256 * 256 + rows * c.head_dim * 4);
  EXPECT_EQ(faBackwardWorkspaceBytesShape(backward, 3, 0, 200, &bytes),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("must be positive"));
  const uint64_t gib = uint64_t(1) << 30;
  // Valid at any shape, then only the missing code stops the launch; the
  // kernel's own shape (none) is refused.
  EXPECT_EQ(faAttentionBackwardShape(backward, 3, 300, 200, 1 * gib, 2 * gib,
                                     3 * gib, 4 * gib, 5 * gib, 6 * gib,
                                     7 * gib, 8 * gib, 9 * gib, 10 * gib,
                                     nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded")) << faGetLastError();
  EXPECT_EQ(faAttentionBackward(backward, 1 * gib, 2 * gib, 3 * gib, 4 * gib,
                                5 * gib, 6 * gib, 7 * gib, 8 * gib, 9 * gib,
                                10 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("must be positive")) << faGetLastError();
  EXPECT_EQ(faKernelDestroy(backward), FA_SUCCESS);
}

TEST_F(CApiTest, DeterministicBackwardTakesTurnCounters) {
  faConfig c = defaultConfig();
  c.chip = "sm_90";
  c.seq_q = c.seq_kv = 300;
  c.deterministic = 1;
  faKernel backward = nullptr, plain = nullptr, forward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_SUCCESS)
      << faGetLastError();
  std::string meta = faKernelMetadata(backward);
  EXPECT_NE(meta.find("\"deterministic\": true"), std::string::npos) << meta;
  EXPECT_NE(meta.find("dq_turns"), std::string::npos) << meta;
  // The turn counters take workspace beside dQ's accumulator.
  c.deterministic = 0;
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &plain), FA_SUCCESS);
  uint64_t withTurns = 0, without = 0;
  EXPECT_EQ(faBackwardWorkspaceBytes(backward, &withTurns), FA_SUCCESS);
  EXPECT_EQ(faBackwardWorkspaceBytes(plain, &without), FA_SUCCESS);
  EXPECT_GT(withTurns, without);
  // Every forward is deterministic: the option leaves it alone.
  c.deterministic = 1;
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS)
      << faGetLastError();
  EXPECT_EQ(std::string(faKernelMetadata(forward)).find("deterministic"),
            std::string::npos);
  for (faKernel k : {backward, plain, forward})
    EXPECT_EQ(faKernelDestroy(k), FA_SUCCESS);
  // Only 0 or 1; and only where the WGMMA backward runs.
  c.deterministic = 2;
  EXPECT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("deterministic must be 0 or 1"));
  c.deterministic = 1;
  c.chip = "sm_80";
  EXPECT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_ERROR_COMPILE);
  EXPECT_TRUE(lastErrorContains("deterministic")) << faGetLastError();
}

/// grad_lse: a backward set whose pre kernel takes dLSE, launched through
/// faAttentionBackwardCall; the other launches leave dlse out, which such a
/// set refuses, and a set without it refuses one.
TEST_F(CApiTest, GradLseBackwardTakesDlseThroughTheCall) {
  faConfig c = defaultConfig();
  c.chip = "sm_90";
  c.seq_q = c.seq_kv = 300;
  c.grad_lse = 1;
  faKernel backward = nullptr, plain = nullptr, forward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward), FA_SUCCESS)
      << faGetLastError();
  EXPECT_NE(std::string(faKernelMetadata(backward))
                .find("\"args\": [\"o\", \"do\", \"dlse\", \"delta\", "
                      "\"dq_acc\"]"),
            std::string::npos)
      << faKernelMetadata(backward);
  // A forward has no gradient to take: the option leaves it alone.
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS);
  EXPECT_EQ(std::string(faKernelMetadata(forward)).find("dlse"),
            std::string::npos);
  c.grad_lse = 0;
  ASSERT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &plain), FA_SUCCESS);
  const uint64_t gib = uint64_t(1) << 30;
  faBackwardCall call{};
  uint64_t *inputs[] = {&call.q,    &call.k,        &call.v,  &call.o,
                        &call.dout, &call.lse,      &call.dq, &call.dk,
                        &call.dv,   &call.workspace};
  for (size_t i = 0; i < std::size(inputs); ++i)
    *inputs[i] = (i + 1) * gib;
  EXPECT_EQ(faAttentionBackwardCall(backward, &call, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("grad_lse pointer is null"))
      << faGetLastError();
  EXPECT_EQ(faAttentionBackward(backward, call.q, call.k, call.v, call.o,
                                call.dout, call.lse, call.dq, call.dk, call.dv,
                                call.workspace, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("grad_lse pointer is null"));
  call.dlse = 11 * gib;
  // Valid: what is missing is the loaded code.
  EXPECT_EQ(faAttentionBackwardCall(backward, &call, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded")) << faGetLastError();
  EXPECT_EQ(faAttentionBackwardCall(plain, &call, nullptr, 0), FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("grad_lse pointer given")) << faGetLastError();
  EXPECT_EQ(faAttentionBackwardCall(backward, nullptr, nullptr, 0),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("call is NULL"));
  EXPECT_EQ(faAttentionBackwardCall(forward, &call, nullptr, 0),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(faAttentionBackwardCall(nullptr, &call, nullptr, 0),
            FA_ERROR_INVALID_HANDLE);
  for (faKernel k : {backward, plain, forward})
    EXPECT_EQ(faKernelDestroy(k), FA_SUCCESS);
  c.grad_lse = 2;
  EXPECT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &backward),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("grad_lse must be 0 or 1"));
}

TEST_F(CApiTest, FP8KernelsTakeDescalesThroughTheirOwnCall) {
  faConfig c = defaultConfig();
  c.chip = "sm_90a";
  c.dtype = FA_DTYPE_E4M3;
  c.out_dtype = FA_DTYPE_F16;
  c.head_dim = c.head_dim_v = 128;
  faKernel forward = nullptr;
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS)
      << faGetLastError();
  std::string meta = faKernelMetadata(forward);
  EXPECT_NE(meta.find("\"dtype\": \"e4m3\""), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"out_dtype\": \"f16\""), std::string::npos) << meta;
  const uint64_t gib = uint64_t(1) << 30;
  // With its descales every argument validates; only the missing code
  // stops the launch.
  EXPECT_EQ(faAttentionForwardFP8(forward, 0, 0, 0, 1 * gib, 2 * gib, 3 * gib,
                                  4 * gib, 5 * gib, 6 * gib, 7 * gib, 8 * gib,
                                  nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("kernel is not loaded")) << faGetLastError();
  // Without them (the 16-bit call) the runtime refuses it by name.
  EXPECT_EQ(faAttentionForward(forward, 1 * gib, 2 * gib, 3 * gib, 4 * gib,
                               5 * gib, nullptr, 0),
            FA_ERROR_LAUNCH);
  EXPECT_TRUE(lastErrorContains("descale")) << faGetLastError();
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);

  // The FP8 call on a 16-bit kernel, and an out_dtype that is no output.
  c = defaultConfig();
  ASSERT_EQ(faCompileUnloaded(&c, FA_FORWARD, &forward), FA_SUCCESS);
  EXPECT_EQ(faAttentionForwardFP8(forward, 0, 0, 0, 1 * gib, 2 * gib, 3 * gib,
                                  4 * gib, 5 * gib, 6 * gib, 7 * gib, 8 * gib,
                                  nullptr, 0),
            FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("takes bf16 inputs, not e4m3"))
      << faGetLastError();
  EXPECT_EQ(faKernelDestroy(forward), FA_SUCCESS);
  c.dtype = FA_DTYPE_E4M3;
  c.out_dtype = FA_DTYPE_E4M3;
  EXPECT_EQ(faValidateConfig(&c, FA_FORWARD), FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("out_dtype of FA_DTYPE_E4M3 inputs"))
      << faGetLastError();
  // No FP8 backward yet: a compile error, not a kernel.
  c.out_dtype = FA_DTYPE_BF16;
  c.chip = "sm_90a";
  c.head_dim = c.head_dim_v = 128;
  EXPECT_EQ(faCompileUnloaded(&c, FA_BACKWARD, &forward), FA_ERROR_COMPILE);
  EXPECT_TRUE(lastErrorContains("no FP8 backward")) << faGetLastError();
}

TEST_F(CApiTest, PrecompileNeedsNoDriverAndHitsTheSecondTime) {
  faConfig c = defaultConfig();
  c.chip = "sm_80";
  int hit = 5;
  ASSERT_EQ(faPrecompile(context_, &c, FA_FORWARD, &hit), FA_SUCCESS)
      << faGetLastError();
  EXPECT_EQ(hit, 0);
  ASSERT_EQ(faPrecompile(context_, &c, FA_FORWARD, &hit), FA_SUCCESS);
  EXPECT_EQ(hit, 1);
  c.chip = "sm_75";
  EXPECT_EQ(faPrecompile(context_, &c, FA_FORWARD, &hit), FA_ERROR_COMPILE);
  EXPECT_EQ(hit, 0);
  EXPECT_TRUE(lastErrorContains("unsupported chip 'sm_75'"));
}

TEST_F(CApiTest, NonPositiveSizesAreRefusedBeforeAnyArithmetic) {
  // faPrecompile computed the JIT's cache key, whose default block sizes
  // multiply the head dims, before the compiler checked them: a head dim of
  // -2^62 overflowed int64 (undefined behaviour, reported by UBSan).
  for (int64_t bad : {int64_t(0), int64_t(-64), -(int64_t(1) << 62),
                      std::numeric_limits<int64_t>::min()}) {
    faConfig c = defaultConfig();
    c.head_dim = bad;
    c.chip = "sm_90";
    int hit = 5;
    EXPECT_EQ(faPrecompile(context_, &c, FA_FORWARD, &hit),
              FA_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(lastErrorContains("head_dim must be positive, got " +
                                  std::to_string(bad)));
    EXPECT_EQ(hit, 0);
    EXPECT_EQ(faValidateConfig(&c, FA_BACKWARD), FA_ERROR_INVALID_ARGUMENT);
  }
  faConfig c = defaultConfig();
  c.heads_kv = -2;
  EXPECT_EQ(faValidateConfig(&c, FA_FORWARD), FA_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorContains("heads_kv must be positive, got -2"));
}

TEST(CApi, EnumArgumentsOutOfRangeAreRefused) {
  // C and ctypes callers pass any int where an enum is declared; the
  // library must refuse it without undefined behaviour (the C++ side used
  // to declare the enums without a fixed underlying type, so a direction of
  // 2^31 was not a value the type could hold; UBSan: invalid enum load).
  faConfig c = defaultConfig();
  for (int32_t direction : {3, -1, std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max()}) {
    EXPECT_EQ(faValidateConfig(&c, static_cast<faDirection>(direction)),
              FA_ERROR_INVALID_ARGUMENT);
    EXPECT_TRUE(lastErrorContains("direction must be FA_FORWARD"));
  }
  EXPECT_STREQ(faStatusString(
                   static_cast<faStatus>(std::numeric_limits<int32_t>::min())),
               "FA_ERROR_UNKNOWN");
}

} // namespace
