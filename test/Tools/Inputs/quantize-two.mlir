func.func @a(%x: tensor<1x2x64x64xbf16>) -> (tensor<1x2x64x64xf8E4M3FN>, tensor<1x2xf32>) {
  %q, %d = fa.quantize %x : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf8E4M3FN>, tensor<1x2xf32>
  return %q, %d : tensor<1x2x64x64xf8E4M3FN>, tensor<1x2xf32>
}
func.func @b(%x: tensor<1x2x64x64xbf16>) -> (tensor<1x2x64x64xf8E4M3FN>, tensor<1x2xf32>) {
  %q, %d = fa.quantize %x : tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xf8E4M3FN>, tensor<1x2xf32>
  return %q, %d : tensor<1x2x64x64xf8E4M3FN>, tensor<1x2xf32>
}
