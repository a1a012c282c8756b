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

// Runtime shapes: the tile count is known at launch only, unless the
// kernel states it.
gpu.module @m {
  // expected-error @+1 {{fagpu-persistent-grid: with runtime shapes (a dynamic fa.grid) the kernel must state its tiles (fagpu.tile_grid)}}
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

// -----

// The tile grid is what the loop's bounds come from: it must be computed
// at the entry, before the loop, and from the arguments, not a block id.
gpu.module @m {
  gpu.func @grid_from_block_id(%out: memref<?xf32>) kernel attributes {fa.grid = array<i64: -9223372036854775808, 1, 1>} {
    %one = arith.constant 1.0 : f32
    %c1 = arith.constant 1 : index
    %bx = gpu.block_id x
    // expected-error @+1 {{fagpu-persistent-grid: the tile grid must be computed at the kernel's entry from its arguments}}
    fagpu.tile_grid %bx, %c1, %c1
    memref.store %one, %out[%bx] : memref<?xf32>
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @grid_in_region(%out: memref<?xf32>, %p: i1) kernel attributes {fa.grid = array<i64: -9223372036854775808, 1, 1>} {
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %out, %c0 : memref<?xf32>
    scf.if %p {
      // expected-error @+1 {{fagpu-persistent-grid needs the tile grid stated at the kernel's entry}}
      fagpu.tile_grid %n, %c1, %c1
    }
    %bx = gpu.block_id x
    memref.store %one, %out[%bx] : memref<?xf32>
    gpu.return
  }
}
