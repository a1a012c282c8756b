//===- FAOps.cpp - FlashMLIR attention ops --------------------------------===//
//
// Verifiers. Every shape rule is written once, as a list of named dimensions
// per operand ("B", "Hq", "Nq", "D", ...); ShapeBinder binds each name to the
// first static size it sees and reports any operand that disagrees, naming
// both operands, the dimension and the two sizes.
//
//===----------------------------------------------------------------------===//

#include "fa/Dialect/FA/IR/FAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fa;

namespace {

/// Binds symbolic dimension names to sizes across an op's operands.
class ShapeBinder {
public:
  explicit ShapeBinder(Operation *op) : op(op) {}

  /// Checks that `type` has one dimension per name in `dims` and that each
  /// static size agrees with what earlier operands bound to the same name.
  LogicalResult bind(StringRef operand, Type type, ArrayRef<StringRef> dims) {
    auto tensor = cast<RankedTensorType>(type);
    if (tensor.getRank() != static_cast<int64_t>(dims.size()))
      return op->emitOpError()
             << operand << " must have rank " << dims.size() << " ["
             << llvm::join(dims, ", ") << "], got " << type;
    for (auto [index, name] : llvm::enumerate(dims)) {
      int64_t size = tensor.getDimSize(index);
      auto it = bound.find(name);
      if (it == bound.end() || ShapedType::isDynamic(it->second.size)) {
        bound[name] = {operand.str(), static_cast<unsigned>(index), size};
        continue;
      }
      const Binding &prev = it->second;
      if (!ShapedType::isDynamic(size) && size != prev.size)
        return op->emitOpError()
               << operand << " dim " << index << " (" << name << ") is " << size
               << ", expected " << prev.size << " to match " << prev.operand
               << " dim " << prev.dim;
    }
    return success();
  }

  /// The static size bound to `name`, or nullopt when unknown or dynamic.
  std::optional<int64_t> size(StringRef name) const {
    auto it = bound.find(name);
    if (it == bound.end() || ShapedType::isDynamic(it->second.size))
      return std::nullopt;
    return it->second.size;
  }

  /// Query heads must be a whole multiple of key/value heads (GQA / MQA).
  LogicalResult verifyHeadRatio() {
    std::optional<int64_t> hq = size("Hq"), hkv = size("Hkv");
    if (hq && hkv && (*hkv == 0 || *hq % *hkv != 0))
      return op->emitOpError()
             << "query heads (Hq = " << *hq
             << ") must be a multiple of key/value heads (Hkv = " << *hkv
             << ") for GQA/MQA";
    return success();
  }

private:
  struct Binding {
    std::string operand;
    unsigned dim;
    int64_t size;
  };
  Operation *op;
  llvm::StringMap<Binding> bound;
};

Type elementType(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

bool isFP8(Type type) { return isa<Float8E4M3FNType>(type); }

/// All `values` (named by `names`) share the element type of the first.
LogicalResult verifySameElementType(Operation *op, ArrayRef<Value> values,
                                    ArrayRef<StringRef> names) {
  Type expected = elementType(values.front());
  for (auto [value, name] : llvm::zip(values, names))
    if (elementType(value) != expected)
      return op->emitOpError()
             << name << " element type " << elementType(value)
             << " differs from " << names.front() << " element type "
             << expected << "; mixed element types are not supported";
  return success();
}

/// Checks scale, softcap and window, and how the window combines with causal.
template <typename OpTy> LogicalResult verifyScoreAttrs(OpTy op) {
  if (std::optional<double> scale = asDouble(op.getScale()))
    if (!(*scale > 0.0) || !std::isfinite(*scale))
      return op.emitOpError()
             << "scale must be a positive finite number, got " << *scale;
  if (std::optional<double> cap = asDouble(op.getSoftcap()))
    if (!(*cap > 0.0) || !std::isfinite(*cap))
      return op.emitOpError()
             << "softcap must be a positive finite number, got " << *cap;
  std::optional<ArrayRef<int64_t>> window = op.getWindow();
  if (!window)
    return success();
  if (window->size() != 2)
    return op.emitOpError() << "window must be [left, right], got "
                            << window->size() << " values";
  int64_t left = (*window)[0], right = (*window)[1];
  if (left < -1 || right < -1)
    return op.emitOpError() << "window bounds must be >= 0, or -1 for "
                               "unbounded, got ["
                            << left << ", " << right << "]";
  // Masks compute i + (N_k - N_q) -/+ window in 64-bit index arithmetic;
  // bounded sides keep that exact (a side wider than any sequence is
  // unbounded anyway: -1).
  constexpr int64_t kMaxWindowSide = std::numeric_limits<int32_t>::max();
  if (left > kMaxWindowSide || right > kMaxWindowSide)
    return op.emitOpError()
           << "window bounds must be at most " << kMaxWindowSide
           << " (a wider side is unbounded: use -1), got [" << left << ", "
           << right << "]";
  if (left == -1 && right == -1)
    return op.emitOpError()
           << "window [-1, -1] is unbounded on both sides; drop the window";
  if (op.getCausal() && (left == -1 || right != 0))
    return op.emitOpError()
           << "window [" << left << ", " << right
           << "] is meaningless on a causal op: causal already bounds keys on "
              "the right, so only [left >= 0, 0] adds a constraint";
  return success();
}

/// The varlen operands of `op`: all four or none; with them, batch-1
/// tensors (the sequences are packed along N) and B + 1 offsets per side.
template <typename OpTy>
LogicalResult verifyVarlen(OpTy op, const ShapeBinder &shapes) {
  int present = static_cast<bool>(op.getCuSeqlensQ()) +
                static_cast<bool>(op.getCuSeqlensK()) +
                static_cast<bool>(op.getMaxSeqlenQ()) +
                static_cast<bool>(op.getMaxSeqlenK());
  if (present == 0)
    return success();
  if (present != 4)
    return op.emitOpError() << "varlen needs cu_seqlens_q, cu_seqlens_k, "
                               "max_seqlen_q and max_seqlen_k, got "
                            << present << " of them";
  std::optional<int64_t> batch = shapes.size("B");
  if (batch != 1)
    return op.emitOpError()
           << "varlen packs the sequences along N: the batch dim must be a "
              "static 1, got "
           << (batch ? std::to_string(*batch) : std::string("?"));
  auto q = cast<RankedTensorType>(op.getCuSeqlensQ().getType());
  auto k = cast<RankedTensorType>(op.getCuSeqlensK().getType());
  for (RankedTensorType t : {q, k})
    if (!t.isDynamicDim(0) && t.getDimSize(0) < 1)
      return op.emitOpError() << "cu_seqlens hold B + 1 offsets (at least "
                                 "one), got "
                              << t;
  if (!q.isDynamicDim(0) && !k.isDynamicDim(0) &&
      q.getDimSize(0) != k.getDimSize(0))
    return op.emitOpError()
           << "cu_seqlens_q and cu_seqlens_k must have the same size (B + "
              "1), got "
           << q.getDimSize(0) << " and " << k.getDimSize(0);
  return success();
}

double defaultScale(Value query) {
  auto type = cast<RankedTensorType>(query.getType());
  return 1.0 / std::sqrt(static_cast<double>(type.getShape().back()));
}

} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

double AttentionOp::getEffectiveScale() {
  return asDouble(getScale()).value_or(defaultScale(getQuery()));
}

LogicalResult AttentionOp::verify() {
  ShapeBinder shapes(*this);
  if (failed(
          shapes.bind("query", getQuery().getType(), {"B", "Hq", "Nq", "D"})) ||
      failed(shapes.bind("key", getKey().getType(), {"B", "Hkv", "Nk", "D"})) ||
      failed(shapes.bind("value", getValue().getType(),
                         {"B", "Hkv", "Nk", "Dv"})) ||
      failed(shapes.bind("output", getOutput().getType(),
                         {"B", "Hq", "Nq", "Dv"})) ||
      failed(shapes.bind("lse", getLse().getType(), {"B", "Hq", "Nq"})) ||
      failed(shapes.verifyHeadRatio()))
    return failure();
  if (failed(verifySameElementType(*this, {getQuery(), getKey(), getValue()},
                                   {"query", "key", "value"})))
    return failure();

  Type inType = elementType(getQuery()), outType = elementType(getOutput());
  if (isFP8(inType)) {
    if (getDescales().size() != 3)
      return emitOpError() << "FP8 operands need descale(%q_descale, "
                              "%k_descale, %v_descale), got "
                           << getDescales().size() << " descale operands";
    if (!isa<BFloat16Type, Float16Type>(outType))
      return emitOpError() << "FP8 attention produces a bf16 or f16 output, "
                              "got "
                           << outType;
    for (auto [index, descale] : llvm::enumerate(getDescales()))
      if (failed(shapes.bind(llvm::formatv("descale #{0}", index).str(),
                             descale.getType(), {"B", "Hkv"})))
        return failure();
  } else {
    if (!getDescales().empty())
      return emitOpError() << "descale operands are only meaningful for FP8 "
                              "operands, got "
                           << inType;
    if (outType != inType)
      return emitOpError() << "output element type " << outType
                           << " differs from query element type " << inType;
  }
  if (isVarlen() && !getDescales().empty())
    return emitOpError() << "FP8 varlen attention is not supported";
  if (failed(verifyVarlen(*this, shapes)))
    return failure();
  return verifyScoreAttrs(*this);
}

//===----------------------------------------------------------------------===//
// AttentionGradOp
//===----------------------------------------------------------------------===//

double AttentionGradOp::getEffectiveScale() {
  return asDouble(getScale()).value_or(defaultScale(getQuery()));
}

LogicalResult AttentionGradOp::verify() {
  ShapeBinder shapes(*this);
  if (failed(
          shapes.bind("query", getQuery().getType(), {"B", "Hq", "Nq", "D"})) ||
      failed(shapes.bind("key", getKey().getType(), {"B", "Hkv", "Nk", "D"})) ||
      failed(shapes.bind("value", getValue().getType(),
                         {"B", "Hkv", "Nk", "Dv"})) ||
      failed(shapes.bind("output", getOutput().getType(),
                         {"B", "Hq", "Nq", "Dv"})) ||
      failed(shapes.bind("grad_output", getGradOutput().getType(),
                         {"B", "Hq", "Nq", "Dv"})) ||
      failed(shapes.bind("lse", getLse().getType(), {"B", "Hq", "Nq"})) ||
      (getGradLse() && failed(shapes.bind("grad_lse", getGradLse().getType(),
                                          {"B", "Hq", "Nq"}))) ||
      failed(shapes.bind("grad_query", getGradQuery().getType(),
                         {"B", "Hq", "Nq", "D"})) ||
      failed(shapes.bind("grad_key", getGradKey().getType(),
                         {"B", "Hkv", "Nk", "D"})) ||
      failed(shapes.bind("grad_value", getGradValue().getType(),
                         {"B", "Hkv", "Nk", "Dv"})) ||
      failed(shapes.verifyHeadRatio()))
    return failure();
  if (failed(verifySameElementType(
          *this,
          {getQuery(), getKey(), getValue(), getOutput(), getGradOutput(),
           getGradQuery(), getGradKey(), getGradValue()},
          {"query", "key", "value", "output", "grad_output", "grad_query",
           "grad_key", "grad_value"})))
    return failure();
  if (isFP8(elementType(getQuery())))
    return emitOpError() << "FP8 backward is not supported; run the backward "
                            "in bf16 or f16";
  if (failed(verifyVarlen(*this, shapes)))
    return failure();
  return verifyScoreAttrs(*this);
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp
//===----------------------------------------------------------------------===//

/// A descale operand: a `[B, Hkv]` f32 tensor on whole tensors, an f32 on a
/// tile.
static LogicalResult verifyDescale(Operation *op, ShapeBinder &shapes,
                                   StringRef name, Type type, bool tile) {
  if (tile) {
    if (!type.isF32())
      return op->emitOpError()
             << name << " of a tile must be an f32, got " << type;
    return success();
  }
  if (!isa<RankedTensorType>(type))
    return op->emitOpError()
           << name << " of whole tensors must be a [B, Hkv] f32 tensor, got "
           << type;
  return shapes.bind(name, type, {"B", "Hkv"});
}

/// FP8 operands take descale(%q_descale, %k_descale); others none.
static LogicalResult verifyDescales(OnlineAttentionOp op, ShapeBinder &shapes,
                                    bool tile) {
  size_t count = op.getDescales().size();
  if (!isFP8(elementType(op.getQuery()))) {
    if (count != 0)
      return op.emitOpError() << "descale operands are only meaningful for "
                                 "FP8 operands, got "
                              << elementType(op.getQuery());
    return success();
  }
  if (count != 2)
    return op.emitOpError() << "FP8 operands need descale(%q_descale, "
                               "%k_descale), got "
                            << count << " descale operands";
  if (op.isVarlen())
    return op.emitOpError() << "FP8 varlen attention is not supported";
  static constexpr StringLiteral names[] = {"q_descale", "k_descale"};
  for (auto [name, descale] : llvm::zip(names, op.getDescales()))
    if (failed(verifyDescale(op, shapes, name, descale.getType(), tile)))
      return failure();
  return success();
}

/// A tile's `rescale_threshold` τ: finite, at least 0, and small enough
/// that P = 2^(s - m') <= 2^τ fits the element type P·V takes it in
/// (e4m3's 448 bounds τ at 8.8).
static LogicalResult verifyRescaleThreshold(OnlineAttentionOp op, bool tile) {
  std::optional<APFloat> threshold = op.getRescaleThreshold();
  if (!threshold)
    return success();
  if (!tile)
    return op.emitOpError()
           << "'rescale_threshold' is only meaningful on a tile";
  double tau = threshold->convertToDouble();
  // Shortest text (17, 448), not the stream's 1.700000e+01.
  auto text = [](const APFloat &v) {
    SmallString<16> s;
    v.toString(s);
    return std::string(s);
  };
  if (!std::isfinite(tau) || tau < 0)
    return op.emitOpError() << "'rescale_threshold' must be finite and at "
                               "least 0, got "
                            << text(*threshold);
  auto element = dyn_cast<FloatType>(op.getValue().getType().getElementType());
  if (!element)
    return success();
  APFloat largest = APFloat::getLargest(element.getFloatSemantics());
  if (std::exp2(tau) > largest.convertToDouble())
    return op.emitOpError()
           << "'rescale_threshold' = " << text(*threshold) << " lets P reach 2^"
           << text(*threshold) << ", past the largest " << element << " ("
           << text(largest) << ")";
  return success();
}

LogicalResult OnlineAttentionOp::verify() {
  ShapeBinder shapes(*this);
  int64_t rank = getQuery().getType().getRank();
  if (rank != 2 && rank != 4)
    return emitOpError() << "query must have rank 4 [B, Hq, Nq, D] (whole "
                            "tensors) or rank 2 [Br, D] (a tile), got "
                         << getQuery().getType();
  bool tile = rank == 2;
  auto dims = [&](ArrayRef<StringRef> whole,
                  ArrayRef<StringRef> tiled) -> ArrayRef<StringRef> {
    return tile ? tiled : whole;
  };
  if (failed(shapes.bind("query", getQuery().getType(),
                         dims({"B", "Hq", "Nq", "D"}, {"Br", "D"}))) ||
      failed(shapes.bind("key", getKey().getType(),
                         dims({"B", "Hkv", "Nk", "D"}, {"Bc", "D"}))) ||
      failed(shapes.bind("value", getValue().getType(),
                         dims({"B", "Hkv", "Nk", "Dv"}, {"Bc", "Dv"}))) ||
      failed(shapes.bind("acc", getAcc().getType(),
                         dims({"B", "Hq", "Nq", "Dv"}, {"Br", "Dv"}))) ||
      failed(shapes.bind("max", getMax().getType(),
                         dims({"B", "Hq", "Nq"}, {"Br"}))) ||
      failed(shapes.bind("sum", getSum().getType(),
                         dims({"B", "Hq", "Nq"}, {"Br"}))) ||
      failed(shapes.verifyHeadRatio()))
    return failure();
  if (failed(verifySameElementType(*this, {getQuery(), getKey(), getValue()},
                                   {"query", "key", "value"})))
    return failure();
  if (tile && getTilePosition().size() != 4)
    return emitOpError() << "a tile needs tile(%q_start, %kv_start, %q_len, "
                            "%kv_len), got "
                         << getTilePosition().size() << " index operands";
  if (!tile && !getTilePosition().empty())
    return emitOpError() << "whole-tensor operands take no tile position";
  if (!tile && getUnmasked())
    return emitOpError() << "'unmasked' is only meaningful on a tile";
  if (!tile && getKeysInBounds())
    return emitOpError() << "'keys_in_bounds' is only meaningful on a tile";
  if (tile && isVarlen())
    return emitOpError() << "a tile takes no seqlens: its tile position "
                            "holds its sequence's lengths";
  if (failed(verifyVarlen(*this, shapes)))
    return failure();
  if (getUnmasked() && getKeysInBounds())
    return emitOpError() << "'keys_in_bounds' is implied by 'unmasked'; "
                            "give one of them";
  if (failed(verifyDescales(*this, shapes, tile)))
    return failure();
  if (!getScale())
    return emitOpError() << "requires 'scale': the online form carries the "
                            "resolved softmax scale";
  if (failed(verifyRescaleThreshold(*this, tile)))
    return failure();
  return verifyScoreAttrs(*this);
}

//===----------------------------------------------------------------------===//
// NormalizeOp
//===----------------------------------------------------------------------===//

LogicalResult NormalizeOp::verify() {
  ShapeBinder shapes(*this);
  int64_t rank = getAcc().getType().getRank();
  if (rank != 2 && rank != 4)
    return emitOpError() << "acc must have rank 4 [B, H, N, Dv] or rank 2 "
                            "[Br, Dv], got "
                         << getAcc().getType();
  SmallVector<StringRef> accDims =
      rank == 4 ? SmallVector<StringRef>{"B", "H", "N", "Dv"}
                : SmallVector<StringRef>{"N", "Dv"};
  ArrayRef<StringRef> rowDims = ArrayRef<StringRef>(accDims).drop_back();
  if (failed(shapes.bind("acc", getAcc().getType(), accDims)) ||
      failed(shapes.bind("max", getMax().getType(), rowDims)) ||
      failed(shapes.bind("sum", getSum().getType(), rowDims)) ||
      failed(shapes.bind("output", getOutput().getType(), accDims)) ||
      failed(shapes.bind("lse", getLse().getType(), rowDims)))
    return failure();
  if (isFP8(elementType(getOutput())))
    return emitOpError() << "output must be f32, f16 or bf16, got "
                         << elementType(getOutput());
  if (Value descale = getDescale()) {
    if (failed(verifyDescale(*this, shapes, "v_descale", descale.getType(),
                             rank == 2)))
      return failure();
    // Query head h takes KV head h / (H / Hkv)'s factor.
    if (std::optional<int64_t> h = shapes.size("H"))
      if (std::optional<int64_t> hkv = shapes.size("Hkv"))
        if (*hkv == 0 || *h % *hkv != 0)
          return emitOpError() << "heads (H = " << *h
                               << ") must be a multiple of the descale's "
                                  "KV heads (Hkv = "
                               << *hkv << ")";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionGradTileOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionGradTileOp::verify() {
  ShapeBinder shapes(*this);
  if (failed(shapes.bind("query", getQuery().getType(), {"Br", "D"})) ||
      failed(shapes.bind("key", getKey().getType(), {"Bc", "D"})) ||
      failed(shapes.bind("value", getValue().getType(), {"Bc", "Dv"})) ||
      failed(shapes.bind("grad_output", getGradOutput().getType(),
                         {"Br", "Dv"})) ||
      failed(shapes.bind("lse", getLse().getType(), {"Br"})) ||
      failed(shapes.bind("delta", getDelta().getType(), {"Br"})) ||
      failed(shapes.bind("grad_query_acc", getGradQueryAcc().getType(),
                         {"Br", "D"})) ||
      failed(shapes.bind("grad_key_acc", getGradKeyAcc().getType(),
                         {"Bc", "D"})) ||
      failed(shapes.bind("grad_value_acc", getGradValueAcc().getType(),
                         {"Bc", "Dv"})))
    return failure();
  if (failed(verifySameElementType(
          *this, {getQuery(), getKey(), getValue(), getGradOutput()},
          {"query", "key", "value", "grad_output"})))
    return failure();
  if (isFP8(elementType(getQuery())))
    return emitOpError() << "FP8 backward is not supported";
  if (!getScale())
    return emitOpError() << "requires 'scale': the tile form carries the "
                            "resolved softmax scale";
  return verifyScoreAttrs(*this);
}

#define GET_OP_CLASSES
#include "fa/Dialect/FA/IR/FAOps.cpp.inc"

//===----------------------------------------------------------------------===//
// QuantizeOp
//===----------------------------------------------------------------------===//

double QuantizeOp::hadamardSign(int64_t seed, int64_t i) {
  // splitmix64's finalizer over (seed, i): every bit depends on both.
  uint64_t z = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull +
               static_cast<uint64_t>(i) + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (z >> 63) ? -1.0 : 1.0;
}

LogicalResult QuantizeOp::verify() {
  ShapeBinder shapes(*this);
  if (failed(
          shapes.bind("input", getInput().getType(), {"B", "H", "N", "D"})) ||
      failed(
          shapes.bind("output", getOutput().getType(), {"B", "H", "N", "D"})) ||
      failed(shapes.bind("descale", getDescale().getType(), {"B", "G"})))
    return failure();
  std::optional<int64_t> h = shapes.size("H"), g = shapes.size("G");
  if (h && g && (*g == 0 || *h % *g != 0))
    return emitOpError() << "heads (H = " << *h
                         << ") must be a multiple of the descale's blocks "
                            "(G = "
                         << *g << ")";
  if (getRotationSeed()) {
    std::optional<int64_t> d = shapes.size("D");
    if (!d || *d < 1 || !llvm::isPowerOf2_64(*d))
      return emitOpError() << "rotate needs a static head dim that is a "
                              "power of two, got "
                           << getInput().getType();
  }
  return success();
}
