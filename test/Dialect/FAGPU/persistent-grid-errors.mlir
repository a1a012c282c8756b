// RUN: fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-persistent-grid))' -verify-diagnostics
// RUN: not fa-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(fagpu-persistent-grid{blocks=0}))' 2>&1 | FileCheck %s --check-prefix=BLOCKS

// The option is checked before any kernel, on the module:
// BLOCKS: error: fagpu-persistent-grid needs at least one block, got 0
// BLOCKS-NOT: error: fagpu-persistent-grid needs fa.grid

// Every error fagpu-persistent-grid emits, on the smallest kernel that
// reaches it.

// The tiles are the grid the kernel was built for.
gpu.module @m {
  // expected-error @+1 {{fagpu-persistent-grid needs fa.grid = [X, Y, Z] (the block per tile)}}
  gpu.func @no_grid(%out: memref<4xf32>) kernel {
    %one = arith.constant 1.0 : f32
    %bx = gpu.block_id x
    memref.store %one, %out[%bx] : memref<4xf32>
    gpu.return
  }
}

// -----

// Runtime shapes: the tile count is known at launch only.
gpu.module @m {
  // expected-error @+1 {{fagpu-persistent-grid needs the tile count at compile time; with runtime shapes (a dynamic fa.grid) a block per tile}}
  gpu.func @runtime_grid(%out: memref<4xf32>) kernel attributes {fa.grid = array<i64: -9223372036854775808, 4, 1>} {
    %one = arith.constant 1.0 : f32
    %bx = gpu.block_id x
    memref.store %one, %out[%bx] : memref<4xf32>
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{fagpu-persistent-grid needs fa.grid = [X, Y, Z] (the block per tile)}}
  gpu.func @empty_grid(%out: memref<4xf32>) kernel attributes {fa.grid = array<i64: 4, 0, 1>} {
    gpu.return
  }
}

// -----

// A block id read under control flow would be read once per block, not
// per tile.
gpu.module @m {
  gpu.func @nested(%out: memref<4xf32>, %p: i1) kernel attributes {fa.grid = array<i64: 4, 1, 1>} {
    %one = arith.constant 1.0 : f32
    scf.if %p {
      // expected-error @+1 {{fagpu-persistent-grid needs the block ids read at the kernel's entry}}
      %bx = gpu.block_id x
      memref.store %one, %out[%bx] : memref<4xf32>
    }
    gpu.return
  }
}

// -----

// A kernel that already reads its grid size is not a block per tile.
gpu.module @m {
  gpu.func @twice(%out: memref<4xf32>) kernel attributes {fa.grid = array<i64: 4, 1, 1>} {
    %one = arith.constant 1.0 : f32
    // expected-error @+1 {{fagpu-persistent-grid: the kernel already depends on its grid size}}
    %n = gpu.grid_dim x
    %bx = gpu.block_id x
    memref.store %one, %out[%bx] : memref<4xf32>
    gpu.return
  }
}
