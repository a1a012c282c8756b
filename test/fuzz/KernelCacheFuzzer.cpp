//===- KernelCacheFuzzer.cpp - libFuzzer target for cache entries ---------===//
//
// The kernel cache reads entry files that anyone with access to the cache
// directory can have written. Whatever bytes sit at an entry's path, a
// lookup must return either exactly what was stored for that key (and what
// the validator accepts) or a fresh build (replacing the file, with a
// warning), and leave an entry the next lookup reads back unchanged.
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
  using fa::rt::CacheEntry;
  const fa::rt::CacheKey key{"forward d128", "flashmlir-fuzz", "sm_90a"};
  const CacheEntry built{"{\"kind\": \"forward\", \"seq_q\": 128}\n",
                         "built kernel bytes"};
  fa::rt::KernelCache cache(cacheDirectory());
  if (!cache.diskEnabled())
    std::abort();
  std::string path = cache.entryPath(key);
  if (FILE *f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  auto builder = [&](CacheEntry &entry) {
    entry = built;
    return fa::rt::Status::success();
  };
  // Stands for the JIT's check of the metadata against the request: any
  // entry with other metadata is rejected, whatever its digest says.
  auto validator = [&](const CacheEntry &entry) -> std::string {
    return entry.metadata == built.metadata ? "" : "other metadata";
  };
  CacheEntry entry;
  fa::rt::CacheOutcome outcome;
  std::string warning;
  if (!cache.getOrBuild(key, builder, entry, &outcome, &warning, validator)
           .ok())
    std::abort();
  switch (outcome) {
  case fa::rt::CacheOutcome::DiskHit:
    if (entry.metadata != built.metadata || !warning.empty())
      std::abort();
    break;
  case fa::rt::CacheOutcome::RebuiltCorrupt:
    if (!(entry == built) || warning.empty()) // Never a silent rebuild.
      std::abort();
    break;
  default:
    std::abort(); // The file is always there: neither missing nor memory.
  }
  // A second cache object (no memory) reads the same entry from disk.
  fa::rt::KernelCache again(cacheDirectory());
  CacheEntry reread;
  fa::rt::CacheOutcome second;
  if (!again.getOrBuild(key, builder, reread, &second, nullptr, validator)
           .ok() ||
      second != fa::rt::CacheOutcome::DiskHit || !(reread == entry))
    std::abort();
  return 0;
}
