// RUN: fa-opt %s -split-input-file -verify-diagnostics
// RUN: not fa-opt %s -split-input-file 2>/dev/null

// One case per verifier branch of the GPU tile level.

// expected-error @+1 {{a WGMMA layout needs whole warpgroups (warps a multiple of 4), got 2}}
func.func @warpgroups(%x: tensor<64x64xf32, #fagpu.wgmma_acc<warps = 2>>) { return }

// -----

// expected-error @+1 {{warps must be a power of two in [1, 32], got 3}}
func.func @warps(%x: tensor<64x64xf32, #fagpu.mma_sync_acc<warps = 3>>) { return }

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
  // expected-error @+1 {{accumulator: WGMMA accumulator tile dim 0 must be a power of two and a multiple of 64, got 32}}
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
  // expected-error @+1 {{A: WGMMA A operand tile dim 0 must be a power of two and a multiple of 128, got 64}}
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
  // expected-error @+1 {{WGMMA reads B through a 128-byte-swizzled tile, got swizzle = 0}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 0>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
  return
}

// -----

#acc = #fagpu.mma_sync_acc<warps = 4>
func.func @sync_shared_a(%a: !fagpu.smem<64x64xbf16, swizzle = 128>, %b: !fagpu.smem<64x64xbf16, swizzle = 128>, %c: tensor<64x64xf32, #acc>) {
  // expected-error @+1 {{mma.sync takes A from registers}}
  %r = fagpu.mma %a, %b, %c transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<64x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
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
