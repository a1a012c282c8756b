// RUN: fa-opt %s -split-input-file -verify-diagnostics
// RUN: not fa-opt %s -split-input-file 2>/dev/null

// One case per verifier branch of the GPU tile level.

// expected-error @+1 {{a WGMMA layout needs whole warpgroups (warps a multiple of 4), got 2}}
func.func @warpgroups(%x: tensor<64x64xf32, #fagpu.wgmma_acc<warps = 2>>) { return }

// -----

// expected-error @+1 {{warps must be a power of two in [1, 32], got 3}}
func.func @warps(%x: tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 3>>) { return }

// -----

// Three warpgroups stack along rows; splitting columns takes a power of two.
// expected-error @+1 {{warps must be a power of two in [1, 32], got 12}}
func.func @column_warpgroups(%x: tensor<64x192xf32, #fagpu.wgmma_acc_cols<warps = 12>>) { return }

// -----

// Column groups of mma.sync warps: a power of two, at most the warps.
// expected-error @+1 {{column groups must be a power of two in [2, warps], got 3}}
func.func @column_groups(%x: tensor<64x96xf32, #fagpu.mma_sync_acc_cols<warps = 8, columns = 3>>) { return }

// -----

// expected-error @+1 {{warps must be in [4, 32], got 36}}
func.func @too_many_warpgroups(%x: tensor<576x64xf32, #fagpu.wgmma_acc<warps = 36>>) { return }

// -----

// expected-error @+1 {{swizzle must be 0, 32, 64 or 128 bytes, got 16}}
func.func @swizzle(%x: !fagpu.smem<64x64xbf16, swizzle = 16>) { return }

// -----

// expected-error @+1 {{a 128-byte swizzle needs rows of a multiple of 128 bytes and a multiple of 8 rows}}
func.func @swizzle_rows(%x: !fagpu.smem<64x32xbf16, swizzle = 128>) { return }

// -----

// expected-error @+1 {{shared tile rows must be a multiple of 16 bytes, got 8}}
func.func @row_bytes(%x: !fagpu.smem<64x4xbf16, swizzle = 0>) { return }

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @acc_rows(%a: !fagpu.smem<32x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<32x64xf32, #acc>) {
  // expected-error @+1 {{accumulator: WGMMA accumulator tile dim 0 must be a positive multiple of 64, got 32}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<32x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<32x64xf32, #acc> -> tensor<32x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @n_mismatch(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x128xf32, #acc>) {
  // expected-error @+1 {{B has 64 columns (N), the accumulator 128}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @a_shape(%a: !fagpu.smem<64x128xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{A is 64x128, expected 64x64}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @a_layout(%a: tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{a register A operand must have the #fagpu.wgmma_a layout of the accumulator's family}}
  %r = fagpu.mma %a, %b, %c : tensor<64x64xbf16, #fagpu.mma_sync_a<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @a_warps(%a: tensor<64x64xbf16, #fagpu.wgmma_a<warps = 8>>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{A: WGMMA A operand tile dim 0 must be a positive multiple of 128, got 64}}
  %r = fagpu.mma %a, %b, %c : tensor<64x64xbf16, #fagpu.wgmma_a<warps = 8>>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @acc_type(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf16, #acc>) {
  // expected-error @+1 {{accumulates in f32, got 'f16'}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf16, #acc> -> tensor<64x64xf16, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @unswizzled(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 0>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{WGMMA reads B through a swizzled tile, got swizzle = 0}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 0>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

// A read from shared memory needs a swizzled tile too.
#acc = #fagpu.wgmma_acc<warps = 4>
func.func @a_unswizzled(%a: !fagpu.smem<64x64xbf16, swizzle = 0>, %b: !fagpu.smem<64x64xbf16, swizzle = 64>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{WGMMA reads A through a swizzled tile, got swizzle = 0}}
  %r = fagpu.mma %a, %b, %c : !fagpu.smem<64x64xbf16, swizzle = 0>, !fagpu.smem<64x64xbf16, swizzle = 64>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.mma_sync_acc<warps = 4>
func.func @sync_shared_a(%a: !fagpu.smem<64x32xbf16, swizzle = 64>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  // A transposed is stored [K, M].
  // expected-error @+1 {{A is 64x32, expected 64x64}}
  %r = fagpu.mma %a, %b, %c transpose_a transpose_b : !fagpu.smem<64x32xbf16, swizzle = 64>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

func.func @no_layout(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32>) {
  // expected-error @+1 {{accumulator must be a tensor with a #fagpu register layout, got 'tensor<64x64xf32>'}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32> -> tensor<64x64xf32>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @reduce_layout(%x: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{the per-row tile must have the layout #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>}}
  %r = fagpu.reduce_rows max %x : tensor<64x64xf32, #acc> -> tensor<64xf32, #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @reduce_type(%x: tensor<64x64xbf16, #acc>) {
  // expected-error @+1 {{reduces f32 tiles, got 'bf16'}}
  %r = fagpu.reduce_rows sum %x : tensor<64x64xbf16, #acc> -> tensor<64xbf16, #fagpu.rows<#acc>>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @expand_rows(%x: tensor<128xf32, #fagpu.rows<#acc>>) {
  // expected-error @+1 {{the per-row tile has 128 rows, the tile 64}}
  %r = fagpu.expand_rows %x : tensor<128xf32, #fagpu.rows<#acc>> -> tensor<64x64xf32, #acc>
  return
}

// -----

func.func @coords_type() {
  // expected-error @+1 {{coordinates are i32 or index, got 'i64'}}
  %r = fagpu.tile_coords dim = 0 : tensor<64x64xi64, #fagpu.wgmma_acc<warps = 4>>
  return
}

// -----

func.func @coords_dim() {
  // expected-error @+1 {{dim 1 of a rank-1 tile}}
  %r = fagpu.tile_coords dim = 1 : tensor<64xi32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
  return
}

// -----

func.func @convert(%x: tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>) {
  // expected-error @+1 {{the layouts place elements in different threads; only register permutations are supported}}
  %r = fagpu.convert_layout %x : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xbf16, #fagpu.mma_sync_acc<warps = 1>>
  return
}

// -----

func.func @copy_type(%src: memref<64x64xf16>, %row: index, %dst: !fagpu.smem<64x64xbf16, swizzle = 128>) {
  // expected-error @+1 {{source element type 'f16' differs from the tile's 'bf16'}}
  fagpu.copy_to_shared %src[%row] limit %row into %dst : memref<64x64xf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
  return
}

// -----

func.func @copy_cols(%src: memref<64x128xbf16>, %row: index, %dst: !fagpu.smem<64x64xbf16, swizzle = 128>) {
  // expected-error @+1 {{source rows have 128 elements, the tile 64}}
  fagpu.copy_to_shared %src[%row] limit %row into %dst : memref<64x128xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
  return
}

// -----

func.func @store_rank(%x: tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>, %dst: memref<64x64xf32>, %row: index) {
  // expected-error @+1 {{a rank-1 tile stores into a memref of the same rank}}
  fagpu.store_tile %x, %dst[%row] limit %row : tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>, memref<64x64xf32>
  return
}

// -----

func.func @stage_of_tile(%t: !fagpu.smem<64x64xbf16, swizzle = 128>, %i: index) {
  // expected-error @+1 {{takes a 3-D ring of stages, got '!fagpu.smem<64x64xbf16, swizzle = 128>'}}
  %s = fagpu.stage %t[%i] : !fagpu.smem<64x64xbf16, swizzle = 128> -> !fagpu.smem<64x64xbf16, swizzle = 128>
  return
}

// -----

func.func @copy_into_ring(%src: memref<64x64xbf16>, %row: index, %ring: !fagpu.smem<2x64x64xbf16, swizzle = 128>) {
  // expected-error @+1 {{copies into one stage of a ring (fagpu.stage)}}
  fagpu.async_copy_to_shared %src[%row] limit %row into %ring : memref<64x64xbf16>, !fagpu.smem<2x64x64xbf16, swizzle = 128>
  return
}

// -----

// expected-error @+1 {{an array of at least one mbarrier, got 0}}
func.func @no_barriers(%b: !fagpu.barriers<0>) { return }

// -----

// Outer sizes may be dynamic (the host encodes the map at launch), the
// innermost may not.
// expected-error @+1 {{a tensor map describes a dense 2-D to 5-D memref with a static innermost size, got 'memref<64x?xbf16>'}}
func.func @map_dynamic_row(%m: !fagpu.tensor_map<memref<64x?xbf16>, box = [64, 64]>) { return }

// -----

// expected-error @+1 {{a tensor map describes a dense 2-D to 5-D memref with a static innermost size, got 'memref<64x64xbf16, strided<[128, 1]>>'}}
func.func @map_strided(%m: !fagpu.tensor_map<memref<64x64xbf16, strided<[128, 1]>>, box = [64, 64]>) { return }

// -----

// expected-error @+1 {{a tensor map describes a dense 2-D to 5-D memref with a static innermost size, got 'memref<64xbf16>'}}
func.func @map_rank1(%m: !fagpu.tensor_map<memref<64xbf16>, box = [64, 64]>) { return }

// -----

// expected-error @+1 {{a tensor map describes a dense 2-D to 5-D memref with a static innermost size, got 'memref<1x1x1x1x64x64xbf16>'}}
func.func @map_rank6(%m: !fagpu.tensor_map<memref<1x1x1x1x64x64xbf16>, box = [64, 64]>) { return }

// -----

// expected-error @+1 {{a tensor map holds whole-byte scalars, got 'i4'}}
func.func @map_element(%m: !fagpu.tensor_map<memref<64x256xi4>, box = [64, 256]>) { return }

// -----

// expected-error @+1 {{a box is 1 to 256 rows of 128, 64 or 32 bytes (a swizzle span), got 64x48 'bf16'}}
func.func @map_box_bytes(%m: !fagpu.tensor_map<memref<64x96xbf16>, box = [64, 48]>) { return }

// -----

// expected-error @+1 {{a box is 1 to 256 rows of 128, 64 or 32 bytes (a swizzle span), got 0x64 'bf16'}}
func.func @map_box_empty(%m: !fagpu.tensor_map<memref<64x64xbf16>, box = [0, 64]>) { return }

// -----

// expected-error @+1 {{a box is 1 to 256 rows of 128, 64 or 32 bytes (a swizzle span), got 512x64 'bf16'}}
func.func @map_box_rows(%m: !fagpu.tensor_map<memref<1024x64xbf16>, box = [512, 64]>) { return }

// -----

func.func @init_count(%b: !fagpu.barriers<3>) {
  // expected-error @+1 {{has 2 arrival counts for 3 barriers}}
  fagpu.init_barriers %b arrivals = [1, 8] : !fagpu.barriers<3>
  return
}

// -----

func.func @init_zero(%b: !fagpu.barriers<2>) {
  // expected-error @+1 {{arrival counts must be in [1, 2^20), got 0}}
  fagpu.init_barriers %b arrivals = [1, 0] : !fagpu.barriers<2>
  return
}

// -----

func.func @init_huge(%b: !fagpu.barriers<1>) {
  // expected-error @+1 {{arrival counts must be in [1, 2^20), got 1048576}}
  fagpu.init_barriers %b arrivals = [1048576] : !fagpu.barriers<1>
  return
}

// -----

func.func @expect_zero(%b: !fagpu.barriers<1>, %i: index) {
  // expected-error @+1 {{attribute 'bytes' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  fagpu.arrive_expect_bytes %b[%i], 0 : !fagpu.barriers<1>
  return
}

// -----

func.func @tma_coords(%m: !fagpu.tensor_map<memref<2x4x256x64xbf16>, box = [128, 64]>, %t: !fagpu.smem<128x64xbf16, swizzle = 128>, %b: !fagpu.barriers<1>, %i: index) {
  // expected-error @+1 {{takes 3 coordinates (all but the column) for a rank-4 tensor, got 2}}
  fagpu.tma_load %m[%i, %i] into %t, %b[%i] : !fagpu.tensor_map<memref<2x4x256x64xbf16>, box = [128, 64]>, !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.barriers<1>
  return
}

// -----

func.func @tma_ring(%m: !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, %t: !fagpu.smem<2x128x64xbf16, swizzle = 128>, %b: !fagpu.barriers<1>, %i: index) {
  // expected-error @+1 {{takes one stage of a ring (fagpu.stage)}}
  fagpu.tma_load %m[%i] into %t, %b[%i] : !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, !fagpu.smem<2x128x64xbf16, swizzle = 128>, !fagpu.barriers<1>
  return
}

// -----

func.func @tma_element(%m: !fagpu.tensor_map<memref<256x64xf16>, box = [128, 64]>, %t: !fagpu.smem<128x64xbf16, swizzle = 128>, %b: !fagpu.barriers<1>, %i: index) {
  // expected-error @+1 {{tile element type 'bf16' differs from the tensor's 'f16'}}
  fagpu.tma_load %m[%i] into %t, %b[%i] : !fagpu.tensor_map<memref<256x64xf16>, box = [128, 64]>, !fagpu.smem<128x64xbf16, swizzle = 128>, !fagpu.barriers<1>
  return
}

// -----

func.func @tma_swizzle(%m: !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, %t: !fagpu.smem<128x64xbf16, swizzle = 64>, %b: !fagpu.barriers<1>, %i: index) {
  // expected-error @+1 {{needs a tile in the map's swizzle (128-byte box rows), got swizzle = 64}}
  fagpu.tma_load %m[%i] into %t, %b[%i] : !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, !fagpu.smem<128x64xbf16, swizzle = 64>, !fagpu.barriers<1>
  return
}

// -----

func.func @tma_box_rows(%m: !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, %t: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.barriers<1>, %i: index) {
  // expected-error @+1 {{tile 64x64 is not a row of 128x64 boxes}}
  fagpu.tma_load %m[%i] into %t, %b[%i] : !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.barriers<1>
  return
}

// -----

// The box check's other half (columns not a multiple of the box's) cannot
// fire: with the element type and the 128-byte swizzle checked first, a
// tile's rows and a box are both whole multiples of 128 bytes.

func.func @tma_columns(%m: !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, %t: !fagpu.smem<128x128xbf16, swizzle = 128>, %b: !fagpu.barriers<1>, %i: index) {
  // expected-error @+1 {{tile has 128 columns, the tensor's rows 64}}
  fagpu.tma_load %m[%i] into %t, %b[%i] : !fagpu.tensor_map<memref<256x64xbf16>, box = [128, 64]>, !fagpu.smem<128x128xbf16, swizzle = 128>, !fagpu.barriers<1>
  return
}

// -----

func.func @split_pool() {
  // expected-error @+1 {{registers of all warpgroups (68608) exceed the 64512 the block is launched with (168 per thread for 384 threads)}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 256) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

// Under the SM's 65536 but over the launch's 168 x 384: the compute
// warpgroups' setmaxnreg.inc would never be granted.
func.func @split_pool_launch() {
  // expected-error @+1 {{registers of all warpgroups (65536) exceed the 64512 the block is launched with (168 per thread for 384 threads)}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 32) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @split_multiple() {
  // expected-error @+1 {{register counts must be multiples of 8}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 28) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @split_multiple_consumers() {
  // expected-error @+1 {{register counts must be multiples of 8}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 236) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @split_barrier_producer() {
  // expected-error @+1 {{regions synchronise through mbarriers only}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    gpu.barrier
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @split_barrier_nested(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{regions synchronise through mbarriers only}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 240) {
    scf.for %i = %c0 to %n step %c1 {
      gpu.barrier
    }
  }
  return
}

// -----

func.func @split_registers() {
  // expected-error @+1 {{attribute 'producer_registers' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 24 whose maximum value is 256}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 16) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @split_warpgroups() {
  // expected-error @+1 {{attribute 'consumer_warpgroups' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 0, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

#acc = #fagpu.mma_sync_acc<warps = 4>
func.func @async_mma_sync(%a: tensor<64x16xbf16, #fagpu.mma_sync_a<warps = 4>>, %b: !fagpu.smem<16x64xbf16, swizzle = 0>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{only WGMMA products can be asynchronous}}
  %r = fagpu.mma %a, %b, %c async : tensor<64x16xbf16, #fagpu.mma_sync_a<warps = 4>>, !fagpu.smem<16x64xbf16, swizzle = 0>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @async_read(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) -> tensor<64x64xf32, #acc> {
  // expected-error @+1 {{an asynchronous product is read only through fagpu.mma_wait}}
  %r = fagpu.mma %a, %b, %c transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  %w = fagpu.mma_wait %r : tensor<64x64xf32, #acc>
  %s = arith.addf %r, %w : tensor<64x64xf32, #acc>
  return %s : tensor<64x64xf32, #acc>
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @wait_sync_mma(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  // expected-error @+1 {{waits for the result of an `fagpu.mma async`}}
  %w = fagpu.mma_wait %r : tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @wait_argument(%c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{waits for the result of an `fagpu.mma async`}}
  %w = fagpu.mma_wait %c : tensor<64x64xf32, #acc>
  return
}

// -----

func.func @sync_threads(%id: index) {
  // expected-error @+1 {{counts whole warps: threads must be a multiple of 32, got 100}}
  fagpu.named_barrier_sync %id, threads = 100
  return
}

// -----

func.func @arrive_threads(%id: index) {
  // expected-error @+1 {{counts whole warps: threads must be a multiple of 32, got 48}}
  fagpu.named_barrier_arrive %id, threads = 48
  return
}

// -----

func.func @sync_few(%id: index) {
  // expected-error @+1 {{attribute 'threads' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 32}}
  fagpu.named_barrier_sync %id, threads = 0
  return
}

// -----

func.func @arrive_few(%id: index) {
  // expected-error @+1 {{attribute 'threads' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 32}}
  fagpu.named_barrier_arrive %id, threads = 16
  return
}

// -----

func.func @split_sync_copy(%src: memref<64x64xbf16>, %row: index) {
  %t = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  // expected-error @+1 {{regions synchronise through mbarriers only: a block-wide barrier (gpu.barrier, or the one of a synchronous copy, copy wait or barrier initialisation) would deadlock}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    fagpu.copy_to_shared %src[%row] limit %row into %t : memref<64x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @split_copy_wait(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{regions synchronise through mbarriers only}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 240) {
    scf.for %i = %c0 to %n step %c1 {
      fagpu.wait_shared_copies pending = 0
    }
  }
  return
}

// -----

func.func @split_init_barriers(%b: !fagpu.barriers<2>) {
  // expected-error @+1 {{regions synchronise through mbarriers only}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    %p = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 240) {
    fagpu.init_barriers %b arrivals = [1, 8] : !fagpu.barriers<2>
  }
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @in_flight_without_later_product(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  %r = fagpu.mma %a, %b, %c transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  // expected-error @+1 {{leaves 1 later products in flight, but 0 were issued after it}}
  %w = fagpu.mma_wait %r in_flight = 1 : tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @in_flight_across_blocks(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>, %cond: i1) {
  %r = fagpu.mma %a, %b, %c transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  scf.if %cond {
    // expected-error @+1 {{in_flight needs the product in this block}}
    %w = fagpu.mma_wait %r in_flight = 1 : tensor<64x64xf32, #acc>
  }
  return
}

// -----

func.func @transpose_a_registers(%a: tensor<64x64xbf16, #fagpu.wgmma_a<warps = 4>>, %acc: tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>) {
  %b = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  // expected-error @+1 {{transpose_a reads A from a shared tile}}
  %r = fagpu.mma %a, %b, %acc transpose_a : tensor<64x64xbf16, #fagpu.wgmma_a<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
  return
}

// -----

func.func @transpose_a_shape(%acc: tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>) {
  %a = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
  %b = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  // expected-error @+1 {{A is 64x128, expected 64x64}}
  %r = fagpu.mma %a, %b, %acc transpose_a : !fagpu.smem<64x128xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
  return
}

// -----

func.func @accumulate_bf16(%x: tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>, %dst: memref<64x64xbf16>, %row: index) {
  // expected-error @+1 {{accumulates f32 tiles only, got 'bf16'}}
  fagpu.store_tile %x, %dst[%row] limit %row accumulate : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>, memref<64x64xbf16>
  return
}

// -----

func.func @load_rank(%src: memref<64x64xf32>, %row: index) {
  // expected-error @+1 {{a rank-1 tile loads from a memref of the same rank}}
  %x = fagpu.load_tile %src[%row] limit %row : memref<64x64xf32> -> tensor<64xf32, #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>>
  return
}

// -----

func.func @store_to_shared_i32(%x: tensor<64x64xi32, #fagpu.wgmma_acc<warps = 4>>) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x64xi32, swizzle = 128>
  // expected-error @+1 {{writes f16, bf16 or f32 tiles, got 'i32'}}
  fagpu.store_to_shared %x, %s : tensor<64x64xi32, #fagpu.wgmma_acc<warps = 4>>, !fagpu.smem<64x64xi32, swizzle = 128>
  return
}

// -----

// The shared tile's rows may be wider (padding), not narrower.
func.func @store_to_shared_shape(%x: tensor<64x128xbf16, #fagpu.wgmma_acc<warps = 4>>) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  // expected-error @+1 {{the shared tile 64x64}}
  fagpu.store_to_shared %x, %s : tensor<64x128xbf16, #fagpu.wgmma_acc<warps = 4>>, !fagpu.smem<64x64xbf16, swizzle = 128>
  return
}

// -----

func.func @reduce_to_global_swizzled(%d: memref<256x64xf32>, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x64xf32, swizzle = 128>
  // expected-error @+1 {{adds an f32 tile of plain rows (swizzle = 0)}}
  fagpu.reduce_to_global %s, %d[%row] limit %row bands = 1 : !fagpu.smem<64x64xf32, swizzle = 128>, memref<256x64xf32>
  return
}

// -----

func.func @reduce_to_global_ring(%d: memref<256x64xf32>, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<2x64x72xf32, swizzle = 0>
  // expected-error @+1 {{reads one stage of a ring (fagpu.stage)}}
  fagpu.reduce_to_global %s, %d[%row] limit %row bands = 1 : !fagpu.smem<2x64x72xf32, swizzle = 0>, memref<256x64xf32>
  return
}

// -----

func.func @reduce_to_global_element(%d: memref<256x64xbf16>, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x72xf32, swizzle = 0>
  // expected-error @+1 {{adds into a 2-D f32 memref}}
  fagpu.reduce_to_global %s, %d[%row] limit %row bands = 1 : !fagpu.smem<64x72xf32, swizzle = 0>, memref<256x64xbf16>
  return
}

// -----

func.func @reduce_to_global_wide(%d: memref<256x128xf32>, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x72xf32, swizzle = 0>
  // expected-error @+1 {{the destination has 128 columns, the tile 72}}
  fagpu.reduce_to_global %s, %d[%row] limit %row bands = 1 : !fagpu.smem<64x72xf32, swizzle = 0>, memref<256x128xf32>
  return
}

// -----

func.func @reduce_to_global_bands(%d: memref<256x64xf32>, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x72xf32, swizzle = 0>
  // expected-error @+1 {{32 bands of 64 columns are not each a multiple of 16 bytes}}
  fagpu.reduce_to_global %s, %d[%row] limit %row bands = 32 : !fagpu.smem<64x72xf32, swizzle = 0>, memref<256x64xf32>
  return
}

// -----

func.func @reduce_to_global_strides(%d: memref<256x64xf32, strided<[66, 1]>>, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x72xf32, swizzle = 0>
  // expected-error @+1 {{the destination's rows must be contiguous and 16-byte aligned}}
  fagpu.reduce_to_global %s, %d[%row] limit %row bands = 1 : !fagpu.smem<64x72xf32, swizzle = 0>, memref<256x64xf32, strided<[66, 1]>>
  return
}

// -----

func.func @reduce_to_global_bands_positive(%d: memref<256x64xf32>, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x72xf32, swizzle = 0>
  // expected-error @+1 {{attribute 'bands' failed to satisfy constraint}}
  fagpu.reduce_to_global %s, %d[%row] limit %row bands = 0 : !fagpu.smem<64x72xf32, swizzle = 0>, memref<256x64xf32>
  return
}

// -----

func.func @column_split_rows() {
  // expected-error @+1 {{column-split WGMMA accumulator tiles have 64 rows (one m64 instruction a warpgroup), got 128}}
  %c = fagpu.tile_coords dim = 0 : tensor<128x128xi32, #fagpu.wgmma_acc_cols<warps = 8>>
  return
}

// -----

func.func @column_split_register_a(%a: tensor<64x64xbf16, #fagpu.wgmma_a<warps = 8>>, %acc: tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>) {
  %b = fagpu.alloc_shared : !fagpu.smem<64x128xbf16, swizzle = 128>
  // expected-error @+1 {{warps that split the accumulator's columns all read A: it must be a shared tile}}
  %r = fagpu.mma %a, %b, %acc : tensor<64x64xbf16, #fagpu.wgmma_a<warps = 8>>, !fagpu.smem<64x128xbf16, swizzle = 128>, tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>> -> tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
  return
}

// -----

// One register repeat a layout: 192 rows (3 x 64) and 176 columns (11 x 16)
// would need two.
#acc = #fagpu.wgmma_acc<warps = 4>
func.func @two_repeats(%a: !fagpu.smem<192x64xbf16, swizzle = 128>, %b: !fagpu.smem<176x64xbf16, swizzle = 128>, %c: tensor<192x176xf32, #acc>) {
  // expected-error @+1 {{accumulator: WGMMA accumulator tile 192x176: at most one dim may be a multiple of 64 or 8 other than a power of two times it}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<192x64xbf16, swizzle = 128>, !fagpu.smem<176x64xbf16, swizzle = 128>, tensor<192x176xf32, #acc> -> tensor<192x176xf32, #acc>
  return
}

// -----

func.func @tma_reduce_plain_tile(%m: !fagpu.tensor_map<memref<1x2x256x64xf32>, box = [64, 32]>, %b: index, %h: index, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x64xf32, swizzle = 0>
  // expected-error @+1 {{needs a tile in the map's swizzle (128-byte box rows), got swizzle = 0}}
  fagpu.tma_reduce %m[%b, %h, %row] from %s bands = 1 : !fagpu.tensor_map<memref<1x2x256x64xf32>, box = [64, 32]>, !fagpu.smem<64x64xf32, swizzle = 0>
  return
}

// -----

func.func @tma_reduce_bands(%m: !fagpu.tensor_map<memref<1x2x256x64xf32>, box = [64, 32]>, %b: index, %h: index, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x64xf32, swizzle = 128>
  // expected-error @+1 {{4 bands of 64 columns are not each whole boxes of 32}}
  fagpu.tma_reduce %m[%b, %h, %row] from %s bands = 4 : !fagpu.tensor_map<memref<1x2x256x64xf32>, box = [64, 32]>, !fagpu.smem<64x64xf32, swizzle = 128>
  return
}

// -----

func.func @tma_reduce_bf16(%m: !fagpu.tensor_map<memref<1x2x256x64xbf16>, box = [64, 64]>, %b: index, %h: index, %row: index) {
  %s = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
  // expected-error @+1 {{adds an f32 tile into an f32 tensor, got 'bf16' into 'bf16'}}
  fagpu.tma_reduce %m[%b, %h, %row] from %s bands = 1 : !fagpu.tensor_map<memref<1x2x256x64xbf16>, box = [64, 64]>, !fagpu.smem<64x64xbf16, swizzle = 128>
  return
}

// -----

gpu.module @m {
  gpu.func @indices(%turns: memref<2x4x8xi32>, %i: index) kernel {
    // expected-error @+1 {{'fagpu.wait_turn' op takes 3 indices into its counters, got 1}}
    fagpu.wait_turn %turns[%i], %i : memref<2x4x8xi32>
    gpu.return
  }
}

// -----

// A reducer runs on the producer warpgroup's second warp: one producer
// warpgroup.
func.func @split_reducer_warpgroups() {
  // expected-error @+1 {{a reducer region runs on the warps of one producer warpgroup, not of 2}}
  fagpu.warp_specialize producer(warpgroups = 2, registers = 24) {
    %p = arith.constant 0 : index
  } reducer {
    fagpu.wait_global_sums
  } consumers(warpgroups = 1, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

// A transposer runs on the producer warpgroup's warps 1-3: one producer
// warpgroup, which a reducer cannot share.
func.func @split_transposer_warpgroups() {
  // expected-error @+1 {{a transposer region runs on the warps of one producer warpgroup, not of 2}}
  fagpu.warp_specialize producer(warpgroups = 2, registers = 24) {
    %p = arith.constant 0 : index
  } transposer {
    %t = arith.constant 0 : index
  } consumers(warpgroups = 1, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

func.func @split_reducer_and_transposer() {
  // expected-error @+1 {{a reducer and a transposer region would share the producer's warps}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    %p = arith.constant 0 : index
  } reducer {
    fagpu.wait_global_sums
  } transposer {
    %t = arith.constant 0 : index
  } consumers(warpgroups = 1, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

// Beside a transposer the producer is one warp too.
func.func @split_transposer_producer_work() {
  // expected-error @+1 {{with a transposer region the producer runs on one warp: it may only issue TMA loads and wait on barriers}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    fagpu.wait_global_sums
  } transposer {
    %t = arith.constant 0 : index
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

// Beside a reducer the producer is one warp: nothing that needs its
// warpgroup (a bulk reduction's band, a turn's group sync).
func.func @split_reducer_producer_work() {
  // expected-error @+1 {{with a reducer region the producer runs on one warp: it may only issue TMA loads and wait on barriers}}
  fagpu.warp_specialize producer(warpgroups = 1, registers = 24) {
    fagpu.wait_global_sums
  } reducer {
    fagpu.wait_global_sums
  } consumers(warpgroups = 2, registers = 240) {
    %c = arith.constant 0 : index
  }
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @after_sync_issue(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  // expected-error @+1 {{orders after the issue of an `fagpu.mma async`}}
  %h = fagpu.after_issue %c, %r : tensor<64x64xf32, #acc>, tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
func.func @after_issue_reads_the_product(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{an asynchronous product is read only through fagpu.mma_wait}}
  %r = fagpu.mma %a, %b, %c transpose_b async : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  %h = fagpu.after_issue %r, %r : tensor<64x64xf32, #acc>, tensor<64x64xf32, #acc>
  %w = fagpu.mma_wait %r : tensor<64x64xf32, #acc>
  return
}

// -----

#acc8 = #fagpu.wgmma_acc<warps = 8>
func.func @transpose_keeps_layout(%st: tensor<128x64xf32, #acc8>) {
  // expected-error @+1 {{the result's layout must be the transpose of the source's}}
  %s = fagpu.transpose %st : tensor<128x64xf32, #acc8> -> tensor<64x128xf32, #fagpu.wgmma_acc_cols<warps = 8>>
  return
}

// -----

#acc8 = #fagpu.wgmma_acc<warps = 8>
func.func @transpose_shape(%st: tensor<128x64xf32, #acc8>) {
  // expected-error @+1 {{the result's shape must be the source's transposed}}
  %s = fagpu.transpose %st : tensor<128x64xf32, #acc8> -> tensor<64x256xf32, #fagpu.transposed<#acc8>>
  return
}

// -----

// The transposed layout checks its parent's shape on the transpose: 64
// keys (Sᵀ's rows) cannot fill two warpgroups.
func.func @transposed_shape(%st: tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>) {
  // expected-error @+1 {{result: transposed: WGMMA accumulator tile dim 0 must be a positive multiple of 128, got 64}}
  %s = fagpu.transpose %st : tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xf32, #fagpu.transposed<#fagpu.wgmma_acc<warps = 8>>>
  return
}

// -----

func.func @f(%a: !fagpu.smem<64x128xf8E4M3FN, swizzle = 128>, %b: !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>, %acc: tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>) {
  // expected-error @+1 {{f8E4M3FN operands must be K-major: B as [N, K] (transpose_b), A not transposed}}
  %r = fagpu.mma %a, %b, %acc : !fagpu.smem<64x128xf8E4M3FN, swizzle = 128>, !fagpu.smem<128x128xf8E4M3FN, swizzle = 128>, tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x128xf32, #fagpu.wgmma_acc<warps = 4>>
  return
}

// -----

func.func @f(%a: tensor<64x128xf8E4M3FN, #fagpu.wgmma_a<warps = 4>>, %b: !fagpu.smem<64x128xf8E4M3FN, swizzle = 128>, %acc: tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>) {
  // expected-error @+1 {{a register A operand must have the #fagpu.wgmma_a8 layout of the accumulator's family}}
  %r = fagpu.mma %a, %b, %acc transpose_b : tensor<64x128xf8E4M3FN, #fagpu.wgmma_a<warps = 4>>, !fagpu.smem<64x128xf8E4M3FN, swizzle = 128>, tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xf32, #fagpu.wgmma_acc<warps = 4>>
  return
}

// -----

func.func @f(%p: tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>>) {
  // expected-error @+1 {{converts to #fagpu.wgmma_a8 from 8-bit elements only, got 'bf16'}}
  %a = fagpu.convert_layout %p : tensor<64x64xbf16, #fagpu.wgmma_acc<warps = 4>> -> tensor<64x64xbf16, #fagpu.wgmma_a8<warps = 4>>
  return
}

// -----

func.func @f(%s: !fagpu.smem<128x256xf8E4M3FN, swizzle = 128>, %d: !fagpu.smem<128x256xf8E4M3FN, swizzle = 128>) {
  // expected-error @+1 {{a 128x256 tile's transpose is 256x128, got 128x256}}
  fagpu.transpose_shared %s, %d : !fagpu.smem<128x256xf8E4M3FN, swizzle = 128>, !fagpu.smem<128x256xf8E4M3FN, swizzle = 128>
  return
}

// -----

func.func @f(%s: !fagpu.smem<64x64xbf16, swizzle = 128>, %d: !fagpu.smem<64x64xbf16, swizzle = 128>) {
  // expected-error @+1 {{transposes 8-bit tiles, got 'bf16'}}
  fagpu.transpose_shared %s, %d : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>
  return
}

// -----

func.func @transpose_pair_keys_rows(%s: !fagpu.smem<16x128xf8E4M3FN, swizzle = 128>, %d: !fagpu.smem<128x16xf8E4M3FN, swizzle = 0>) {
  // expected-error @+1 {{pair_keys permutes rows within groups of 32, got 16 rows}}
  fagpu.transpose_shared %s, %d pair_keys : !fagpu.smem<16x128xf8E4M3FN, swizzle = 128>, !fagpu.smem<128x16xf8E4M3FN, swizzle = 0>
  return
}

// -----

#acc = #fagpu.wgmma_acc<warps = 4>
#pairs = #fagpu.wgmma_a8_pairs<warps = 4>
// The paired-key operand's elements are the accumulator's in each thread:
// a register permutation, which the verifier's general rule accepts; the
// transposed accumulator's are not.
func.func @convert_to_a8_pairs(%p: tensor<64x64xf8E4M3FN, #acc>, %t: tensor<64x64xf8E4M3FN, #fagpu.transposed<#acc>>) {
  %ok = fagpu.convert_layout %p : tensor<64x64xf8E4M3FN, #acc> -> tensor<64x64xf8E4M3FN, #pairs>
  // expected-error @+1 {{the layouts place elements in different threads; only register permutations are supported}}
  %bad = fagpu.convert_layout %t : tensor<64x64xf8E4M3FN, #fagpu.transposed<#acc>> -> tensor<64x64xf8E4M3FN, #pairs>
  return
}

// -----

#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
func.func @warp_any_of_floats(%x: tensor<64xf32, #rows>) {
  // expected-error @+1 {{takes an i1 tile, got 'f32'}}
  %any = fagpu.warp_any %x : tensor<64xf32, #rows>
  return
}

// -----

func.func @warp_any_without_layout(%x: tensor<64xi1>) {
  // expected-error @+1 {{predicate must be a tensor with a #fagpu register layout}}
  %any = fagpu.warp_any %x : tensor<64xi1>
  return
}

// -----

#acc = #fagpu.mma_sync_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>
func.func @accumulate_rows_into_whole_rows(%p: tensor<64x16xf32, #acc>, %alpha: tensor<64xf32, #rows>) {
  // expected-error @below {{the per-row tile must have the layout #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>, partial = true>, got #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>}}
  %l = fagpu.accumulate_rows %p scaled %alpha into %alpha : tensor<64x16xf32, #acc>, tensor<64xf32, #rows> -> tensor<64xf32, #rows>
  return
}

// -----

#acc = #fagpu.mma_sync_acc<warps = 4>
#rows = #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>
func.func @complete_whole_rows(%l: tensor<64xf32, #rows>) {
  // expected-error @below {{adds up per-lane parts (#fagpu.rows<..., partial = true>), got #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>}}
  %s = fagpu.complete_rows %l : tensor<64xf32, #rows> -> tensor<64xf32, #rows>
  return
}

// -----

#parts = #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>, partial = true>
func.func @expand_parts(%l: tensor<64xf32, #parts>) {
  // expected-error @below {{the per-row tile must have the layout #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>>, got #fagpu.rows<#fagpu.mma_sync_acc<warps = 4>, partial = true>}}
  %e = fagpu.expand_rows %l : tensor<64xf32, #parts> -> tensor<64x16xf32, #fagpu.mma_sync_acc<warps = 4>>
  return
}

// -----

// A tile grid is a kernel's statement of its tiles.
func.func @tile_grid_outside_kernel(%n: index) {
  // expected-error @below {{states a kernel's tiles: it must be in a gpu.func kernel}}
  fagpu.tile_grid %n, %n, %n
  return
}

// -----

gpu.module @m {
  gpu.func @two_tile_grids(%n: index) kernel {
    fagpu.tile_grid %n, %n, %n
    // expected-error @below {{must be the only fagpu.tile_grid of its kernel}}
    fagpu.tile_grid %n, %n, %n
    gpu.return
  }
}
