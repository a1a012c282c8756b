//===- GlibcCompat.cpp - Lower the static JIT checker's glibc needs -------===//
//
// Linked into the FA_STATIC_JIT build only. The static libstdc++ (GCC 12)
// implements std::random_device with arc4random, which glibc has only since
// 2.36; LLVM's thread pool uses random_device. Defining it here binds that
// reference to this definition instead of the versioned glibc symbol, so the
// binary runs on glibc 2.35 (Ubuntu 22.04). The symbol is not exported: a
// library loaded later (libcuda) still gets glibc's own.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <sys/random.h>

extern "C" __attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value = 0;
  while (getrandom(&value, sizeof value, 0) != ssize_t(sizeof value)) {
  }
  return value;
}
