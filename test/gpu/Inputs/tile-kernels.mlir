// Kernels written at the GPU tile level (fagpu) that the H200 check runs
// (scripts/gpu/tile-check.py): one-block attention, S = Q Kᵀ on shared x
// shared WGMMA, masked online-softmax statistics, P·V with P from registers,
// O and the base-2 LSE stored. Compiled here with
//   fa-compile test/gpu/Inputs/tile-kernels.mlir --chip=sm_90a -o PREFIX
// and assembled by ptxas in CI (test/Conversion/FAGPUToNVVM/tile-kernels-ptx.test).
//
// tile_attention: D = 64, one warpgroup, a 64-row Q block per CTA.
// tile_attention_d128_2wg: D = 128 (two 128-byte swizzle atoms along K and N),
// two warpgroups, a 128-row Q block per CTA.
#acc = #fagpu.wgmma_acc<warps = 4>
#a = #fagpu.wgmma_a<warps = 4>
#rows = #fagpu.rows<#fagpu.wgmma_acc<warps = 4>>
#acc8 = #fagpu.wgmma_acc<warps = 8>
#a8 = #fagpu.wgmma_a<warps = 8>
#rows8 = #fagpu.rows<#fagpu.wgmma_acc<warps = 8>>
module attributes {gpu.container_module} {
gpu.module @fa_kernels {
  gpu.func @tile_attention(%q: memref<256x64xbf16>, %k: memref<128x64xbf16>, %v: memref<128x64xbf16>, %o: memref<256x64xf32>, %nq: index, %nk: index) kernel {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %bid = gpu.block_id x
    %row0 = arith.muli %bid, %c64 : index
    %qs = fagpu.alloc_shared : !fagpu.smem<64x64xbf16, swizzle = 128>
    %ks = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    %vs = fagpu.alloc_shared : !fagpu.smem<128x64xbf16, swizzle = 128>
    fagpu.copy_to_shared %q[%row0] limit %nq into %qs : memref<256x64xbf16>, !fagpu.smem<64x64xbf16, swizzle = 128>
    fagpu.copy_to_shared %k[%c0] limit %nk into %ks : memref<128x64xbf16>, !fagpu.smem<128x64xbf16, swizzle = 128>
    fagpu.copy_to_shared %v[%c0] limit %nk into %vs : memref<128x64xbf16>, !fagpu.smem<128x64xbf16, swizzle = 128>
    %zero = arith.constant dense<0.0> : tensor<64x128xf32, #acc>
    %s = fagpu.mma %qs, %ks, %zero transpose_b : !fagpu.smem<64x64xbf16, swizzle = 128>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x128xf32, #acc> -> tensor<64x128xf32, #acc>
    %scale = arith.constant dense<0.18033688> : tensor<64x128xf32, #acc>
    %s2 = arith.mulf %s, %scale : tensor<64x128xf32, #acc>
    %cols = fagpu.tile_coords dim = 1 : tensor<64x128xi32, #acc>
    %nk32 = arith.index_cast %nk : index to i32
    %lim = tensor.splat %nk32 : tensor<64x128xi32, #acc>
    %in = arith.cmpi slt, %cols, %lim : tensor<64x128xi32, #acc>
    %ninf = arith.constant dense<0xFF800000> : tensor<64x128xf32, #acc>
    %s3 = arith.select %in, %s2, %ninf : tensor<64x128xi1, #acc>, tensor<64x128xf32, #acc>
    %m = fagpu.reduce_rows max %s3 : tensor<64x128xf32, #acc> -> tensor<64xf32, #rows>
    %me = fagpu.expand_rows %m : tensor<64xf32, #rows> -> tensor<64x128xf32, #acc>
    %d = arith.subf %s3, %me : tensor<64x128xf32, #acc>
    %p = math.exp2 %d : tensor<64x128xf32, #acc>
    %l = fagpu.reduce_rows sum %p : tensor<64x128xf32, #acc> -> tensor<64xf32, #rows>
    %pb = arith.truncf %p : tensor<64x128xf32, #acc> to tensor<64x128xbf16, #acc>
    %pa = fagpu.convert_layout %pb : tensor<64x128xbf16, #acc> -> tensor<64x128xbf16, #a>
    %o0 = arith.constant dense<0.0> : tensor<64x64xf32, #acc>
    %ov = fagpu.mma %pa, %vs, %o0 : tensor<64x128xbf16, #a>, !fagpu.smem<128x64xbf16, swizzle = 128>, tensor<64x64xf32, #acc> -> tensor<64x64xf32, #acc>
    %le = fagpu.expand_rows %l : tensor<64xf32, #rows> -> tensor<64x64xf32, #acc>
    %on = arith.divf %ov, %le : tensor<64x64xf32, #acc>
    fagpu.store_tile %on, %o[%row0] limit %nq : tensor<64x64xf32, #acc>, memref<256x64xf32>
    gpu.return
  }

  gpu.func @tile_attention_d128_2wg(%q: memref<256x128xbf16>, %k: memref<128x128xbf16>, %v: memref<128x128xbf16>, %o: memref<256x128xf32>, %lse: memref<256xf32>, %nq: index, %nk: index) kernel {
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 128 : index
    %bid = gpu.block_id x
    %row0 = arith.muli %bid, %c64 : index
    %qs = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %ks = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    %vs = fagpu.alloc_shared : !fagpu.smem<128x128xbf16, swizzle = 128>
    fagpu.copy_to_shared %q[%row0] limit %nq into %qs : memref<256x128xbf16>, !fagpu.smem<128x128xbf16, swizzle = 128>
    fagpu.copy_to_shared %k[%c0] limit %nk into %ks : memref<128x128xbf16>, !fagpu.smem<128x128xbf16, swizzle = 128>
    fagpu.copy_to_shared %v[%c0] limit %nk into %vs : memref<128x128xbf16>, !fagpu.smem<128x128xbf16, swizzle = 128>
    %zero = arith.constant dense<0.0> : tensor<128x128xf32, #acc8>
    %s = fagpu.mma %qs, %ks, %zero transpose_b : !fagpu.smem<128x128xbf16, swizzle = 128>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<128x128xf32, #acc8> -> tensor<128x128xf32, #acc8>
    %scale = arith.constant dense<0.12751743> : tensor<128x128xf32, #acc8>
    %s2 = arith.mulf %s, %scale : tensor<128x128xf32, #acc8>
    %cols = fagpu.tile_coords dim = 1 : tensor<128x128xi32, #acc8>
    %nk32 = arith.index_cast %nk : index to i32
    %lim = tensor.splat %nk32 : tensor<128x128xi32, #acc8>
    %in = arith.cmpi slt, %cols, %lim : tensor<128x128xi32, #acc8>
    %ninf = arith.constant dense<0xFF800000> : tensor<128x128xf32, #acc8>
    %s3 = arith.select %in, %s2, %ninf : tensor<128x128xi1, #acc8>, tensor<128x128xf32, #acc8>
    %m = fagpu.reduce_rows max %s3 : tensor<128x128xf32, #acc8> -> tensor<128xf32, #rows8>
    %me = fagpu.expand_rows %m : tensor<128xf32, #rows8> -> tensor<128x128xf32, #acc8>
    %d = arith.subf %s3, %me : tensor<128x128xf32, #acc8>
    %p = math.exp2 %d : tensor<128x128xf32, #acc8>
    %l = fagpu.reduce_rows sum %p : tensor<128x128xf32, #acc8> -> tensor<128xf32, #rows8>
    %pb = arith.truncf %p : tensor<128x128xf32, #acc8> to tensor<128x128xbf16, #acc8>
    %pa = fagpu.convert_layout %pb : tensor<128x128xbf16, #acc8> -> tensor<128x128xbf16, #a8>
    %o0 = arith.constant dense<0.0> : tensor<128x128xf32, #acc8>
    %ov = fagpu.mma %pa, %vs, %o0 : tensor<128x128xbf16, #a8>, !fagpu.smem<128x128xbf16, swizzle = 128>, tensor<128x128xf32, #acc8> -> tensor<128x128xf32, #acc8>
    %le = fagpu.expand_rows %l : tensor<128xf32, #rows8> -> tensor<128x128xf32, #acc8>
    %on = arith.divf %ov, %le : tensor<128x128xf32, #acc8>
    fagpu.store_tile %on, %o[%row0] limit %nq : tensor<128x128xf32, #acc8>, memref<256x128xf32>
    %lg = math.log2 %l : tensor<128xf32, #rows8>
    %lse2 = arith.addf %m, %lg : tensor<128xf32, #rows8>
    fagpu.store_tile %lse2, %lse[%row0] limit %nq : tensor<128xf32, #rows8>, memref<256xf32>
    gpu.return
  }
}
}
