// RUN: fa-opt %s -fa-tile-attention="block-q=0" -verify-diagnostics -split-input-file
// RUN: not fa-opt %s -fa-tile-attention="block-kv=48" 2>&1 | FileCheck %s --check-prefix=NPOT
// RUN: not fa-opt %s -fa-tile-attention-grad="block-q=24" 2>&1 | FileCheck %s --check-prefix=GRAD

// NPOT: error: fa-tile-attention: option block-kv must be a positive power of two, got 48
// GRAD: error: fa-tile-attention-grad: option block-q must be a positive power of two, got 24

// expected-error @+1 {{fa-tile-attention: option block-q must be a positive power of two, got 0}}
module {
  func.func @f() {
    return
  }
}
