//===- BackwardRowKernels.cpp - The backward's pre and post kernels -------===//
//
// The two small kernels around FA2's backward: before it, delta =
// rowsum(dO * O) and a zeroed f32 dQ accumulator; after it, dQ cast to the
// input type. One warp per query row.
//
//===----------------------------------------------------------------------===//

#include "BackwardRowKernels.h"

#include "FragmentBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fa;

namespace {

/// Row-per-warp kernels: 4 warps, warp w takes query row 4 blockIdx.x + w
/// of (head, batch) = (blockIdx.y, blockIdx.z); `body` runs for rows below
/// Nq.
using RowBody =
    function_ref<void(FragmentBuilder &, ValueRange args, Value batch,
                      Value head, Value row, Value lane)>;

void emitRowKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                   const AttentionKernelConfig &c, StringRef suffix,
                   StringRef kind, TypeRange args, RowBody body) {
  gpu::GPUFuncOp func = createKernelFunc(
      b, loc, module, (c.name + suffix).str(), args, kind,
      {(c.seqQ + 3) / 4, c.headsQ, c.batch}, 128, 0, c);
  OpBuilder::InsertionGuard guard(b);
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  FragmentBuilder fb(b, loc, c.elementType);
  ThreadCoords coords = fb.threadCoords();
  Value row = fb.add(
      fb.mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), 4),
      coords.warp);
  Value head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value bIdx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  auto ifRow = scf::IfOp::create(
      b, loc,
      fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), row,
             fb.index(c.seqQ)),
      false);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPoint(ifRow.thenBlock()->getTerminator());
    body(fb, entry.getArguments(), bIdx, head, row, coords.lane);
  }
  gpu::ReturnOp::create(b, loc);
}

/// Calls `body(d)` for d = lane + 32 i < dim, each under an scf.if.
void forLaneColumns(FragmentBuilder &fb, Value lane, int64_t dim,
                           function_ref<void(Value)> body) {
  OpBuilder &b = fb.builder();
  for (int64_t d0 = 0; d0 < dim; d0 += 32) {
    Value d = fb.add(lane, d0);
    auto ifD = scf::IfOp::create(
        b, fb.location(),
        fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), d,
               fb.index(dim)),
        false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifD.thenBlock()->getTerminator());
    body(d);
  }
}

} // namespace

void mlir::fa::emitBackwardPreKernel(OpBuilder &b, Location loc,
                                     gpu::GPUModuleOp module,
                                     const AttentionKernelConfig &c) {
  Type t = c.elementType, f32 = b.getF32Type();
  auto body = [&](FragmentBuilder &fb, ValueRange args, Value bIdx, Value h,
                  Value row, Value laneX) {
    // delta = sum over d of dO * O; lanes stride over d.
    Value sum = fb.f32(0.0);
    for (int64_t d0 = 0; d0 < c.headDimV; d0 += 32) {
      Value d = fb.add(laneX, d0);
      Value inRange = fb.cmp(static_cast<int>(arith::CmpIPredicate::slt), d,
                             fb.index(c.headDimV));
      Value safeD = fb.minS(d, fb.index(c.headDimV - 1));
      auto load = [&](Value memref) -> Value {
        Value x = memref::LoadOp::create(b, loc, memref,
                                         ValueRange{bIdx, h, row, safeD});
        return arith::ExtFOp::create(b, loc, f32, x);
      };
      Value product =
          arith::MulFOp::create(b, loc, load(args[0]), load(args[1]));
      sum = arith::AddFOp::create(b, loc, sum,
                                  fb.select(inRange, product, fb.f32(0.0)));
    }
    sum = fb.warpReduceSum(sum);
    auto ifLane0 = scf::IfOp::create(
        b, loc,
        fb.cmp(static_cast<int>(arith::CmpIPredicate::eq), laneX,
               fb.index(0)),
        false);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(ifLane0.thenBlock()->getTerminator());
      memref::StoreOp::create(b, loc, sum, args[2], ValueRange{bIdx, h, row});
    }
    forLaneColumns(fb, laneX, c.headDim, [&](Value d) {
      memref::StoreOp::create(b, loc, fb.f32(0.0), args[3],
                              ValueRange{bIdx, h, row, d});
    });
  };
  emitRowKernel(b, loc, module, c, "_pre", "backward_pre",
                {backwardTensorType(c, c.headsQ, c.seqQ, c.headDimV, t),
                 backwardTensorType(c, c.headsQ, c.seqQ, c.headDimV, t), backwardRowType(c, f32),
                 backwardTensorType(c, c.headsQ, c.seqQ, c.headDim, f32)},
                body);
}

void mlir::fa::emitBackwardPostKernel(OpBuilder &b, Location loc,
                                      gpu::GPUModuleOp module,
                                      const AttentionKernelConfig &c) {
  Type t = c.elementType, f32 = b.getF32Type();
  auto body = [&](FragmentBuilder &fb, ValueRange args, Value bIdx, Value h,
                  Value row, Value laneX) {
    forLaneColumns(fb, laneX, c.headDim, [&](Value d) {
      Value x = memref::LoadOp::create(b, loc, args[0],
                                       ValueRange{bIdx, h, row, d});
      memref::StoreOp::create(b, loc, arith::TruncFOp::create(b, loc, t, x),
                              args[1], ValueRange{bIdx, h, row, d});
    });
  };
  emitRowKernel(b, loc, module, c, "_post", "backward_post",
                {backwardTensorType(c, c.headsQ, c.seqQ, c.headDim, f32),
                 backwardTensorType(c, c.headsQ, c.seqQ, c.headDim, t)},
                body);
}
