//===- ConfigFuzzer.cpp - libFuzzer target for faValidateConfig -----------===//
//
// Any bytes as the values of a C API config (every faConfig field, the chip
// name, the direction; FuzzValues.h), validated by faValidateConfig() as
// Python's flashmlir.validate() and every faCompile() do: the C API's own
// checks, then the compiler's (compileAttention). PTX generation is replaced
// by the front end (FrontEndOnlyCompile.cpp): parse, verify, limits, the
// fa-level passes. Never a crash, an abort or a sanitizer report; the status
// is one the documentation allows, with a message exactly when it fails; a
// config that passes compiles to metadata the runtime accepts, describing it.
//
//===----------------------------------------------------------------------===//

#include "FuzzValues.h"

#include "fa-c/FlashMLIR.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string chip;
  faConfig config = fa::fuzz::pickConfig(in, chip);
  faDirection direction = fa::fuzz::pickDirection(in);
  faStatus status = faValidateConfig(&config, direction);
  bool documented = status == FA_SUCCESS ||
                    status == FA_ERROR_INVALID_ARGUMENT ||
                    status == FA_ERROR_COMPILE;
  const char *error = faGetLastError();
  if (!documented || !error || (status == FA_SUCCESS) != (*error == '\0'))
    std::abort();
  // The direction is checked before anything else reads the config.
  if (direction != FA_FORWARD && direction != FA_BACKWARD &&
      direction != FA_QUANTIZE && status != FA_ERROR_INVALID_ARGUMENT)
    std::abort();
  return 0;
}
