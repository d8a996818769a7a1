"""Lift QDQ / QOperator models into typed form; lower typed models to plain ONNX."""
