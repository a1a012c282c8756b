//===- TileLowering.h - Per-thread code for register tiles -----*- C++ -*-===//
//
// What every fagpu lowering needs: the type a register tile becomes (the
// thread's registers as a 1-D vector, in the layout's register order), the
// thread's lane and warp, and the tile coordinates of its registers, all
// asked of the tile's TileLayout.
//
//===----------------------------------------------------------------------===//

#ifndef FA_LIB_CONVERSION_FAGPUTONVVM_TILELOWERING_H
#define FA_LIB_CONVERSION_FAGPUTONVVM_TILELOWERING_H

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace fagpu {

/// Index register tiles hold 32-bit integers. Every position a kernel
/// addresses fits (tensors have fewer than 2^31 elements, and TMA coordinates
/// are 32-bit), and the tile level's index tiles are in-tile coordinates and
/// the mask's clamped bounds (fa-decompose-attention): 64-bit compares would
/// cost two instructions and two registers an element.
constexpr unsigned kIndexRegisterBits = 32;

/// The element type of a register tile's registers: i32 for index.
Type registerElementType(Type element);

/// A register tile's registers: vector<registers x registerElementType>,
/// but e4m3 tiles' as words of four (vector<registers / 4 x i32>).
VectorType registerVectorType(RankedTensorType type);

/// Register tiles -> registerVectorType; shared tiles -> the shared-memory
/// pointer
/// (!llvm.ptr<3>) of their first byte.
class TileTypeConverter : public TypeConverter {
public:
  explicit TileTypeConverter(MLIRContext *ctx);
};

/// True if `type` is a register tile (a tensor with a fagpu layout) or a
/// shared tile.
bool isTileType(Type type);

/// The threads that execute the code at the builder's insertion point: the
/// block, or the region of a `fagpu.warp_specialize` it is nested in.
struct ThreadGroup {
  int64_t firstThread = 0;
  /// 0 for the whole block (its size is only known at launch).
  int64_t threads = 0;
  static ThreadGroup enclosing(OpBuilder &b);
};

/// An error on `op` unless the code at the builder's point runs on at
/// least `bands` warpgroups (a band that no warpgroup issues would never be
/// added); the group's size is the block's (`fa.block`) outside a
/// `fagpu.warp_specialize`.
LogicalResult checkBandIssuers(OpBuilder &b, Operation *op, int64_t bands);

/// The thread's index in its ThreadGroup (index value).
Value emitGroupThreadId(OpBuilder &b, Location loc);
/// Emits `body` under `if (thread index in its group == 0)`.
void onFirstThreadOfGroup(OpBuilder &b, Location loc,
                          function_ref<void()> body);
/// The number of threads of its ThreadGroup (index value).
Value emitGroupThreads(OpBuilder &b, Location loc);
/// The number of threads of its ThreadGroup where the IR says it (a
/// `fagpu.warp_specialize` region's, or the kernel's x extent from
/// `fa.block`), else 0.
int64_t knownGroupThreads(OpBuilder &b);

/// The thread's lane (an index value).
Value emitLaneId(OpBuilder &b, Location loc);

/// The thread's lane and warp in its ThreadGroup (index values): layouts
/// count warps from the group's first warp. The warp index comes from one
/// broadcast at the kernel's entry, so any thread may ask anywhere.
struct ThreadPosition {
  Value lane, warp;
  static ThreadPosition get(OpBuilder &b, Location loc);
};

/// The (row, col) of register 0 of this thread: the part of every register's
/// coordinate that depends on the lane and warp (index values).
std::pair<Value, Value> emitThreadCoords(OpBuilder &b, Location loc,
                                         const TileLayout &layout,
                                         const ThreadPosition &thread);

/// Where the thread's register 0 lands when a tile of `layout` covers rows
/// [firstRow, ...) of a global matrix: its row there and its tile column.
struct ThreadTileOrigin {
  ThreadPosition thread;
  Value row, col;
  static ThreadTileOrigin get(OpBuilder &b, Location loc,
                              const TileLayout &layout, Value firstRow);
};

/// Whether registers 2i and 2i + 1 of every thread are columns c and c + 1
/// of one row with c even: register bit 0 steps one column, every other
/// basis an even number of columns.
bool holdsColumnPairs(const TileLayout &layout);

/// i1: this thread is the first of the threads holding a copy of its
/// elements (lane and warp bits along which the layout replicates are 0).
Value emitIsFirstCopy(OpBuilder &b, Location loc, const TileLayout &layout,
                      const ThreadPosition &thread);

/// Splits a vector into its scalars and builds one from scalars.
SmallVector<Value> unpackVector(OpBuilder &b, Location loc, Value vector);
Value packVector(OpBuilder &b, Location loc, VectorType type,
                 ArrayRef<Value> scalars);
/// Lane 0's register of each element (row, col) of a register tile's
/// layout.
DenseMap<std::pair<int64_t, int64_t>, int64_t>
registersByElement(const TileLayout &layout);
/// For each register of `to`, the register of `from` at the same element
/// of lane 0: a layout conversion within each thread (one that keeps the
/// lane and warp bases, verified).
SmallVector<int64_t> sourceRegisters(const TileLayout &from,
                                     const TileLayout &to);
/// Two 16-bit registers as one 32-bit word, `low` in its low half (a column
/// pair as stmatrix and the 16-byte stores take it).
Value packPairWord(OpBuilder &b, Location loc, Value low, Value high);

/// Index arithmetic at one location (also swizzledByteOffsetIn's
/// arithmetic).
struct IndexArith {
  using Int = Value;
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  /// x + y, x itself for y = 0.
  Value add(Value x, int64_t y) { return y == 0 ? x : add(x, c(y)); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, c(y));
  }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, c(y));
  }
  Value xorOp(Value x, Value y) { return arith::XOrIOp::create(b, loc, x, y); }
};

/// A thread's shared offsets into one tile at rows and columns a constant
/// away from its own (threadRow, threadCol): each is an earlier one's plus
/// a constant wherever the tile's layout function gives the same difference
/// at every thread's (row, col) (`starts`). A thread then keeps a register
/// per swizzle phase its accesses meet, not one per access, and the
/// constants stay immediates of the loads and stores. The offsets are built
/// where they are first asked for: later uses must be dominated by that.
class ThreadSharedOffsets {
public:
  ThreadSharedOffsets(SharedTileType tile, Value threadRow, Value threadCol,
                      SmallVector<std::pair<int64_t, int64_t>> starts)
      : tile(tile), threadRow(threadRow), threadCol(threadCol),
        starts(std::move(starts)) {}
  /// The address of (threadRow + dr, threadCol + dc) in the tile at `base`
  /// (a shared pointer): base + a value, then + a constant.
  Value pointer(OpBuilder &b, Location loc, Value base, int64_t dr, int64_t dc);

private:
  struct Known {
    int64_t dr, dc;
    Value offset;
  };
  SharedTileType tile;
  Value threadRow, threadCol;
  SmallVector<std::pair<int64_t, int64_t>> starts;
  SmallVector<Known> known;
};

/// Byte offset (index) of element (row, col) of a shared tile, for rows and
/// columns known only in the kernel; the same function as
/// SharedTileType::byteOffset.
Value emitSharedByteOffset(OpBuilder &b, Location loc, SharedTileType tile,
                           Value row, Value col);

/// The global address (i64) of element `indices` of a memref.
Value emitGlobalAddress(OpBuilder &b, Location loc, Value memref,
                        ValueRange indices);

/// Pointer `bytes` (index) past `base` in shared memory.
Value emitSharedAddress(OpBuilder &b, Location loc, Value base, Value bytes);

/// Whether `op` takes or yields a register or shared tile.
bool hasTileTypes(Operation *op);

/// Lowers elementwise ops, splats, coordinates, row reductions and
/// expansions and layout conversions on register tiles (patterns in
/// RegisterTilesToNVVM.cpp).
/// `exp2OnFmaEvery` > 0 computes every such element of a tile's math.exp2
/// on the FMA pipe (fa::emitExp2OnFma).
void populateRegisterTilesToNVVMPatterns(TileTypeConverter &converter,
                                         RewritePatternSet &patterns,
                                         int64_t exp2OnFmaEvery = 0);

/// e4m3 register tiles: f32 tiles rounded to them, their conversions to
/// WGMMA's 8-bit A layouts (E4M3TilesToNVVM.cpp).
void populateE4M3TilesToNVVMPatterns(TileTypeConverter &converter,
                                     RewritePatternSet &patterns);

/// Lowers tile coordinates, and compares of coordinates against bounds as
/// compares of each register's static offset (TileCoordsToNVVM.cpp).
void populateTileCoordsToNVVMPatterns(TileTypeConverter &converter,
                                      RewritePatternSet &patterns);

/// Lowers the mbarrier and TMA ops (patterns in BarriersToNVVM.cpp).
void populateBarriersToNVVMPatterns(TileTypeConverter &converter,
                                    RewritePatternSet &patterns);

/// Replaces each `fagpu.warp_specialize` (whose regions are already
/// per-thread code) by a branch on the thread's warpgroup, each side
/// starting with its `setmaxnreg`.
void lowerWarpSpecialize(Operation *root);
/// Marks the fagpu.warp_specialize ops whose producer region only issues TMA
/// loads and waits for their stages (one thread issues, any may wait): their
/// lowering runs it on the producer's first warp alone. Before the
/// conversion, which turns those ops into NVVM's.
void markSingleWarpProducers(Operation *root);

/// A barrier of the block, or (`warpgroup`) of the executing thread's
/// warpgroup alone: named barrier kWarpgroupSyncBarrier + its index, 128
/// threads.
void emitSync(OpBuilder &b, Location loc, SyncScope scope);

/// Whether the kernel being built runs on sm_90 or later (an async proxy
/// for the tensor cores' and bulk copies' reads of shared memory; vector
/// reductions to global memory), by its gpu.module's NVVM target; assumed
/// without one (the lowering alone, before a target is attached).
bool targetsSm90OrLater(OpBuilder &b);

/// Makes the shared tiles written so far visible to the threads of `scope`
/// and to the tensor cores and bulk copies, which read shared memory
/// through the async proxy (a proxy fence and a barrier; below sm_90 the
/// barrier alone).
void publishSharedWrites(OpBuilder &b, Location loc,
                         SyncScope scope = SyncScope::block);

/// Lowers `fagpu.load_tile` and `fagpu.store_to_shared` (patterns in
/// TileAccessToNVVM.cpp); with `matrixStores`, 16-bit accumulator tiles go
/// to shared memory through `stmatrix`.
void populateTileAccessToNVVMPatterns(TileTypeConverter &converter,
                                      RewritePatternSet &patterns,
                                      bool matrixStores);

/// Lowers `fagpu.wait_turn` and `fagpu.pass_turn` (TurnsToNVVM.cpp).
void populateTurnsToNVVMPatterns(TileTypeConverter &converter,
                                 RewritePatternSet &patterns);

/// Lowers `fagpu.store_tile` (patterns in StoreTileToNVVM.cpp).
void populateStoreTileToNVVMPatterns(TileTypeConverter &converter,
                                     RewritePatternSet &patterns);

/// Lowers `fagpu.mma` with a WGMMA accumulator (patterns in MmaToWGMMA.cpp);
/// `descriptorsAtUse` builds each shared operand's descriptor where the
/// product is issued, opaque to loop-invariant code motion.
void populateMmaToWGMMAPatterns(TileTypeConverter &converter,
                                RewritePatternSet &patterns,
                                bool descriptorsAtUse = false);

/// Lowers the copies of global rows into shared tiles (synchronous and
/// cp.async), their commit and wait (SharedCopiesToNVVM.cpp).
void populateSharedCopiesToNVVMPatterns(TileTypeConverter &converter,
                                        RewritePatternSet &patterns);

/// Lowers `fagpu.mma` with an mma.sync accumulator (MmaToMmaSync.cpp).
void populateMmaToMmaSyncPatterns(TileTypeConverter &converter,
                                  RewritePatternSet &patterns);

} // namespace fagpu
} // namespace mlir

#endif // FA_LIB_CONVERSION_FAGPUTONVVM_TILELOWERING_H
