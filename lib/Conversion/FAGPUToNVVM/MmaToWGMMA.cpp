//===- MmaToWGMMA.cpp - fagpu.mma on Hopper's warpgroup MMA ---------------===//
//
// An accumulator in the #fagpu.wgmma_acc layout is the D fragment of
// wgmma.mma_async.m64nNk16, one instruction per 64 rows of a warpgroup and
// k16 step: registers [rep * N/2, (rep + 1) * N/2) of a thread are the
// fragment of its m-repeat `rep`. Shared operands are read through matrix
// descriptors built from the tile's swizzle; a register A operand
// (#fagpu.wgmma_a, e.g. P for P·V) goes through the register-A form, the one
// wgmma MLIR's NVVM dialect lacks, as one inline PTX instruction.
//
//===----------------------------------------------------------------------===//

#include "TileLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include <numeric>

using namespace mlir;
using namespace mlir::fagpu;

namespace {

constexpr int64_t kWarpgroupRows = 64;

/// K of one instruction: 32 bytes of each operand row (k16 for 16-bit
/// elements, k32 for 8-bit ones).
int64_t instructionK(Type element) {
  return 32 / (element.getIntOrFloatBitWidth() / 8);
}

/// wgmma's layout-type field (bits 62-63) for a swizzle of `bytes`: 1 for
/// 128 B, 2 for 64 B, 3 for 32 B.
int64_t swizzleMode(int64_t bytes) {
  return bytes == 128 ? 1 : bytes == 64 ? 2 : 3;
}

/// The matrix descriptor of a swizzled operand (wgmma's "matrix
/// descriptor"): start address >> 4 in bits 0-13, leading-dimension byte
/// offset >> 4 in 16-29, stride-dimension byte offset >> 4 in 32-45, the
/// swizzle mode in bits 62-63.
Value emitDescriptor(OpBuilder &b, Location loc, Value address,
                     int64_t leadingBytes, int64_t strideBytes,
                     int64_t swizzleBytes, bool atUse) {
  Type i64 = b.getI64Type();
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  };
  Value raw = LLVM::PtrToIntOp::create(b, loc, i64, address);
  // At use: through an opaque move, so that the descriptors of a tile that
  // stays put across a loop are not hoisted out of it and held in
  // registers for the whole loop.
  if (atUse)
    raw =
        LLVM::InlineAsmOp::create(
            b, loc, i64, ValueRange{raw}, "mov.b64 $0, $1;", "=l,l",
            /*has_side_effects=*/true, /*is_align_stack=*/false,
            LLVM::tailcallkind::TailCallKind::None,
            LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
            ArrayAttr())
            .getResult(0);
  // One op per statement: argument evaluation order is unspecified.
  Value shift = c(4);
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, raw, c(0x3FFFF)), shift);
  int64_t fixed = ((leadingBytes >> 4) & 0x3FFF) << 16 |
                  ((strideBytes >> 4) & 0x3FFF) << 32 |
                  swizzleMode(swizzleBytes) << 62;
  return arith::OrIOp::create(b, loc, start, c(fixed));
}

/// Descriptor of the [rows, 16] slice (K-major operand: k0 is a column of
/// the tile) or [16, cols] slice (N-major: k0 is a row) at (row0, 0).
/// K-major: 8-row core-matrix groups 8 swizzle spans apart (SBO: 1024 B at
/// 128 B); the leading offset is unused for swizzled K-major tiles. N-major:
/// SBO steps 8 k-rows (1024 B), LBO steps 64-column atoms (a band of the tile's
/// rows). An N-major operand (a non-transposed B, a transposed A) starts at
/// column `row0` of the tile (a 64-column atom band: M of a warpgroup).
Value emitOperandDescriptor(OpBuilder &b, Location loc, Value tileBase,
                            SharedTileType tile, bool kMajor, Value row0,
                            bool atUse) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value offset = kMajor ? emitSharedByteOffset(b, loc, tile, row0, zero)
                        : emitSharedByteOffset(b, loc, tile, zero, row0);
  Value address = emitSharedAddress(b, loc, tileBase, offset);
  int64_t leading = kMajor ? 16 : tile.getRows() * tile.getSwizzle();
  return emitDescriptor(b, loc, address, leading, 8 * tile.getSwizzle(),
                        tile.getSwizzle(), atUse);
}

/// The descriptor of k16 step `k0` from that of step 0: the steps of one
/// operand lie a static byte distance apart (K-major slices start at rows
/// that are multiples of 8, where the swizzle leaves the column's bytes in
/// place), so only the start-address field moves. Shared addresses stay
/// below 256 KiB, so the field (address >> 4, 14 bits) does not carry:
/// one 32-bit add on the low word instead of the whole descriptor's
/// arithmetic per instruction (the address, its mask and shift, the fixed
/// fields).
Value emitStepDescriptor(OpBuilder &b, Location loc, Value first,
                         SharedTileType tile, bool kMajor, int64_t k0) {
  int64_t bytes = kMajor ? tile.byteOffset(0, k0) - tile.byteOffset(0, 0)
                         : tile.byteOffset(k0, 0);
  if (bytes == 0)
    return first;
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value low = arith::TruncIOp::create(b, loc, i32, first);
  Value steppedLow = arith::AddIOp::create(
      b, loc, low, arith::ConstantIntOp::create(b, loc, i32, bytes >> 4));
  Value highMask =
      arith::ConstantIntOp::create(b, loc, i64, int64_t(~0xFFFFFFFFull));
  Value fixedFields = arith::AndIOp::create(b, loc, first, highMask);
  Value stepped = arith::ExtUIOp::create(b, loc, i64, steppedLow);
  return arith::OrIOp::create(b, loc, fixedFields, stepped);
}

NVVM::WGMMATypes wgmmaType(Type element) {
  if (isa<Float8E4M3FNType>(element))
    return NVVM::WGMMATypes::e4m3;
  return element.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
}

/// The PTX type pair of the operands ("bf16.bf16", "e4m3.e4m3").
StringRef ptxOperandTypes(Type element) {
  if (isa<Float8E4M3FNType>(element))
    return "e4m3.e4m3";
  return element.isBF16() ? "bf16.bf16" : "f16.f16";
}

Value packStruct(OpBuilder &b, Location loc, LLVM::LLVMStructType type,
                 ArrayRef<Value> values) {
  Value result = LLVM::UndefOp::create(b, loc, type);
  for (auto [i, v] : llvm::enumerate(values))
    result = LLVM::InsertValueOp::create(b, loc, result, v, i);
  return result;
}

SmallVector<Value> unpackStruct(OpBuilder &b, Location loc, Value value,
                                int64_t count) {
  SmallVector<Value> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, loc, value, i));
  return values;
}

/// The A operand of step `k` of m-repeat `rep` as four 32-bit registers:
/// a0a1, a2a3, a4a5, a6a7 of the #fagpu.wgmma_a layout (16-bit elements,
/// k16) or a0..a3, ..., a12..a15 of #fagpu.wgmma_a8 (bytes, k32, whose
/// registers are words already: registerVectorType).
SmallVector<Value> registerA(OpBuilder &b, Location loc, Value aVector,
                             int64_t rep, int64_t kSteps, int64_t k) {
  auto type = cast<VectorType>(aVector.getType());
  SmallVector<Value> regs;
  if (type.getElementType().isInteger(32)) {
    for (int64_t r = 0; r < 4; ++r)
      regs.push_back(vector::ExtractOp::create(b, loc, aVector,
                                               (rep * kSteps + k) * 4 + r));
    return regs;
  }
  int64_t perWord = 32 / type.getElementType().getIntOrFloatBitWidth();
  int64_t first = (rep * kSteps + k) * 4 * perWord;
  auto piece = VectorType::get({perWord}, type.getElementType());
  auto word = VectorType::get({1}, b.getI32Type());
  for (int64_t r = 0; r < 4; ++r) {
    SmallVector<Value> elements;
    for (int64_t e = 0; e < perWord; ++e)
      elements.push_back(
          vector::ExtractOp::create(b, loc, aVector, first + perWord * r + e));
    Value whole = vector::FromElementsOp::create(b, loc, piece, elements);
    Value packed = vector::BitCastOp::create(b, loc, word, whole);
    regs.push_back(vector::ExtractOp::create(b, loc, packed, 0));
  }
  return regs;
}

/// wgmma.mma_async with A from registers, as inline PTX with write-only
/// results tied to the accumulator inputs; without `accumulate` (scale-d
/// 0) the inputs are not read.
Value emitRegisterAWgmma(OpBuilder &b, Location loc, Value acc,
                         ArrayRef<Value> a, Value descB, int64_t n,
                         Type element, bool transposeB, bool accumulate) {
  int64_t regs = n / 2;
  std::string ptx;
  llvm::raw_string_ostream os(ptx);
  auto ref = [&](int64_t i) { return "$" + std::to_string(i); };
  os << "{\n.reg .pred p;\nsetp.ne.b32 p, " << ref(2 * regs + 5) << ", 0;\n"
     << "wgmma.mma_async.sync.aligned.m64n" << n << "k" << instructionK(element)
     << ".f32." << ptxOperandTypes(element) << " {";
  for (int64_t i = 0; i < regs; ++i)
    os << (i ? ", " : "") << ref(i);
  os << "}, {" << ref(2 * regs) << ", " << ref(2 * regs + 1) << ", "
     << ref(2 * regs + 2) << ", " << ref(2 * regs + 3) << "}, "
     << ref(2 * regs + 4) << ", p, 1, 1";
  // 8-bit operands are K-major only: no transpose immediate.
  if (element.getIntOrFloatBitWidth() == 16)
    os << ", " << (transposeB ? 0 : 1);
  os << ";\n}\n";
  SmallVector<std::string> constraints;
  for (int64_t i = 0; i < regs; ++i)
    constraints.push_back("=f");
  for (int64_t i = 0; i < regs; ++i)
    constraints.push_back(std::to_string(i));
  for (int i = 0; i < 4; ++i)
    constraints.push_back("r");
  constraints.push_back("l");
  constraints.push_back("r");

  SmallVector<Value> operands =
      unpackStruct(b, loc, acc, regs); // tied accumulator inputs
  operands.append(a.begin(), a.end());
  operands.push_back(descB);
  operands.push_back(arith::ConstantIntOp::create(b, loc, accumulate, 32));
  auto inlineAsm = LLVM::InlineAsmOp::create(
      b, loc, acc.getType(), operands, ptx, llvm::join(constraints, ","),
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
  return inlineAsm.getResult(0);
}

/// The columns of one instruction: all `n` of the warpgroup's, except
/// where warpgroups split the columns of an N-major B whose swizzle atoms
/// (64 columns of 16-bit elements at 128 B) `n` does not divide. The
/// descriptor of an N-major operand steps atoms by its leading offset from
/// the start address, so a start inside an atom (the second warpgroup's 96
/// columns of a 192-column tile start half way through the second atom)
/// would read the next k-row where the atom ends; pieces of gcd(n, atom)
/// columns start inside an atom only where they also end in it.
int64_t nPiece(SharedTileType b, bool transposeB, bool byColumns, int64_t n) {
  if (transposeB || !byColumns || b.getSwizzle() == 0)
    return n;
  int64_t atomColumns = b.getSwizzle() / b.getElementBytes();
  return n % atomColumns == 0 ? n : std::gcd(n, atomColumns);
}

/// Whether `tile` is all zeros: a zero constant or a splat of one.
bool isZeroTile(Value tile) {
  if (auto splat = tile.getDefiningOp<tensor::SplatOp>())
    tile = splat.getInput();
  return matchPattern(tile, m_AnyZeroFloat());
}

struct LowerMmaToWGMMA : OpConversionPattern<MmaOp> {
  LowerMmaToWGMMA(TileTypeConverter &converter, MLIRContext *ctx,
                  bool descriptorsAtUse)
      : OpConversionPattern(converter, ctx),
        descriptorsAtUse(descriptorsAtUse) {}
  bool descriptorsAtUse;

  LogicalResult
  matchAndRewrite(MmaOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto accType = cast<RankedTensorType>(op.getAcc().getType());
    // Warpgroups split the rows (m-repeats of 64 rows each), or share the
    // 64 rows and split the columns (n = N / G each).
    bool byColumns = isa<WgmmaAccColsLayoutAttr>(accType.getEncoding());
    if (!byColumns && !isa<WgmmaAccLayoutAttr>(accType.getEncoding()))
      return rewriter.notifyMatchFailure(op, "not a WGMMA accumulator");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    int64_t m = accType.getDimSize(0);
    int64_t warps = getLayout(accType).getWarps();
    int64_t n =
        byColumns ? accType.getDimSize(1) / (warps / 4) : accType.getDimSize(1);
    int64_t blockRows = byColumns ? m : 16 * warps; // rows of one m-repeat
    int64_t reps = m / blockRows;
    int64_t regsPerRep = n / 2;
    SharedTileType bTile = op.getB().getType();
    bool transposeB = op.getTransposeB();
    int64_t pieceN = nPiece(bTile, transposeB, byColumns, n);
    auto pieceType = LLVM::LLVMStructType::getLiteral(
        ctx, SmallVector<Type>(pieceN / 2, rewriter.getF32Type()));
    Type element = bTile.getElementType();
    int64_t kInstructionK = instructionK(element);
    int64_t kSteps =
        (transposeB ? bTile.getCols() : bTile.getRows()) / kInstructionK;
    auto aTile = dyn_cast<SharedTileType>(op.getA().getType());

    Value warp = ThreadPosition::get(rewriter, loc).warp;
    Value rowsPerGroup =
        arith::ConstantIndexOp::create(rewriter, loc, kWarpgroupRows);
    Value warpgroup = arith::DivUIOp::create(
        rewriter, loc, warp, arith::ConstantIndexOp::create(rewriter, loc, 4));
    Value zeroRow = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value warpgroupRow =
        byColumns
            ? zeroRow
            : arith::MulIOp::create(rewriter, loc, warpgroup, rowsPerGroup)
                  .getResult();
    // B's columns (N) of this warpgroup: rows of a K-major B, columns of an
    // N-major one.
    Value firstColumn =
        byColumns ? arith::MulIOp::create(
                        rewriter, loc, warpgroup,
                        arith::ConstantIndexOp::create(rewriter, loc, n))
                        .getResult()
                  : zeroRow;

    // A product from zero (S, dP, dQ) does not read its accumulator: the
    // first k16 step overwrites it (scale-d 0), so no register is zeroed
    // first, and none written by ordinary instructions right before the
    // MMA makes ptxas serialize it with an injected warpgroup.arrive.
    bool fromZero = isZeroTile(op.getAcc());
    SmallVector<Value> acc;
    if (!fromZero)
      acc = unpackVector(rewriter, loc, adaptor.getAcc());
    // A from registers: every word packed before the fence, so that no
    // register the MMAs read is written between their issues (ptxas would
    // inject a warpgroup.arrive before each: FP8's byte packing at hd256).
    SmallVector<SmallVector<Value>> aWords;
    if (!aTile)
      for (int64_t rep = 0; rep < reps; ++rep)
        for (int64_t k = 0; k < kSteps; ++k)
          aWords.push_back(
              registerA(rewriter, loc, adaptor.getA(), rep, kSteps, k));
    // Registers written by ordinary instructions feed the async MMA.
    NVVM::WgmmaFenceAlignedOp::create(rewriter, loc);
    SmallVector<Value> results;
    bool aKMajor = !op.getTransposeA();
    for (int64_t rep = 0; rep < reps; ++rep) {
      Value firstA;
      for (int64_t piece = 0; piece < n / pieceN; ++piece) {
        int64_t firstReg = rep * regsPerRep + piece * pieceN / 2;
        Value d =
            fromZero
                ? LLVM::UndefOp::create(rewriter, loc, pieceType).getResult()
                : packStruct(rewriter, loc, pieceType,
                             ArrayRef<Value>(acc).slice(firstReg, pieceN / 2));
        // A's rows (the m-repeat's) are the same for every piece.
        Value row0 =
            piece == 0
                ? arith::AddIOp::create(rewriter, loc, warpgroupRow,
                                        arith::ConstantIndexOp::create(
                                            rewriter, loc, rep * blockRows))
                      .getResult()
                : Value();
        Value pieceColumn =
            piece == 0
                ? firstColumn
                : arith::AddIOp::create(rewriter, loc, firstColumn,
                                        arith::ConstantIndexOp::create(
                                            rewriter, loc, piece * pieceN))
                      .getResult();
        Value firstB =
            emitOperandDescriptor(rewriter, loc, adaptor.getB(), bTile,
                                  transposeB, pieceColumn, descriptorsAtUse);
        if (aTile && piece == 0)
          firstA = emitOperandDescriptor(rewriter, loc, adaptor.getA(), aTile,
                                         aKMajor, row0, descriptorsAtUse);
        for (int64_t k = 0; k < kSteps; ++k) {
          int64_t k0 = k * kInstructionK;
          bool accumulate = k > 0 || !fromZero;
          Value descB =
              emitStepDescriptor(rewriter, loc, firstB, bTile, transposeB, k0);
          if (aTile) {
            Value descA =
                emitStepDescriptor(rewriter, loc, firstA, aTile, aKMajor, k0);
            d = NVVM::WgmmaMmaAsyncOp::create(
                rewriter, loc, pieceType, d, descA, descB,
                NVVM::MMAShapeAttr::get(ctx, kWarpgroupRows, pieceN,
                                        kInstructionK),
                wgmmaType(element), wgmmaType(element), NVVM::WGMMATypes::f32,
                accumulate ? NVVM::WGMMAScaleOut::one
                           : NVVM::WGMMAScaleOut::zero,
                NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
                aKMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col,
                transposeB ? NVVM::MMALayout::col : NVVM::MMALayout::row,
                /*satfinite=*/nullptr);
          } else {
            d = emitRegisterAWgmma(rewriter, loc, d, aWords[rep * kSteps + k],
                                   descB, pieceN, element, transposeB,
                                   accumulate);
          }
        }
        llvm::append_range(results, unpackStruct(rewriter, loc, d, pieceN / 2));
      }
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(rewriter, loc);
    if (!op.getAsync())
      NVVM::WgmmaWaitGroupSyncOp::create(rewriter, loc, 0);
    auto type = cast<VectorType>(getTypeConverter()->convertType(accType));
    rewriter.replaceOp(op, packVector(rewriter, loc, type, results));
    return success();
  }
};

/// Each register of `tile` through an empty volatile asm: what reads the
/// result is ordered after the volatile ops before it (a wait, an issue).
static Value tieRegisters(ConversionPatternRewriter &rewriter, Location loc,
                          Value tile) {
  SmallVector<Value> regs = unpackVector(rewriter, loc, tile);
  for (Value &reg : regs)
    reg = LLVM::InlineAsmOp::create(
              rewriter, loc, reg.getType(), ValueRange{reg}, "", "=f,0",
              /*has_side_effects=*/true, /*is_align_stack=*/false,
              LLVM::tailcallkind::TailCallKind::None,
              LLVM::AsmDialectAttr::get(rewriter.getContext(),
                                        LLVM::AsmDialect::AD_ATT),
              ArrayAttr())
              .getResult(0);
  return packVector(rewriter, loc, cast<VectorType>(tile.getType()), regs);
}

/// Waits for the warpgroup's products, then ties each accumulator
/// register: what reads the registers is ordered after the wait, as the
/// PTX ISA requires of async wgmma results.
struct LowerMmaWait : OpConversionPattern<MmaWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MmaWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    NVVM::WgmmaWaitGroupSyncOp::create(rewriter, op.getLoc(), op.getInFlight());
    rewriter.replaceOp(
        op, tieRegisters(rewriter, op.getLoc(), adaptor.getPending()));
    return success();
  }
};

/// The registers tied after the product's issue (its asm is volatile too).
struct LowerAfterIssue : OpConversionPattern<AfterIssueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AfterIssueOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, tieRegisters(rewriter, op.getLoc(), adaptor.getSource()));
    return success();
  }
};

} // namespace

void mlir::fagpu::populateMmaToWGMMAPatterns(TileTypeConverter &converter,
                                             RewritePatternSet &patterns,
                                             bool descriptorsAtUse) {
  patterns.add<LowerMmaToWGMMA>(converter, patterns.getContext(),
                                descriptorsAtUse);
  patterns.add<LowerMmaWait, LowerAfterIssue>(converter, patterns.getContext());
}
