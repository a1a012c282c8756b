// RUN: fa-opt %s -fa-tile-attention="block-q=0" -verify-diagnostics -split-input-file
// RUN: not fa-opt %s -fa-tile-attention="block-kv=40" 2>&1 | FileCheck %s --check-prefix=NPOT
// RUN: not fa-opt %s -fa-tile-attention="block-q=200" 2>&1 | FileCheck %s --check-prefix=NPOT-Q
// Block sizes are bounded before any arithmetic on them (2^56); the
// backward's in tile-attention-grad-errors.mlir.
// RUN: not fa-opt %s -fa-tile-attention="block-kv=72057594037927936" 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not fa-opt %s -fa-tile-attention="block-q=2048" 2>&1 | FileCheck %s --check-prefix=BIG

// NPOT: error: fa-tile-attention: option block-kv must be a positive power of two or multiple of 16, got 40
// NPOT-Q: error: fa-tile-attention: option block-q must be a positive power of two or multiple of 16, got 200
// HUGE: error: fa-tile-attention: option block-kv must be at most 1024, got 72057594037927936
// BIG: error: fa-tile-attention: option block-q must be at most 1024, got 2048

// expected-error @+1 {{fa-tile-attention: option block-q must be a positive power of two or multiple of 16, got 0}}
module {
  func.func @f() {
    return
  }
}
