// RUN: fa-opt %s -split-input-file -fa-expand-fp8-conversions | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-expand-fp8-conversions -fa-lower-to-host-llvm | FileCheck %s --check-prefix=LLVM

// An e4m3 byte decoded with integer ops: the fields moved into f32's with
// the exponent rebiased (normal), m * 2^-9 (subnormal), NaN for S.1111.111;
// then the result type.

// CHECK-LABEL: func @to_f32
// CHECK-DAG: %[[BIAS:.*]] = arith.constant 1006632960 : i32
// CHECK-DAG: %[[STEP:.*]] = arith.constant 0.001953125 : f32
// CHECK-DAG: %[[NAN:.*]] = arith.constant 2143289344 : i32
// CHECK: %[[BYTE:.*]] = arith.bitcast %arg0 : f8E4M3FN to i8
// CHECK: arith.extui %[[BYTE]] : i8 to i32
// CHECK: arith.addi %{{.*}}, %[[BIAS]] : i32
// CHECK: arith.uitofp
// CHECK: arith.mulf %{{.*}}, %[[STEP]] : f32
// CHECK: arith.ori %{{.*}}, %[[NAN]] : i32
// CHECK: arith.select
// CHECK: %[[V:.*]] = arith.select
// CHECK-NOT: arith.extf
// CHECK: return %[[V]] : f32
// LLVM-LABEL: llvm.func @to_f32
// LLVM-NOT: f8E4M3FN
func.func @to_f32(%x: f8E4M3FN) -> f32 {
  %y = arith.extf %x : f8E4M3FN to f32
  return %y : f32
}

// -----

// CHECK-LABEL: func @to_bf16_vector
// CHECK: arith.bitcast %arg0 : vector<4xf8E4M3FN> to vector<4xi8>
// CHECK: arith.extui {{.*}} : vector<4xi8> to vector<4xi32>
// CHECK: arith.select {{.*}} : vector<4xi1>, vector<4xf32>
// CHECK: %[[F:.*]] = arith.select {{.*}} : vector<4xi1>, vector<4xf32>
// CHECK: arith.truncf %[[F]] : vector<4xf32> to vector<4xbf16>
func.func @to_bf16_vector(%x: vector<4xf8E4M3FN>) -> vector<4xbf16> {
  %y = arith.extf %x : vector<4xf8E4M3FN> to vector<4xbf16>
  return %y : vector<4xbf16>
}

// -----

// Other extensions are left alone.

// CHECK-LABEL: func @bf16_to_f32
// CHECK: arith.extf %arg0 : bf16 to f32
func.func @bf16_to_f32(%x: bf16) -> f32 {
  %y = arith.extf %x : bf16 to f32
  return %y : f32
}

// -----

// An e4m3 encoding: the f32 magnitude's mantissa rounded to 3 bits by
// integer addition and rebiased (normal), round(|x| 2^9) below 2^-6
// (subnormal), 0x7F past 464 and for NaN, then the sign.
// CHECK-LABEL: func @from_bf16
// CHECK-DAG: %[[ROUND:.*]] = arith.constant 524287 : i32
// CHECK-DAG: %[[SMALLEST_NORMAL:.*]] = arith.constant 1015021568 : i32
// CHECK-DAG: %[[PAST_448:.*]] = arith.constant 1139277824 : i32
// CHECK: %[[X:.*]] = arith.extf %arg0 : bf16 to f32
// CHECK: arith.bitcast %[[X]] : f32 to i32
// CHECK: arith.addi %{{.*}}, %[[ROUND]] : i32
// CHECK: arith.fptoui
// CHECK: arith.cmpi ult, %{{.*}}, %[[SMALLEST_NORMAL]] : i32
// CHECK: arith.cmpi ugt, %{{.*}}, %[[PAST_448]] : i32
// CHECK: %[[BYTE:.*]] = arith.trunci %{{.*}} : i32 to i8
// CHECK: %[[V:.*]] = arith.bitcast %[[BYTE]] : i8 to f8E4M3FN
// CHECK: return %[[V]] : f8E4M3FN
// LLVM-LABEL: llvm.func @from_bf16
// LLVM-NOT: f8E4M3FN
func.func @from_bf16(%x: bf16) -> f8E4M3FN {
  %y = arith.truncf %x : bf16 to f8E4M3FN
  return %y : f8E4M3FN
}
