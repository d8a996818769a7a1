"""Integer-only kernels, one ONNX operator per module."""
