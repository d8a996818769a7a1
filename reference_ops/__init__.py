"""Reference semantics of unmodified ONNX operators on quantized types."""
