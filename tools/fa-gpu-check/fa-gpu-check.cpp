//===- fa-gpu-check.cpp - Run and check one attention kernel on the GPU ---===//
//
// Loads a kernel produced by fa-compile (PTX + .meta; a forward kernel or,
// with "kind": "backward" in the .meta, a backward kernel set), runs it on
// fresh random inputs and compares the result with the fp64 reference:
//
//   fa-gpu-check --ptx FILE --meta FILE [--iters N] [--warmup N] [--seed S]
//                [--bench] [--cache]
//
// fa-gpu-check-jit (the same source, built with the compiler) also compiles
// the kernel in-process through the JIT and its cache ($FLASHMLIR_CACHE_DIR):
//
//   fa-gpu-check-jit --jit --dtype bf16 --batch 2 --heads-q 8 --heads-kv 2
//                    --seq-q 1000 --seq-kv 1000 --head-dim 128 [--causal]
//                    [--window L,R] [--softcap X] [--block-q N] ...
//                    [--backward]
//
// Prints diagnostics to stderr and one verdict line to stdout (Check.h); the
// JIT adds `cache=hit|miss jit_ms=...`. Exit status: 0 pass, 1 wrong
// results, 2 usage or setup error (bad files, no driver, compile or load
// failure; the verdict line is still printed).
//
//===----------------------------------------------------------------------===//

#include "Check.h"

#include "fa/Runtime/Runtime.h"
#ifdef FA_GPU_CHECK_JIT
#include "fa/Jit/Jit.h"
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace fa::rt;
using namespace fa::check;

namespace {

struct Options {
  std::string ptxPath, metaPath, name;
  bool seedGiven = false, cache = false;
  CheckOptions check;
  /// --shape B,NQ,NKV: the calls to check a runtime-shapes kernel with.
  std::vector<std::array<int64_t, 3>> shapes;
#ifdef FA_GPU_CHECK_JIT
  bool jit = false, backward = false;
  mlir::fa::AttentionConfig config;
  std::string chip, emitPrefix;
  fa::jit::ImageFormat format = fa::jit::ImageFormat::PTX;
#endif
};

void usage(FILE *out) {
  std::fprintf(out,
               "usage: fa-gpu-check --ptx FILE --meta FILE [--iters N] "
               "[--warmup N] [--seed S] [--bench] [--cache]\n"
               "                   [--shape B,NQ,NKV ...] [--seqlens Q:K,...]\n"
               "  --iters N   correctness runs (default 1), or timed runs "
               "with --bench (default 20)\n"
               "  --warmup N  untimed launches before timing (default 5)\n"
               "  --seed S    input seed (default: random, printed)\n"
               "  --seqlens Q:K,...  the packed sequences (query and key "
               "lengths) to check a\n"
               "              varlen kernel (\"varlen\": true) with\n"
               "  --bench     time with CUDA events; report median ms and "
               "TFLOP/s\n"
               "  --shape B,NQ,NKV  a call of a kernel with runtime shapes "
               "(\"runtime_shapes\": true):\n"
               "              batch, query and key lengths; repeat it to "
               "check several\n"
               "  --cache     load through the kernel cache "
               "($FLASHMLIR_CACHE_DIR or ~/.cache/flashmlir)\n");
#ifdef FA_GPU_CHECK_JIT
  std::fprintf(
      out,
      "   or: fa-gpu-check-jit --jit [config] [--iters N] [--warmup N] "
      "[--seed S] [--bench]\n"
      "  config: --dtype bf16|f16 --batch N --heads-q N [--heads-kv N] "
      "--seq-q N [--seq-kv N]\n"
      "          --head-dim N [--head-dim-v N] [--causal] [--window L,R] "
      "[--softcap X] [--scale X]\n"
      "          [--block-q N] [--block-kv N] [--rows-per-warp N]\n"
      "  --backward        compile and check the backward kernel set (dQ, dK, "
      "dV)\n"
      "  --runtime-shapes  compile one forward kernel for every batch and "
      "length (sm_90);\n"
      "                    check it at --batch, --seq-q and --seq-kv\n"
      "  --chip sm_XY      target (default: the device's; sm_90 without one)\n"
      "  --format F        what the cache holds: ptx (default) or cubin\n"
      "  --emit PREFIX     compile only: write PREFIX.ptx and PREFIX.meta "
      "(no GPU needed)\n"
      "  --name NAME       name in the verdict line\n");
#endif
}

std::string stem(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind(".meta");
  if (dot != std::string::npos && dot + 5 == base.size())
    base.resize(dot);
  return base.empty() ? "kernel" : base;
}

bool parseNumber(const char *s, uint64_t &out) {
  if (!s || !*s)
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-')
    return false;
  out = v;
  return true;
}

#ifdef FA_GPU_CHECK_JIT
bool parseInt(const char *s, int64_t &out) {
  if (!s || !*s)
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

bool parseDouble(const char *s, double &out) {
  if (!s || !*s)
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtod(s, &end);
  return !errno && !*end;
}

/// Consumes a JIT option; returns false if `arg` is not one, sets `bad` if
/// its value is malformed.
bool parseJitOption(const std::string &arg, const char *v, Options &opt,
                    bool &usedValue, bool &bad) {
  mlir::fa::AttentionConfig &c = opt.config;
  usedValue = true;
  int64_t *dim = arg == "--batch"           ? &c.batch
                 : arg == "--heads-q"       ? &c.headsQ
                 : arg == "--heads-kv"      ? &c.headsKV
                 : arg == "--seq-q"         ? &c.seqQ
                 : arg == "--seq-kv"        ? &c.seqKV
                 : arg == "--head-dim"      ? &c.headDim
                 : arg == "--head-dim-v"    ? &c.headDimV
                 : arg == "--block-q"       ? &c.blockQ
                 : arg == "--block-kv"      ? &c.blockKV
                 : arg == "--rows-per-warp" ? &c.rowsPerWarp
                                            : nullptr;
  double x = 0;
  if (dim) {
    bad = !parseInt(v, *dim);
  } else if (arg == "--dtype" || arg == "--chip" || arg == "--emit" ||
             arg == "--name") {
    bad = !v || !*v;
    if (!bad)
      (arg == "--dtype"  ? c.dtype
       : arg == "--chip" ? opt.chip
       : arg == "--emit" ? opt.emitPrefix
                         : opt.name) = v;
  } else if (arg == "--format") {
    std::string f = v ? v : "";
    bad = f != "ptx" && f != "cubin";
    opt.format =
        f == "ptx" ? fa::jit::ImageFormat::PTX : fa::jit::ImageFormat::Cubin;
  } else if (arg == "--softcap" || arg == "--scale") {
    bad = !parseDouble(v, x) || x <= 0;
    (arg == "--softcap" ? c.softcap : c.scale) = x;
  } else if (arg == "--window") {
    std::string w = v ? v : "";
    size_t comma = w.find(',');
    int64_t l = 0, r = 0;
    bad = comma == std::string::npos ||
          !parseInt(w.substr(0, comma).c_str(), l) ||
          !parseInt(w.substr(comma + 1).c_str(), r);
    c.window = std::make_pair(l, r);
  } else {
    usedValue = false;
    if (arg == "--jit")
      opt.jit = true;
    else if (arg == "--backward")
      opt.backward = true;
    else if (arg == "--causal")
      c.causal = true;
    else if (arg == "--runtime-shapes")
      c.runtimeShapes = true;
    else
      return false;
  }
  return true;
}
#endif

/// Parses argv (`--opt value` or `--opt=value`); returns -1 to continue,
/// else an exit status.
int parseOptions(int argc, char **argv, Options &opt) {
#ifdef FA_GPU_CHECK_JIT
  opt.config.headsKV = opt.config.seqKV = opt.config.headDimV = 0;
#endif
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], inlineValue;
    bool hasInline = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != arg.npos) {
      inlineValue = arg.substr(eq + 1);
      arg.resize(eq);
      hasInline = true;
    }
    const char *next = hasInline      ? inlineValue.c_str()
                       : i + 1 < argc ? argv[i + 1]
                                      : nullptr;
    bool usedValue = true, bad = false;
    uint64_t n = 0;
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg == "--ptx" || arg == "--meta") {
      bad = !next;
      if (next)
        (arg == "--ptx" ? opt.ptxPath : opt.metaPath) = next;
    } else if (arg == "--iters" || arg == "--warmup") {
      bad =
          !parseNumber(next, n) || n > 1000000 || (arg == "--iters" && n == 0);
      (arg == "--iters" ? opt.check.iters : opt.check.warmup) = int(n);
    } else if (arg == "--seed") {
      bad = !parseNumber(next, opt.check.seed);
      opt.seedGiven = true;
    } else if (arg == "--shape") {
      std::array<uint64_t, 3> v{};
      std::string text = next ? next : "";
      size_t a = text.find(','), b = a == text.npos ? a : text.find(',', a + 1);
      bad = b == text.npos || !parseNumber(text.substr(0, a).c_str(), v[0]) ||
            !parseNumber(text.substr(a + 1, b - a - 1).c_str(), v[1]) ||
            !parseNumber(text.substr(b + 1).c_str(), v[2]) ||
            *std::min_element(v.begin(), v.end()) < 1 ||
            *std::max_element(v.begin(), v.end()) > (uint64_t(1) << 31);
      opt.shapes.push_back({int64_t(v[0]), int64_t(v[1]), int64_t(v[2])});
    } else if (arg == "--seqlens") {
      // Q:K,Q:K,...: the packed sequences a varlen kernel is checked on.
      std::string text = next ? next : "";
      bad = text.empty();
      for (size_t at = 0; !bad && at <= text.size();) {
        size_t comma = text.find(',', at);
        std::string pair = text.substr(at, comma - at);
        size_t colon = pair.find(':');
        uint64_t nq = 0, nk = 0;
        bad = colon == pair.npos ||
              !parseNumber(pair.substr(0, colon).c_str(), nq) ||
              !parseNumber(pair.substr(colon + 1).c_str(), nk) ||
              nq > (uint64_t(1) << 24) || nk > (uint64_t(1) << 24);
        opt.check.seqlens.push_back({int64_t(nq), int64_t(nk)});
        at = comma == text.npos ? text.size() + 1 : comma + 1;
      }
    } else if (arg == "--bench" || arg == "--cache") {
      usedValue = false;
      (arg == "--bench" ? opt.check.bench : opt.cache) = true;
#ifdef FA_GPU_CHECK_JIT
    } else if (parseJitOption(arg, next, opt, usedValue, bad)) {
#endif
    } else {
      std::fprintf(stderr, "fa-gpu-check: unknown argument '%s'\n",
                   arg.c_str());
      usage(stderr);
      return 2;
    }
    if (bad || (hasInline && !usedValue)) {
      std::fprintf(stderr, "fa-gpu-check: bad or missing value for %s\n",
                   arg.c_str());
      return 2;
    }
    if (usedValue && !hasInline)
      ++i;
  }
#ifdef FA_GPU_CHECK_JIT
  if (opt.jit) {
    mlir::fa::AttentionConfig &c = opt.config;
    c.headsKV = c.headsKV ? c.headsKV : c.headsQ;
    c.seqKV = c.seqKV ? c.seqKV : c.seqQ;
    c.headDimV = c.headDimV ? c.headDimV : c.headDim;
    if (opt.ptxPath.empty() && opt.metaPath.empty())
      return -1;
    std::fprintf(stderr, "fa-gpu-check: --jit excludes --ptx / --meta\n");
    return 2;
  }
#endif
  if (opt.ptxPath.empty() || opt.metaPath.empty()) {
    std::fprintf(stderr, "fa-gpu-check: --ptx and --meta are required\n");
    usage(stderr);
    return 2;
  }
  return -1;
}

int runAheadOfTime(Options &opt) {
  opt.name = stem(opt.metaPath);
  KernelMetadata m;
  if (Status s = readKernelMetadataFile(opt.metaPath, m); !s.ok())
    return setupError(opt.name, s.message());
  auto fail = [&](const std::string &what) {
    return setupError(opt.name, what, "", m.kind);
  };
  std::string ptx;
  if (Status s = readFile(opt.ptxPath, ptx); !s.ok())
    return fail(s.message());
  if (std::string why = uncheckable(m); !why.empty())
    return fail(why);

  Driver &driver = Driver::get();
  if (Status s = driver.initialize(); !s.ok())
    return fail(s.message());
  std::fprintf(stderr, "# device: %s\n", driver.device().describe().c_str());

  StatusOr<Kernel> kernel = [&]() -> StatusOr<Kernel> {
    if (!opt.cache)
      return Kernel::fromPTX(ptx, m);
    KernelCache cache;
    CacheOutcome outcome;
    std::string warning;
    StatusOr<Kernel> k =
        loadKernelCached(cache, ptx, m, "fa-gpu-check", &outcome, &warning);
    if (!warning.empty())
      std::fprintf(stderr, "# cache warning: %s\n", warning.c_str());
    if (k.ok())
      std::fprintf(stderr, "# cache: %s (%s)\n", toString(outcome),
                   cache.directory().c_str());
    return k;
  }();
  if (!kernel.ok())
    return fail(kernel.status().message());
  if (m.varlen)
    return checkKernel(*kernel, opt.name, opt.check);
  if (!opt.check.seqlens.empty())
    return fail("--seqlens is for varlen kernels (\"varlen\": true)");
  if (!m.runtimeShapes)
    return opt.shapes.empty()
               ? checkKernel(*kernel, opt.name, opt.check)
               : fail("--shape is for kernels with runtime shapes; this "
                      "one is built for one shape");
  if (opt.shapes.empty())
    return fail("the kernel has runtime shapes (\"runtime_shapes\": true): "
                "give "
                "the calls to check with --shape B,NQ,NKV");
  // One verdict line per call, named after its shape; the worst status.
  int status = 0;
  for (const auto &[batch, seqQ, seqKV] : opt.shapes) {
    CheckOptions call = opt.check;
    call.batch = batch;
    call.seqQ = seqQ;
    call.seqKV = seqKV;
    std::string name = opt.name + "_b" + std::to_string(batch) + "_n" +
                       std::to_string(seqQ) + "x" + std::to_string(seqKV);
    status = std::max(status, checkKernel(*kernel, name, call));
  }
  return status;
}

#ifdef FA_GPU_CHECK_JIT
std::string configName(const mlir::fa::AttentionConfig &c) {
  std::string s = std::string(c.backward ? "jit_bwd_" : "jit_") + c.dtype +
                  "_b" + std::to_string(c.batch) + "_h" +
                  std::to_string(c.headsQ) + "x" + std::to_string(c.headsKV) +
                  "_n" + std::to_string(c.seqQ) + "x" +
                  std::to_string(c.seqKV) + "_d" + std::to_string(c.headDim);
  if (c.headDimV != c.headDim)
    s += "_dv" + std::to_string(c.headDimV);
  if (c.causal)
    s += "_causal";
  if (c.window)
    s += "_w" + std::to_string(c.window->first) + "-" +
         std::to_string(c.window->second);
  if (c.softcap)
    s += "_cap" + std::to_string(int64_t(*c.softcap));
  return s;
}

bool writeText(const std::string &path, const std::string &text) {
  FILE *f = std::fopen(path.c_str(), "wb");
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return (f && std::fclose(f) == 0) && ok;
}

int runJit(Options &opt) {
  using namespace fa::jit;
  opt.config.backward = opt.backward;
  const KernelKind kind =
      opt.backward ? KernelKind::Backward : KernelKind::Forward;
  if (opt.name.empty())
    opt.name = configName(opt.config);
  auto fail = [&](const std::string &what, const std::string &extra = "") {
    return setupError(opt.name, what, extra, kind);
  };
  KernelCache cache;
  std::fprintf(stderr, "# cache dir: %s\n",
               cache.diskEnabled() ? cache.directory().c_str()
                                   : "(none: memory only)");
  Driver &driver = Driver::get();
  Status init = driver.initialize();
  if (init.ok())
    std::fprintf(stderr, "# device: %s\n", driver.device().describe().c_str());

  auto start = std::chrono::steady_clock::now();
  auto elapsedMs = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  auto describe = [&](CacheOutcome outcome, bool compiled) {
    char buf[96];
    bool hit =
        outcome == CacheOutcome::MemoryHit || outcome == CacheOutcome::DiskHit;
    std::snprintf(buf, sizeof buf, "cache=%s jit_ms=%.1f", hit ? "hit" : "miss",
                  elapsedMs());
    std::fprintf(stderr, "# jit: %s (%s, compiler %s)\n", buf,
                 toString(outcome), compiled ? "ran" : "not run");
    return std::string(buf);
  };

  // Without a GPU (or with --emit) compile to PTX only: that needs no driver.
  if (!init.ok() || !opt.emitPrefix.empty()) {
    JitOptions options{opt.chip, ImageFormat::PTX};
    if (options.chip.empty())
      options.chip = init.ok() ? driver.device().chip() : "sm_90";
    StatusOr<JitArtifact> a =
        opt.backward ? buildBackwardKernel(opt.config, cache, options, driver)
                     : buildForwardKernel(opt.config, cache, options, driver);
    if (!a.ok())
      return fail(a.status().message());
    std::string extra = describe(a->outcome, a->compiled);
    std::fprintf(stderr, "# kernel for %s: %zu bytes of PTX, cache entry %s\n",
                 options.chip.c_str(), a->image.size(),
                 cache.entryPath(a->key).c_str());
    if (!a->warning.empty())
      std::fprintf(stderr, "# cache warning: %s\n", a->warning.c_str());
    if (opt.emitPrefix.empty())
      return fail(init.message(), extra);
    if (!writeText(opt.emitPrefix + ".ptx", a->image) ||
        !writeText(opt.emitPrefix + ".meta", a->metadataText))
      return fail("cannot write " + opt.emitPrefix + ".{ptx,meta}");
    std::printf("EMITTED %s %s %s.ptx %s.meta\n", opt.name.c_str(),
                extra.c_str(), opt.emitPrefix.c_str(), opt.emitPrefix.c_str());
    return 0;
  }

  const JitOptions options{opt.chip, opt.format};
  StatusOr<JitKernel> k =
      opt.backward ? getBackwardKernel(opt.config, cache, options, driver)
                   : getForwardKernel(opt.config, cache, options, driver);
  if (!k.ok())
    return fail(k.status().message());
  opt.check.extra = describe(k->outcome, k->compiled);
  // A runtime-shapes kernel is checked at the config's batch and lengths.
  opt.check.batch = opt.config.batch;
  opt.check.seqQ = opt.config.seqQ;
  opt.check.seqKV = opt.config.seqKV;
  if (!k->warning.empty())
    std::fprintf(stderr, "# cache warning: %s\n", k->warning.c_str());
  return checkKernel(k->kernel, opt.name, opt.check);
}
#endif

} // namespace

int main(int argc, char **argv) {
  Options opt;
  if (int rc = parseOptions(argc, argv, opt); rc >= 0)
    return rc;
  if (!opt.seedGiven)
    opt.check.seed = randomSeed();
#ifdef FA_GPU_CHECK_JIT
  if (opt.jit)
    return runJit(opt);
#endif
  return runAheadOfTime(opt);
}
