//===- CApiFuzzer.cpp - libFuzzer target for C API call sequences ---------===//
//
// Any bytes as a sequence of C API calls (include/fa-c/FlashMLIR.h), as a C
// or Python caller could make them on a machine without a GPU: contexts and
// kernels created and destroyed in any order, and every call given a live
// handle, a destroyed one, one of the other kind, null, a pointer that was
// never a handle or any 64-bit value; configs, directions, device pointers,
// strides and out-pointers from the input. The C API promises to tell a bad
// handle from a good one without reading it, so none of this may crash.
//
// Checked after every call, against a model of which handles are live:
//  - a call on anything but a live handle of its kind is
//    FA_ERROR_INVALID_HANDLE (getters: NULL, -1, 0 or the documented text);
//  - a call on a live one never is; statuses are the documented ones, and
//    faGetLastError() is "" exactly after a success;
//  - without a driver nothing launches: faCompile fails, launches fail;
//  - a launch whose arguments are all valid fails only for not being loaded.
// Compiles go through the front end only (FrontEndOnlyCompile.cpp), and the
// kernel caches live in a scratch directory under $TMPDIR.
//
//===----------------------------------------------------------------------===//

#include "FuzzValues.h"

#include "fa-c/FlashMLIR.h"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

[[noreturn]] void violated(const char *what, const char *call) {
  std::fprintf(stderr,
               "C API invariant violated after %s: %s (last error: "
               "'%s')\n",
               call, what, faGetLastError());
  std::abort();
}

void expect(bool holds, const char *what, const char *call) {
  if (!holds)
    violated(what, call);
}

/// The scratch directory every cache of this process lives under.
const std::string &scratch() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/fa-capi-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data()))
      std::abort();
    // The default cache directory (cache_dir NULL or "") is one of ours too.
    setenv("FLASHMLIR_CACHE_DIR", (pattern + "/default").c_str(), 1);
    // A regular file where a cache directory is asked for.
    if (FILE *f = std::fopen((pattern + "/file").c_str(), "w"))
      std::fclose(f);
    return pattern;
  }();
  return dir;
}

enum class Kind { Context, Kernel };

/// What the fuzzer knows of the handles it has seen: the live ones by
/// address (an address the allocator reuses is simply live again), and every
/// one ever returned in this input (live or destroyed) to pass again.
struct Model {
  std::map<void *, Kind> live;
  std::vector<void *> seen;

  bool isLive(void *h, Kind kind) const {
    auto it = live.find(h);
    return it != live.end() && it->second == kind;
  }
  void add(void *h, Kind kind) {
    live[h] = kind;
    seen.push_back(h);
  }
};

/// A handle to pass: one seen in this input, null, a pointer to memory that
/// is no handle, or any value.
void *pickHandle(FuzzedDataProvider &in, const Model &model) {
  static char notAHandle[64];
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    return nullptr;
  case 1:
    return notAHandle;
  case 2:
    return reinterpret_cast<void *>(in.ConsumeIntegral<uintptr_t>());
  default:
    if (model.seen.empty())
      return nullptr;
    return model
        .seen[in.ConsumeIntegralInRange<size_t>(0, model.seen.size() - 1)];
  }
}

/// A cache directory: the default, scratch subdirectories (new, nested),
/// a regular file, a path that cannot be created.
std::string pickCacheDir(FuzzedDataProvider &in, bool &null) {
  null = false;
  switch (in.ConsumeIntegralInRange<int>(0, 6)) {
  case 0:
    null = true;
    return "";
  case 1:
    return "";
  case 2:
    return scratch() + "/a";
  case 3:
    return scratch() + "/b/c/d";
  case 4:
    return scratch() + "/file";
  case 5:
    return "/proc/self/fa-cache"; // Not creatable, even for root.
  default: // One of a few more, so that long runs make few directories.
    return scratch() + "/n" +
           std::to_string(in.ConsumeIntegralInRange<int>(0, 7));
  }
}

/// A device pointer: 0, aligned, misaligned or any value.
uint64_t pickPointer(FuzzedDataProvider &in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
  case 0:
    return 0;
  case 1:
    return uint64_t(in.ConsumeIntegralInRange<uint32_t>(1, 1u << 20)) << 24;
  case 2:
    return in.ConsumeIntegralInRange<uint64_t>(1, 1u << 20);
  default:
    return in.ConsumeIntegral<uint64_t>();
  }
}

void pickStrides(FuzzedDataProvider &in, int64_t *strides, size_t n) {
  for (size_t i = 0; i < n; ++i)
    strides[i] = fa::fuzz::pickSize(in, strides[i]);
}

/// Checks the last-error contract of a call that returned `status`.
void checkStatus(faStatus status, const char *call) {
  expect(status >= FA_SUCCESS && status <= FA_ERROR_LAUNCH,
         "undocumented status", call);
  const char *error = faGetLastError();
  expect(error != nullptr, "faGetLastError() is NULL", call);
  expect((status == FA_SUCCESS) == (*error == '\0'),
         "faGetLastError() must be empty exactly after a success", call);
}

/// Checks a call given `handle` where a live handle of `kind` is expected.
void checkHandleStatus(faStatus status, const Model &model, void *handle,
                       Kind kind, const char *call) {
  checkStatus(status, call);
  bool valid = model.isLive(handle, kind);
  expect((status == FA_ERROR_INVALID_HANDLE) == !valid,
         valid ? "a live handle was refused" : "a bad handle was accepted",
         call);
}

/// Device pointers, 32 GiB apart and aligned: no tensor (at most 2^31 - 1
/// elements of 4 bytes) or backward workspace reaches the next one, so these
/// are valid arguments for any kernel.
uint64_t goodPointer(size_t i) { return (uint64_t(i) + 1) << 35; }

/// A launch's device pointers and strides: either pointers valid for any
/// kernel with dense strides, or pointers and maybe strides from the input.
template <size_t N, typename Strides> struct LaunchArguments {
  uint64_t pointers[N];
  Strides strides;
  bool valid, withStrides;

  explicit LaunchArguments(FuzzedDataProvider &in) {
    std::memset(&strides, 0, sizeof strides);
    valid = in.ConsumeBool();
    for (size_t i = 0; i < N; ++i)
      pointers[i] = valid ? goodPointer(i) : pickPointer(in);
    withStrides = !valid && in.ConsumeBool();
    if (withStrides)
      pickStrides(in, &strides.q[0], sizeof strides / sizeof(int64_t));
  }
  const Strides *stridesOrNull() const {
    return withStrides ? &strides : nullptr;
  }
};

/// Checks what every launch on `h` returns without a GPU: never a success,
/// an invalid handle exactly for a bad one. Whether `h` is a live kernel.
bool checkLaunchStatus(faStatus s, const Model &model, void *h,
                       const char *call) {
  checkStatus(s, call);
  expect(s != FA_SUCCESS, "a launch succeeded without a GPU", call);
  if (model.isLive(h, Kind::Kernel))
    return true;
  expect(s == FA_ERROR_INVALID_HANDLE, "a bad handle was accepted", call);
  return false;
}

/// What valid arguments of a launch on backward kernel `kernel` fail for
/// without a GPU: the missing code, unless the call gives dlse to a set
/// compiled without the gradient of lse or leaves it out for one with it.
const char *expectedFailure(faKernel kernel, bool passesDlse,
                            bool passesDescales = false) {
  const bool takesDlse = std::strstr(faKernelMetadata(kernel), "\"dlse\"");
  if (takesDlse && !passesDlse)
    return "grad_lse pointer is null";
  if (!takesDlse && passesDlse)
    return "grad_lse pointer given";
  // An FP8 kernel's descales come through faAttentionForwardFP8 only.
  const bool fp8 = std::strstr(faKernelMetadata(kernel), "\"dtype\": \"e4m3\"");
  if (fp8 && !passesDescales)
    return "descale";
  if (!fp8 && passesDescales)
    return "not e4m3";
  return "kernel is not loaded";
}

/// Checks a launch on `h` for a kernel of `direction`: it never succeeds
/// without a GPU, and valid arguments fail only for the missing code.
void checkLaunch(faStatus s, const Model &model, void *h, bool valid,
                 faDirection direction, const char *call,
                 bool passesDlse = false, bool passesDescales = false) {
  if (!checkLaunchStatus(s, model, h, call) || !valid ||
      faKernelDirection(static_cast<faKernel>(h)) != direction)
    return;
  // A runtime-shapes kernel has no shape of its own to launch at.
  const std::string error = faGetLastError();
  auto kernel = static_cast<faKernel>(h);
  const bool runtimeShapes =
      std::strstr(faKernelMetadata(kernel), "\"runtime_shapes\": true");
  // (faAttentionForwardFP8 refuses a 16-bit kernel before its sizes.)
  const char *expected = expectedFailure(kernel, passesDlse, passesDescales);
  const bool wrongDtype = std::strcmp(expected, "not e4m3") == 0;
  expect(error.find(runtimeShapes && !wrongDtype
                        ? "must be positive"
                        : expected) != std::string::npos,
         "valid arguments were refused", call);
}

void callForward(FuzzedDataProvider &in, const Model &model) {
  void *h = pickHandle(in, model);
  LaunchArguments<5, faForwardStrides> a(in);
  const uint64_t *p = a.pointers;
  uint64_t stream = in.ConsumeIntegral<uint64_t>();
  faStatus s = faAttentionForward(static_cast<faKernel>(h), p[0], p[1], p[2],
                                  p[3], p[4], a.stridesOrNull(), stream);
  checkLaunch(s, model, h, a.valid, FA_FORWARD, "faAttentionForward");
}

/// The FP8 forward: q, k, v, o, lse and the three descales, at the
/// kernel's own sizes (0) or the input's.
void callForwardFP8(FuzzedDataProvider &in, const Model &model) {
  void *h = pickHandle(in, model);
  LaunchArguments<8, faForwardStrides> a(in);
  const uint64_t *p = a.pointers;
  bool own = in.ConsumeBool();
  int64_t batch = own ? 0 : fa::fuzz::pickSize(in, 2),
          seqQ = own ? 0 : fa::fuzz::pickSize(in, 300),
          seqKV = own ? 0 : fa::fuzz::pickSize(in, 200);
  faStatus s =
      faAttentionForwardFP8(static_cast<faKernel>(h), batch, seqQ, seqKV, p[0],
                            p[1], p[2], p[3], p[4], p[5], p[6], p[7],
                            a.stridesOrNull(), in.ConsumeIntegral<uint64_t>());
  // At the input's sizes a static kernel may refuse them; at its own, valid
  // arguments fail only for the missing code (or a 16-bit kernel's dtype).
  if (own)
    checkLaunch(s, model, h, a.valid, FA_FORWARD, "faAttentionForwardFP8",
                /*passesDlse=*/false, /*passesDescales=*/true);
  else
    checkLaunchStatus(s, model, h, "faAttentionForwardFP8");
}

/// A quantization (FA_QUANTIZE): x, out, descale and the workspace, whose
/// size only a quantization kernel reports.
void callQuantize(FuzzedDataProvider &in, const Model &model) {
  void *h = pickHandle(in, model);
  auto kernel = static_cast<faKernel>(h);
  bool nullBytes = in.ConsumeBool();
  uint64_t bytes = 7;
  faStatus s = faQuantizeWorkspaceBytes(kernel, nullBytes ? nullptr : &bytes);
  checkHandleStatus(s, model, h, Kind::Kernel, "faQuantizeWorkspaceBytes");
  expect(s == FA_SUCCESS ? bytes > 0 && bytes % 4 == 0 : bytes == 7,
         "bytes is set exactly on success", "faQuantizeWorkspaceBytes");
  if (model.isLive(h, Kind::Kernel) && !nullBytes)
    expect((s == FA_SUCCESS) == (faKernelDirection(kernel) == FA_QUANTIZE),
           "a size for quantization kernels only", "faQuantizeWorkspaceBytes");
  LaunchArguments<4, faForwardStrides> a(in);
  const uint64_t *p = a.pointers;
  s = faQuantize(kernel, p[0], p[1], p[2], p[3],
                 in.ConsumeIntegral<uint64_t>());
  checkLaunchStatus(s, model, h, "faQuantize");
}

void callBackward(FuzzedDataProvider &in, const Model &model) {
  void *h = pickHandle(in, model);
  LaunchArguments<10, faBackwardStrides> a(in);
  const uint64_t *p = a.pointers;
  uint64_t stream = in.ConsumeIntegral<uint64_t>();
  faStatus s = faAttentionBackward(static_cast<faKernel>(h), p[0], p[1], p[2],
                                   p[3], p[4], p[5], p[6], p[7], p[8], p[9],
                                   a.stridesOrNull(), stream);
  checkLaunch(s, model, h, a.valid, FA_BACKWARD, "faAttentionBackward");
  // The same at a shape of the input's (a runtime-shapes kernel's launch),
  // and that shape's workspace: set exactly on success.
  int64_t batch = fa::fuzz::pickSize(in, 2), seqQ = fa::fuzz::pickSize(in, 300),
          seqKV = fa::fuzz::pickSize(in, 200);
  s = faAttentionBackwardShape(static_cast<faKernel>(h), batch, seqQ, seqKV,
                               p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7],
                               p[8], p[9], a.stridesOrNull(), stream);
  checkLaunchStatus(s, model, h, "faAttentionBackwardShape");
  uint64_t bytes = 7;
  s = faBackwardWorkspaceBytesShape(static_cast<faKernel>(h), batch, seqQ,
                                    seqKV, in.ConsumeBool() ? nullptr : &bytes);
  checkHandleStatus(s, model, h, Kind::Kernel,
                    "faBackwardWorkspaceBytesShape");
  expect(s == FA_SUCCESS ? bytes > 0 && bytes != 7 : bytes == 7,
         "bytes is set exactly on success", "faBackwardWorkspaceBytesShape");
  // Every input in one struct, dlse too (faAttentionBackwardCall): the
  // kernel's own shape (0, 0, 0) or the input's, or no struct at all.
  faBackwardCall call{};
  const bool own = a.valid || in.ConsumeBool();
  call.batch = own ? 0 : batch;
  call.seq_q = own ? 0 : seqQ;
  call.seq_kv = own ? 0 : seqKV;
  uint64_t *inputs[] = {&call.q,    &call.k,        &call.v,  &call.o,
                        &call.dout, &call.lse,      &call.dq, &call.dk,
                        &call.dv,   &call.workspace};
  for (size_t i = 0; i < std::size(inputs); ++i)
    *inputs[i] = p[i];
  const bool passesDlse = in.ConsumeBool();
  call.dlse = passesDlse ? (a.valid ? goodPointer(10) : pickPointer(in)) : 0;
  const bool nullCall = !a.valid && in.ConsumeIntegralInRange<int>(0, 15) == 0;
  s = faAttentionBackwardCall(static_cast<faKernel>(h),
                              nullCall ? nullptr : &call, a.stridesOrNull(),
                              stream);
  checkLaunch(s, model, h, a.valid, FA_BACKWARD, "faAttentionBackwardCall",
              passesDlse);
  expect(!nullCall || s == FA_ERROR_INVALID_HANDLE ||
             s == FA_ERROR_INVALID_ARGUMENT,
         "a NULL call was not refused as an argument",
         "faAttentionBackwardCall");
}

/// Packed sequences: 3 sequences in 300 query and 500 key rows, the
/// longest 200 and 250 (valid for any varlen kernel), or sizes from the
/// input.
struct PackedSizes {
  int64_t totalQ = 300, totalKV = 500, sequences = 3, maxQ = 200, maxK = 250;
  explicit PackedSizes(FuzzedDataProvider &in, bool valid) {
    if (valid)
      return;
    for (int64_t *size : {&totalQ, &totalKV, &sequences, &maxQ, &maxK})
      *size = fa::fuzz::pickSize(in, *size);
  }
};

/// Checks a packed-sequence launch: valid arguments on a varlen kernel of
/// `direction` fail only for the missing code.
void checkPackedLaunch(faStatus s, const Model &model, void *h, bool valid,
                       faDirection direction, const char *call,
                       bool passesDlse = false) {
  if (!checkLaunchStatus(s, model, h, call))
    return;
  auto kernel = static_cast<faKernel>(h);
  if (valid && faKernelDirection(kernel) == direction &&
      std::strstr(faKernelMetadata(kernel), "\"varlen\": true"))
    expect(std::string(faGetLastError())
                   .find(direction == FA_BACKWARD
                             ? expectedFailure(kernel, passesDlse)
                             : "kernel is not loaded") != std::string::npos,
           "valid arguments were refused", call);
}

void callForwardVarlen(FuzzedDataProvider &in, const Model &model) {
  void *h = pickHandle(in, model);
  LaunchArguments<7, faForwardStrides> a(in);
  PackedSizes n(in, a.valid);
  const uint64_t *p = a.pointers;
  faStatus s = faAttentionForwardVarlen(
      static_cast<faKernel>(h), n.totalQ, n.totalKV, n.sequences, n.maxQ,
      p[0], p[1], p[2], p[3], p[4], p[5], p[6], a.stridesOrNull(),
      in.ConsumeIntegral<uint64_t>());
  checkPackedLaunch(s, model, h, a.valid, FA_FORWARD,
                    "faAttentionForwardVarlen");
}

void callBackwardVarlen(FuzzedDataProvider &in, const Model &model) {
  void *h = pickHandle(in, model);
  LaunchArguments<12, faBackwardStrides> a(in);
  PackedSizes n(in, a.valid);
  const uint64_t *p = a.pointers;
  faStatus s = faAttentionBackwardVarlen(
      static_cast<faKernel>(h), n.totalQ, n.totalKV, n.sequences, n.maxQ,
      n.maxK, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9],
      p[10], p[11], a.stridesOrNull(), in.ConsumeIntegral<uint64_t>());
  checkPackedLaunch(s, model, h, a.valid, FA_BACKWARD,
                    "faAttentionBackwardVarlen");
  // The workspace of a packed call: set exactly on success.
  uint64_t bytes = 7;
  int64_t rows = a.valid ? n.totalQ : fa::fuzz::pickSize(in, n.totalQ);
  s = faBackwardWorkspaceBytesVarlen(static_cast<faKernel>(h), rows,
                                     in.ConsumeBool() ? nullptr : &bytes);
  checkHandleStatus(s, model, h, Kind::Kernel,
                    "faBackwardWorkspaceBytesVarlen");
  expect(s == FA_SUCCESS ? bytes > 0 && bytes != 7 : bytes == 7,
         "bytes is set exactly on success", "faBackwardWorkspaceBytesVarlen");
}

/// A config for a call that compiles: mostly one of a few small ones that
/// compile once per process (FrontEndOnlyCompile.cpp memoizes), sometimes
/// any values (each a new compile; ConfigFuzzer covers those in depth).
/// `null` asks for a NULL config pointer.
faConfig pickCompileConfig(FuzzedDataProvider &in, std::string &chip,
                           bool &null) {
  null = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0)
    return fa::fuzz::pickConfig(in, chip);
  faConfig c;
  faConfigInit(&c);
  switch (in.ConsumeIntegralInRange<int>(0, 6)) {
  case 0:
    break;
  case 4: // packed sequences (one kernel, or set, for every batch of them)
    c.varlen = 1;
    break;
  case 5: // runtime shapes (one kernel, or set, for every batch and length)
    c.runtime_shapes = 1;
    break;
  case 1: // GQA with every mask
    c.dtype = FA_DTYPE_F16;
    c.heads_q = 4;
    c.heads_kv = 2;
    c.causal = 1;
    c.window_left = 64;
    c.window_right = 0;
    c.softcap = 30.0;
    break;
  case 2: // mma.sync
    c.seq_q = 77;
    c.seq_kv = 200;
    c.head_dim = c.head_dim_v = 32;
    break;
  case 3: // FP8 (the WGMMA forward only)
    c.dtype = FA_DTYPE_E4M3;
    c.out_dtype = in.ConsumeBool() ? FA_DTYPE_BF16 : FA_DTYPE_F16;
    c.head_dim = c.head_dim_v = 128;
    break;
  default: // refused by the compiler
    c.heads_q = 3;
    c.heads_kv = 2;
    break;
  }
  // A backward set that takes the gradient of lse (its own kernels).
  c.grad_lse = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  static const char *const chips[] = {nullptr, "sm_80", "sm_90a", "sm_75"};
  c.chip = chips[in.ConsumeIntegralInRange<size_t>(0, std::size(chips) - 1)];
  return c;
}

void step(FuzzedDataProvider &in, Model &model) {
  std::string chip;
  bool null = false;
  switch (in.ConsumeIntegralInRange<int>(0, 22)) {
  case 0: {
    std::string dir = pickCacheDir(in, null);
    bool nullOut = in.ConsumeIntegralInRange<int>(0, 15) == 0;
    // faContextCreate, or faContextCreateOnDevice with an ordinal: 0, one
    // that needs a device (there is none here), or one out of range.
    static const int devices[] = {0, 1, 63, -1, 64, INT_MIN, INT_MAX};
    const bool onDevice = in.ConsumeBool();
    const int device =
        onDevice ? in.ConsumeBool() ? in.ConsumeIntegral<int>()
                                    : devices[in.ConsumeIntegralInRange<size_t>(
                                          0, std::size(devices) - 1)]
                 : 0;
    faContext ctx = reinterpret_cast<faContext>(&model); // must be reset
    const char *dirArg = null ? nullptr : dir.c_str();
    faContext *out = nullOut ? nullptr : &ctx;
    faStatus s = onDevice ? faContextCreateOnDevice(dirArg, device, out)
                          : faContextCreate(dirArg, out);
    checkStatus(s, "faContextCreate");
    // An unusable directory (a file, not creatable) may be refused, or
    // accepted with a warning (memory-only cache).
    bool usable = dir.find("/proc/") != 0 && dir != scratch() + "/file";
    if (!nullOut && (device < 0 || device > 63))
      expect(s == FA_ERROR_INVALID_ARGUMENT, "an ordinal out of range taken",
             "faContextCreateOnDevice");
    else if (!nullOut && device != 0)
      expect(s == FA_ERROR_DRIVER, "a device without a GPU taken",
             "faContextCreateOnDevice");
    else
      expect(nullOut ? s == FA_ERROR_INVALID_ARGUMENT
                     : s == FA_SUCCESS ||
                           (!usable && s == FA_ERROR_INVALID_ARGUMENT),
             "faContextCreate's status", "faContextCreate");
    if (s == FA_SUCCESS) {
      expect(ctx && !model.live.count(ctx), "a handle that is already live",
             "faContextCreate");
      model.add(ctx, Kind::Context);
    }
    return;
  }
  case 1: {
    void *h = pickHandle(in, model);
    faStatus s = faContextDestroy(static_cast<faContext>(h));
    checkHandleStatus(s, model, h, Kind::Context, "faContextDestroy");
    if (s == FA_SUCCESS)
      model.live.erase(h);
    return;
  }
  case 22: {
    void *h = pickHandle(in, model);
    int device = faContextDevice(static_cast<faContext>(h));
    expect(model.isLive(h, Kind::Context) ? device == 0 : device == -1,
           "device 0 for a live context (no other can be made here), -1 for "
           "a bad handle",
           "faContextDevice");
    return;
  }
  case 2: {
    void *h = pickHandle(in, model);
    const char *dir = faContextCacheDir(static_cast<faContext>(h));
    expect((dir != nullptr) == model.isLive(h, Kind::Context),
           "NULL exactly for a bad handle", "faContextCacheDir");
    return;
  }
  case 3:
  case 4: {
    void *h = pickHandle(in, model);
    bool warning = in.ConsumeBool();
    const char *text = warning
                           ? faContextGetLastWarning(static_cast<faContext>(h))
                           : faContextGetLastError(static_cast<faContext>(h));
    expect(text != nullptr, "NULL text", "faContextGetLast*");
    if (!model.isLive(h, Kind::Context))
      expect(std::strcmp(text, "invalid context handle") == 0,
             "the documented text for a bad handle", "faContextGetLast*");
    return;
  }
  case 5: {
    void *h = pickHandle(in, model);
    faConfig c = pickCompileConfig(in, chip, null);
    faDirection direction = fa::fuzz::pickDirection(in);
    bool nullOut = in.ConsumeIntegralInRange<int>(0, 15) == 0;
    faKernel out = reinterpret_cast<faKernel>(&model);
    faStatus s = faCompile(static_cast<faContext>(h), null ? nullptr : &c,
                           direction, nullOut ? nullptr : &out);
    checkStatus(s, "faCompile");
    expect(s != FA_SUCCESS, "faCompile succeeded without a GPU", "faCompile");
    if (!nullOut) {
      expect(out == nullptr, "*out is not NULL after a failure", "faCompile");
      checkHandleStatus(s, model, h, Kind::Context, "faCompile");
    }
    return;
  }
  case 6: {
    faConfig c = pickCompileConfig(in, chip, null);
    faDirection direction = fa::fuzz::pickDirection(in);
    bool nullOut = in.ConsumeIntegralInRange<int>(0, 15) == 0;
    faKernel out = reinterpret_cast<faKernel>(&model);
    faStatus s = faCompileUnloaded(null ? nullptr : &c, direction,
                                   nullOut ? nullptr : &out);
    checkStatus(s, "faCompileUnloaded");
    expect(s == FA_SUCCESS || s == FA_ERROR_INVALID_ARGUMENT ||
               s == FA_ERROR_COMPILE,
           "undocumented status", "faCompileUnloaded");
    if (s == FA_SUCCESS) {
      expect(out && !model.live.count(out), "a handle that is already live",
             "faCompileUnloaded");
      expect(faKernelDirection(out) == direction, "the kernel's direction",
             "faCompileUnloaded");
      model.add(out, Kind::Kernel);
    } else if (!nullOut) {
      expect(out == nullptr, "*out is not NULL after a failure",
             "faCompileUnloaded");
    }
    return;
  }
  case 7: {
    void *h = pickHandle(in, model);
    faConfig c = pickCompileConfig(in, chip, null);
    faDirection direction = fa::fuzz::pickDirection(in);
    int hit = 7;
    bool nullHit = in.ConsumeBool();
    faStatus s = faPrecompile(static_cast<faContext>(h), null ? nullptr : &c,
                              direction, nullHit ? nullptr : &hit);
    checkHandleStatus(s, model, h, Kind::Context, "faPrecompile");
    // PTX for a named chip (or sm_90): no driver is involved.
    expect(s != FA_ERROR_DRIVER && s != FA_ERROR_LAUNCH,
           "faPrecompile needs no driver", "faPrecompile");
    expect(nullHit || hit == 0 || (s == FA_SUCCESS && hit == 1),
           "*cache_hit is 0 or 1, and 0 after a failure", "faPrecompile");
    return;
  }
  case 8: {
    void *h = pickHandle(in, model);
    faStatus s = faKernelDestroy(static_cast<faKernel>(h));
    checkHandleStatus(s, model, h, Kind::Kernel, "faKernelDestroy");
    if (s == FA_SUCCESS)
      model.live.erase(h);
    return;
  }
  case 9: {
    void *h = pickHandle(in, model);
    const char *text = faKernelMetadata(static_cast<faKernel>(h));
    bool valid = model.isLive(h, Kind::Kernel);
    expect((text != nullptr) == valid, "NULL exactly for a bad handle",
           "faKernelMetadata");
    expect(!valid || *text, "empty metadata", "faKernelMetadata");
    return;
  }
  case 10: {
    void *h = pickHandle(in, model);
    int direction = faKernelDirection(static_cast<faKernel>(h));
    expect(model.isLive(h, Kind::Kernel)
               ? direction == FA_FORWARD || direction == FA_BACKWARD ||
                     direction == FA_QUANTIZE
               : direction == -1,
           "a direction, or -1 for a bad handle", "faKernelDirection");
    int hit = faKernelCacheHit(static_cast<faKernel>(h));
    expect(hit == 0 || (hit == 1 && model.isLive(h, Kind::Kernel)),
           "0 or 1, and 0 for a bad handle", "faKernelCacheHit");
    return;
  }
  case 11: {
    void *h = pickHandle(in, model);
    const char *text = faKernelGetLastError(static_cast<faKernel>(h));
    expect(text != nullptr, "NULL text", "faKernelGetLastError");
    if (!model.isLive(h, Kind::Kernel))
      expect(std::strcmp(text, "invalid kernel handle") == 0,
             "the documented text for a bad handle", "faKernelGetLastError");
    return;
  }
  case 12: {
    void *h = pickHandle(in, model);
    bool nullBytes = in.ConsumeBool();
    uint64_t bytes = 7;
    faStatus s = faBackwardWorkspaceBytes(static_cast<faKernel>(h),
                                          nullBytes ? nullptr : &bytes);
    checkHandleStatus(s, model, h, Kind::Kernel, "faBackwardWorkspaceBytes");
    expect(s == FA_SUCCESS ? bytes > 0 && bytes != 7 : bytes == 7,
           "bytes is set exactly on success", "faBackwardWorkspaceBytes");
    return;
  }
  case 13:
    return callForward(in, model);
  case 14:
    return callBackward(in, model);
  case 17:
    return callForwardVarlen(in, model);
  case 19:
    return callForwardFP8(in, model);
  case 20:
    return callQuantize(in, model);
  case 18:
    return callBackwardVarlen(in, model);
  case 15: {
    faConfig c = pickCompileConfig(in, chip, null);
    faStatus s =
        faValidateConfig(null ? nullptr : &c, fa::fuzz::pickDirection(in));
    checkStatus(s, "faValidateConfig");
    expect(s == FA_SUCCESS || s == FA_ERROR_INVALID_ARGUMENT ||
               s == FA_ERROR_COMPILE,
           "undocumented status", "faValidateConfig");
    return;
  }
  case 16: {
    bool nullConfig = in.ConsumeBool();
    faConfig c;
    faStatus s = faConfigInit(nullConfig ? nullptr : &c);
    checkStatus(s, "faConfigInit");
    expect((s == FA_SUCCESS) == !nullConfig, "faConfigInit's status",
           "faConfigInit");
    return;
  }
  default: {
    const char *name = faStatusString(faStatus(in.ConsumeIntegral<int32_t>()));
    expect(name && std::strncmp(name, "FA_", 3) == 0, "a status name",
           "faStatusString");
    expect(faGetApiVersion() == FA_CAPI_VERSION, "the API version",
           "faGetApiVersion");
    expect(faCompilerVersion() && *faCompilerVersion(), "a version",
           "faCompilerVersion");
    return;
  }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)scratch();
  FuzzedDataProvider in(data, size);
  Model model;
  for (int calls = 0; calls < 64 && in.remaining_bytes() > 0; ++calls)
    step(in, model);
  // Nothing outlives the input: every live handle is destroyed, once.
  for (auto [handle, kind] : model.live) {
    faStatus s = kind == Kind::Context
                     ? faContextDestroy(static_cast<faContext>(handle))
                     : faKernelDestroy(static_cast<faKernel>(handle));
    expect(s == FA_SUCCESS, "destroying a live handle failed", "cleanup");
  }
  return 0;
}
