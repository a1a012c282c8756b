//===- MetadataFuzzer.cpp - libFuzzer target for the .meta parser ---------===//
//
// Kernel metadata reaches the runtime from disk (the kernel cache, files a
// user passes), so the parser (nlohmann::json, then the key table and the
// checks between keys) must take any bytes: an error Status or a metadata
// object every consumer can use, never a crash, an abort (a JSON exception
// under -fno-exceptions), an overflow or an out-of-bounds read (built with
// ASan and UBSan by scripts/fuzz.sh). Its seeds are fa-compile's .meta
// files (test/fuzz/corpus/MetadataFuzzer), its dictionary the JSON's keys,
// values and punctuation.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Attention.h"
#include "fa/Runtime/Metadata.h"

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  fa::rt::KernelMetadata first, second;
  fa::rt::Status parsed = fa::rt::parseKernelMetadata(text, first);
  // Deterministic: the same text parses to the same kernel ABI.
  fa::rt::Status again = fa::rt::parseKernelMetadata(text, second);
  if (parsed.ok() != again.ok())
    std::abort();
  if (!parsed.ok())
    return 0;
  if (first.configString() != second.configString())
    std::abort();
  // What the runtime derives from accepted metadata must be defined too.
  (void)first.launches();
  (void)first.chipVersion();
  (void)first.chipIsArchSpecific();
  if (first.kind == fa::rt::KernelKind::Forward)
    (void)fa::rt::attentionForwardFlops(first);
  else
    (void)fa::rt::attentionBackwardWorkspaceBytes(first);
  return 0;
}
