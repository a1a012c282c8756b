//===- runtime_consumer.cpp - Links FlashMLIR's runtime and C API ---------===//
//
// Uses one symbol of each library, so that the link fails if an installed
// library or header is missing; runs without a GPU.
//
//===----------------------------------------------------------------------===//

#include "fa-c/FlashMLIR.h"
#include "fa/Runtime/Runtime.h"

#include <cstdio>

int main() {
  fa::rt::KernelMetadata metadata;
  fa::rt::Status parsed = fa::rt::parseKernelMetadata("not metadata", metadata);
  std::printf("C API version %d; runtime: %s\n", faGetApiVersion(),
              parsed.ok() ? "parsed garbage" : parsed.message().c_str());
  return parsed.ok() || faGetApiVersion() <= 0;
}
