/*===- FakeCuda.h - What a test reads back from libFakeCuda.so -----*- C -*-===
 *
 * libFakeCuda.so stands in for libcuda.so.1 (FLASHMLIR_LIBCUDA): see
 * FakeCuda.cpp. A test that loaded it through the runtime finds these with
 * dlopen(path, RTLD_NOLOAD) and dlsym.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FA_UNITTESTS_FAKECUDA_H
#define FA_UNITTESTS_FAKECUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the last cuLaunchKernel was given. */
typedef struct FakeCudaLaunch {
  int device; /**< The device of the context current at the launch. */
  unsigned grid[3], block[3];
  unsigned sharedBytes;
  uint64_t stream;
  char entry[128]; /**< The function's name. */
} FakeCudaLaunch;

/** Launches so far. */
long fakeCudaLaunchCount(void);
FakeCudaLaunch fakeCudaLastLaunch(void);
/** The device of the calling thread's current context; -1 for none. */
int fakeCudaCurrentDevice(void);
/** Makes `device`'s primary context current (-1: none); 0 on success. */
int fakeCudaSetCurrentDevice(int device);

#ifdef __cplusplus
}
#endif

#endif /* FA_UNITTESTS_FAKECUDA_H */
