//===- FAGPUTypes.td - Shared-memory tiles -----------------*- tablegen -*-===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPUTYPES_TD
#define FA_DIALECT_FAGPU_IR_FAGPUTYPES_TD

include "fa/Dialect/FAGPU/IR/FAGPUDialect.td"
include "mlir/IR/AttrTypeBase.td"

def FAGPU_SharedTile : TypeDef<FAGPU_Dialect, "SharedTile"> {
  let mnemonic = "smem";
  let summary = "A 2-D tile in shared memory with its swizzle";
  let description = [{
    `!fagpu.smem<64x128xbf16, swizzle = 128>`: a row-major tile in the
    block's shared memory. With `swizzle = S` (32, 64 or 128 bytes) rows are
    cut into S-byte atoms stored one column band after another, and inside an
    atom the 16-byte chunks of a row are permuted as TMA's
    `CU_TENSOR_MAP_SWIZZLE_<S>B` writes them and a WGMMA descriptor of the
    same mode reads them (`swizzledByteOffset` in TileLayout.h). `swizzle =
    0` is plain row-major. The base address is 1024-byte aligned.

    A leading third dimension makes a ring of stages for multi-buffered
    copies, `!fagpu.smem<2x128x64xbf16, swizzle = 128>`, each stage
    1024-byte aligned; `fagpu.stage` picks one.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType, "int64_t":$swizzle);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Stages of a ring (1 for a plain tile).
    int64_t getStages() const {
      return getShape().size() == 3 ? getShape()[0] : 1;
    }
    int64_t getRows() const { return getShape()[getShape().size() - 2]; }
    int64_t getCols() const { return getShape().back(); }
    /// One stage of a ring (the tile itself for a plain tile).
    SharedTileType getStageType() const {
      return get(getContext(), {getRows(), getCols()}, getElementType(),
                 getSwizzle());
    }
    /// A ring of `stages` tiles of this one's stage type.
    SharedTileType getRingType(int64_t stages) const {
      return get(getContext(), {stages, getRows(), getCols()},
                 getElementType(), getSwizzle());
    }
    /// Bytes from one stage to the next: 1024-byte aligned.
    int64_t getStageStride() const;
    int64_t getElementBytes() const {
      return getElementType().getIntOrFloatBitWidth() / 8;
    }
    int64_t getRowBytes() const { return getCols() * getElementBytes(); }
    int64_t getSizeInBytes() const {
      return (getStages() - 1) * getStageStride() + getRows() * getRowBytes();
    }
    /// Byte offset of element (row, col) from the tile's base.
    int64_t byteOffset(int64_t row, int64_t col) const;
    /// The widest TMA / WGMMA swizzle (128, 64 or 32 bytes) whose span
    /// divides a row of `rowBytes`; 0 where none does.
    static int64_t widestSwizzle(int64_t rowBytes) {
      for (int64_t span : {128, 64, 32})
        if (rowBytes % span == 0)
          return span;
      return 0;
    }
  }];
}

def FAGPU_Barriers : TypeDef<FAGPU_Dialect, "Barriers"> {
  let mnemonic = "barriers";
  let summary = "An array of mbarriers in shared memory";
  let description = [{
    `!fagpu.barriers<9>`: nine 8-byte mbarrier objects in the block's shared
    memory, indexed by `fagpu.wait_barrier %b[%i]` and friends. Each counts
    its arrivals (set by `fagpu.init_barriers`) and the bytes of
    asynchronous copies that complete on it; a phase completes when both
    reach zero, and waiters name the phase by its parity.
  }];
  let parameters = (ins "int64_t":$count);
  let assemblyFormat = "`<` $count `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getSizeInBytes() const { return getCount() * 8; }
  }];
}

def FAGPU_TensorMap : TypeDef<FAGPU_Dialect, "TensorMap"> {
  let mnemonic = "tensor_map";
  let summary = "A TMA descriptor of a global tensor, boxes of rows x cols";
  let description = [{
    `!fagpu.tensor_map<memref<2x16x8192x128xbf16>, box = [128, 64]>`: a
    CUtensorMap over a dense row-major 4-D [batch, heads, rows, cols]
    tensor, copying boxes of `box` rows and columns in the swizzle whose
    span is a box row (128 bytes; 64 or 32 where the tiles' rows are not
    multiples of 128 bytes, `box = [128, 32]` at head dim 96); elements
    past the tensor's bounds read as zero. It is a kernel
    parameter, encoded on the host and passed by value (a grid constant).
    Sizes but the innermost may be dynamic (`memref<?x16x?x128xbf16>`):
    the host encodes the map from the launch's tensors.
  }];
  let parameters = (ins "::mlir::MemRefType":$tensor, "int64_t":$boxRows,
                        "int64_t":$boxCols);
  let assemblyFormat = [{
    `<` $tensor `,` `box` `=` `[` $boxRows `,` $boxCols `]` `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getBoxBytes() const {
      return getBoxRows() * getBoxCols() *
             getTensor().getElementTypeBitWidth() / 8;
    }
  }];
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUTYPES_TD
