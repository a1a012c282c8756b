//===- FAGPUDialect.cpp - FlashMLIR GPU tile level ------------------------===//

#include "fa/Dialect/FAGPU/IR/FAGPU.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fagpu;

#include "fa/Dialect/FAGPU/IR/FAGPUAttrInterfaces.cpp.inc"
#include "fa/Dialect/FAGPU/IR/FAGPUDialect.cpp.inc"
#include "fa/Dialect/FAGPU/IR/FAGPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "fa/Dialect/FAGPU/IR/FAGPUTypes.cpp.inc"

void FAGPUDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fa/Dialect/FAGPU/IR/FAGPUAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "fa/Dialect/FAGPU/IR/FAGPUTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "fa/Dialect/FAGPU/IR/FAGPUOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

DistributedLayoutAttr mlir::fagpu::getLayout(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor ? dyn_cast_or_null<DistributedLayoutAttr>(tensor.getEncoding())
                : DistributedLayoutAttr();
}

TileLayout mlir::fagpu::getTileLayout(RankedTensorType type) {
  return getLayout(type).getTileLayout(type.getShape());
}

/// The warps a layout may have: a power of two in [1, 32]; a WGMMA layout
/// (`warpgroups`) whole warpgroups, of any count where the warpgroups stack
/// along rows (`anyGroupCount`: three take the warp index's repeat).
static LogicalResult verifyWarps(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t warps, bool warpgroups,
                                 bool anyGroupCount = false) {
  bool anyCount = warpgroups && anyGroupCount;
  if (warps <= 0 || warps > 32 || (!anyCount && !llvm::isPowerOf2_64(warps)))
    return emitError() << "warps must be "
                       << (anyCount ? "in [4, 32]"
                                    : "a power of two in [1, 32]")
                       << ", got " << warps;
  if (warpgroups && warps % 4 != 0)
    return emitError() << "a WGMMA layout needs whole warpgroups (warps a "
                          "multiple of 4), got "
                       << warps;
  return success();
}

// Shape rules of one tensor-core layout: rank 2, rows and columns multiples
// of what one warp's instruction covers, and at most one of the two ratios
// not a power of two (the layout's one register repeat: a 176-key tile is
// 11 x 16 columns).
static std::string checkTensorCoreShape(ArrayRef<int64_t> shape,
                                        int64_t rowQuantum, int64_t colQuantum,
                                        StringRef what) {
  std::string message;
  llvm::raw_string_ostream os(message);
  if (shape.size() != 2) {
    os << what << " tiles are 2-D, got rank " << shape.size();
    return message;
  }
  int repeats = 0;
  for (int i = 0; i < 2; ++i) {
    int64_t quantum = i == 0 ? rowQuantum : colQuantum;
    if (shape[i] <= 0 || shape[i] % quantum != 0) {
      os << what << " tile dim " << i << " must be a positive multiple of "
         << quantum << ", got " << shape[i];
      return message;
    }
    repeats += !llvm::isPowerOf2_64(shape[i] / quantum);
  }
  if (repeats > 1)
    os << what << " tile " << shape[0] << "x" << shape[1]
       << ": at most one dim may be a multiple of " << rowQuantum << " or "
       << colQuantum << " other than a power of two times it";
  return message;
}

#define FAGPU_TENSOR_CORE_LAYOUT(Attr, RowsPerWarp, ColQuantum, WarpGroups,    \
                                 Factory, What)                                \
  LogicalResult Attr::verify(function_ref<InFlightDiagnostic()> emitError,     \
                             int64_t warps) {                                  \
    return verifyWarps(emitError, warps, WarpGroups, WarpGroups);              \
  }                                                                            \
  std::string Attr::checkShape(ArrayRef<int64_t> shape) const {                \
    return checkTensorCoreShape(shape, (RowsPerWarp) * getWarps(), ColQuantum, \
                                What);                                         \
  }                                                                            \
  TileLayout Attr::getTileLayout(ArrayRef<int64_t> shape) const {              \
    return TileLayout::Factory(shape[0], shape[1], getWarps());                \
  }

FAGPU_TENSOR_CORE_LAYOUT(MmaSyncAccLayoutAttr, 16, 8, false, mmaSyncAccumulator,
                         "mma.sync accumulator")
FAGPU_TENSOR_CORE_LAYOUT(MmaSyncALayoutAttr, 16, 16, false, mmaSyncOperandA,
                         "mma.sync A operand")
FAGPU_TENSOR_CORE_LAYOUT(WgmmaAccLayoutAttr, 16, 8, true, wgmmaAccumulator,
                         "WGMMA accumulator")
FAGPU_TENSOR_CORE_LAYOUT(WgmmaALayoutAttr, 16, 16, true, wgmmaOperandA,
                         "WGMMA A operand")
FAGPU_TENSOR_CORE_LAYOUT(WgmmaA8LayoutAttr, 16, 32, true, wgmmaOperandA8,
                         "8-bit WGMMA A operand")
FAGPU_TENSOR_CORE_LAYOUT(WgmmaA8PairsLayoutAttr, 16, 32, true,
                         wgmmaOperandA8Pairs,
                         "8-bit WGMMA A operand (keys in pairs)")
#undef FAGPU_TENSOR_CORE_LAYOUT

// One 64-row tile whose columns the warpgroups split.
LogicalResult
WgmmaAccColsLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t warps) {
  return verifyWarps(emitError, warps, true);
}
std::string WgmmaAccColsLayoutAttr::checkShape(ArrayRef<int64_t> shape) const {
  std::string problem = checkTensorCoreShape(
      shape, 16 * 4, 8 * (getWarps() / 4), "column-split WGMMA accumulator");
  if (problem.empty() && shape[0] != 64)
    problem = "column-split WGMMA accumulator tiles have 64 rows (one m64 "
              "instruction a warpgroup), got " +
              std::to_string(shape[0]);
  return problem;
}
TileLayout
WgmmaAccColsLayoutAttr::getTileLayout(ArrayRef<int64_t> shape) const {
  return TileLayout::wgmmaAccumulatorByColumns(shape[0], shape[1], getWarps());
}

// Warps over rows and column groups: each its 16-row multiple of rows and
// an 8-column multiple of columns.
LogicalResult
MmaSyncAccColsLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t warps, int64_t columns) {
  if (failed(verifyWarps(emitError, warps, false)))
    return failure();
  if (columns < 2 || !llvm::isPowerOf2_64(columns) || columns > warps)
    return emitError() << "column groups must be a power of two in [2, "
                          "warps], got "
                       << columns;
  return success();
}
std::string
MmaSyncAccColsLayoutAttr::checkShape(ArrayRef<int64_t> shape) const {
  int64_t rowWarps = getWarps() / getColumns();
  return checkTensorCoreShape(shape, 16 * rowWarps, 8 * getColumns(),
                              "column-split mma.sync accumulator");
}
TileLayout
MmaSyncAccColsLayoutAttr::getTileLayout(ArrayRef<int64_t> shape) const {
  return TileLayout::mmaSyncAccumulatorByColumns(shape[0], shape[1], getWarps(),
                                                 getColumns());
}

// B fragments are replicated over warps: the rows are the k dimension.
LogicalResult
MmaSyncBLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t warps) {
  return verifyWarps(emitError, warps, false);
}
std::string MmaSyncBLayoutAttr::checkShape(ArrayRef<int64_t> shape) const {
  return checkTensorCoreShape(shape, 16, 8, "mma.sync B operand");
}
TileLayout MmaSyncBLayoutAttr::getTileLayout(ArrayRef<int64_t> shape) const {
  return TileLayout::mmaSyncOperandB(shape[0], shape[1], getWarps());
}

int64_t TransposedLayoutAttr::getWarps() const {
  return getParent().getWarps();
}
std::string TransposedLayoutAttr::checkShape(ArrayRef<int64_t> shape) const {
  if (shape.size() != 2)
    return "transposed tiles are 2-D, got rank " + std::to_string(shape.size());
  std::string problem = getParent().checkShape({shape[1], shape[0]});
  return problem.empty() ? problem : "transposed: " + problem;
}
TileLayout TransposedLayoutAttr::getTileLayout(ArrayRef<int64_t> shape) const {
  return getParent().getTileLayout({shape[1], shape[0]}).transposed();
}

int64_t RowsLayoutAttr::getWarps() const { return getParent().getWarps(); }

// The smallest column count the parent takes; per-row placement does not
// depend on the columns.
static int64_t parentColumns(DistributedLayoutAttr parent) {
  if (isa<WgmmaAccColsLayoutAttr>(parent))
    return 8 * (parent.getWarps() / 4); // 8 a warpgroup
  // The columns are the transposed layout's rows: 64 a warpgroup (WGMMA),
  // 16 a warp (mma.sync).
  if (auto transposed = dyn_cast<TransposedLayoutAttr>(parent))
    return isa<WgmmaAccLayoutAttr>(transposed.getParent())
               ? 64 * (parent.getWarps() / 4)
               : 16 * parent.getWarps();
  if (isa<WgmmaA8LayoutAttr, WgmmaA8PairsLayoutAttr>(parent))
    return 32;
  return isa<MmaSyncALayoutAttr, WgmmaALayoutAttr>(parent) ? 16 : 8;
}

std::string RowsLayoutAttr::checkShape(ArrayRef<int64_t> shape) const {
  if (shape.size() != 1)
    return "per-row tiles are 1-D, got rank " + std::to_string(shape.size());
  return getParent().checkShape({shape[0], parentColumns(getParent())});
}

TileLayout RowsLayoutAttr::getTileLayout(ArrayRef<int64_t> shape) const {
  return getParent()
      .getTileLayout({shape[0], parentColumns(getParent())})
      .rowSlice();
}

//===----------------------------------------------------------------------===//
// Shared tiles
//===----------------------------------------------------------------------===//

Type SharedTileType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  int64_t swizzle = 0;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseType(elementType) || parser.parseComma() ||
      parser.parseKeyword("swizzle") || parser.parseEqual() ||
      parser.parseInteger(swizzle) || parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), shape, elementType, swizzle);
}

void SharedTileType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t dim : getShape())
    printer << dim << "x";
  printer << getElementType() << ", swizzle = " << getSwizzle() << ">";
}

LogicalResult
SharedTileType::verify(function_ref<InFlightDiagnostic()> emitError,
                       ArrayRef<int64_t> shape, Type elementType,
                       int64_t swizzle) {
  if ((shape.size() != 2 && shape.size() != 3) ||
      llvm::any_of(shape, [](int64_t d) { return d <= 0; }))
    return emitError() << "a shared tile is 2-D (or a 3-D ring of stages) "
                          "with positive sizes";
  if (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() % 8)
    return emitError() << "a shared tile holds whole-byte scalars, got "
                       << elementType;
  int64_t rows = shape[shape.size() - 2];
  int64_t rowBytes = shape.back() * elementType.getIntOrFloatBitWidth() / 8;
  if (rowBytes % 16 != 0)
    return emitError() << "shared tile rows must be a multiple of 16 bytes, "
                          "got "
                       << rowBytes;
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "swizzle must be 0, 32, 64 or 128 bytes, got "
                       << swizzle;
  if (swizzle != 0 && (rowBytes % swizzle != 0 || rows % 8 != 0))
    return emitError() << "a " << swizzle << "-byte swizzle needs rows of a "
                       << "multiple of " << swizzle
                       << " bytes and a multiple of 8 rows";
  return success();
}

LogicalResult BarriersType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t count) {
  if (count < 1)
    return emitError() << "an array of at least one mbarrier, got " << count;
  return success();
}

LogicalResult
TensorMapType::verify(function_ref<InFlightDiagnostic()> emitError,
                      MemRefType tensor, int64_t boxRows, int64_t boxCols) {
  // Outer sizes may be known at launch only (runtime shapes: the host
  // encodes the map from the call's tensors); a row's elements are the box's
  // columns and must be static.
  if (!tensor.getLayout().isIdentity() || tensor.getRank() < 2 ||
      tensor.getRank() > 5 || tensor.isDynamicDim(tensor.getRank() - 1))
    return emitError() << "a tensor map describes a dense 2-D to 5-D memref "
                          "with a static innermost size, got "
                       << tensor;
  Type element = tensor.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8)
    return emitError() << "a tensor map holds whole-byte scalars, got "
                       << element;
  int64_t boxBytes = boxCols * element.getIntOrFloatBitWidth() / 8;
  if (boxRows < 1 || boxRows > 256 ||
      SharedTileType::widestSwizzle(boxBytes) != boxBytes)
    return emitError() << "a box is 1 to 256 rows of 128, 64 or 32 bytes (a "
                          "swizzle span), got "
                       << boxRows << "x" << boxCols << " " << element;
  return success();
}

int64_t SharedTileType::getStageStride() const {
  return llvm::alignTo(getRows() * getRowBytes(), kSharedTileAlignment);
}

int64_t SharedTileType::byteOffset(int64_t row, int64_t col) const {
  return swizzledByteOffset(row, col, getElementBytes(), getRows(),
                            getRowBytes(), getSwizzle());
}
