//===- KernelCacheFuzzer.cpp - libFuzzer target for cache entries ---------===//
//
// The kernel cache reads entry files that anyone with access to the cache
// directory can have written. Whatever bytes sit at an entry's path, a
// lookup must return either exactly what was stored for that key or a fresh
// build (replacing a corrupt file), and leave an entry the next lookup reads
// back unchanged.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/KernelCache.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const std::string &cacheDirectory() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/fa-cache-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data()))
      std::abort();
    return pattern;
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const fa::rt::CacheKey key{"forward d128", "flashmlir-fuzz", "sm_90a"};
  const std::string built = "built kernel bytes";
  fa::rt::KernelCache cache(cacheDirectory());
  if (!cache.diskEnabled())
    std::abort();
  std::string path = cache.entryPath(key);
  if (FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  auto builder = [&](std::string &bytes) {
    bytes = built;
    return fa::rt::Status::success();
  };
  std::string bytes;
  fa::rt::CacheOutcome outcome;
  if (!cache.getOrBuild(key, builder, bytes, &outcome).ok())
    std::abort();
  if (outcome != fa::rt::CacheOutcome::DiskHit && bytes != built)
    std::abort();
  // A second cache object (no memory) reads the same bytes from disk.
  fa::rt::KernelCache again(cacheDirectory());
  std::string reread;
  fa::rt::CacheOutcome second;
  if (!again.getOrBuild(key, builder, reread, &second).ok() ||
      second != fa::rt::CacheOutcome::DiskHit || reread != bytes)
    std::abort();
  return 0;
}
