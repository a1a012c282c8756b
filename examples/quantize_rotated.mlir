// K of an FP8 attention, quantized on the GPU: e4m3 values with one descale
// per (batch, KV head), after FlashAttention 3's random Hadamard rotation
// (Q takes the same seed, so Q Kᵀ is unchanged).
//   fa-compile examples/quantize_rotated.mlir --chip=sm_90a -o quantize_k
func.func @quantize_k(%k: tensor<2x4x1000x128xbf16>)
    -> (tensor<2x4x1000x128xf8E4M3FN>, tensor<2x4xf32>) {
  %k8, %descale = fa.quantize %k rotate(seed = 12345)
      : tensor<2x4x1000x128xbf16> -> tensor<2x4x1000x128xf8E4M3FN>, tensor<2x4xf32>
  return %k8, %descale : tensor<2x4x1000x128xf8E4M3FN>, tensor<2x4xf32>
}
