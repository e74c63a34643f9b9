package cpu

import "mlxchat/tensor"

// hasAVX2FMA is false until the assembly kernels exist.
const hasAVX2FMA = false

func quantSIMDOK(*tensor.Matrix) bool { return false }

func (b *Backend) matmulQuantSIMD(dst, x, xs []float32, n int, w *tensor.Matrix) {}
