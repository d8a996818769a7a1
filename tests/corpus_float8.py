"""Float8 / float4 QDQ models for the interop tests, beside ``corpus.py`` (same conventions: built in code, nothing
downloaded, fresh copies per call).

- ``hand_built()``: per-tensor QDQ MatMul models written directly: x -> Q/DQ -> MatMul(W) -> Q/DQ -> y, with
  weights and activations of one float8 type each (e4m3fn, e5m2, and the fnuz pair), plus a float4e2m1 weight
  model (DequantizeLinear-23 weights, float activations) and an MXFP4 one (float4e2m1 weights, FLOAT8E8M0 scales
  per block of 32, DequantizeLinear-25), which onnxruntime 1.32 cannot run;
- ``quantizer_written()``: corpus.py's float cnn and mlp quantized by onnxruntime's own ``quantize_static`` with
  ``QuantType.QFLOAT8E4M3FN`` for weights and activations (its only calibration method for float8 is
  Distribution; its attention model fails inside that calibrator, so it is left out);
- ``FLOAT8_OPSET`` / ``FLOAT4_OPSET`` / ``MX_OPSET``: (IR version, opset) the hand-built models are written at.
"""

from __future__ import annotations

import functools
import pathlib
import tempfile

import ml_dtypes
import numpy as np
import onnx
from corpus import _Reader, _quiet, calibration_samples, float_models
from onnx import TensorProto, helper, numpy_helper

FLOAT8_OPSET = (10, 21)  # float8 QuantizeLinear exists from opset 19; onnxruntime 1.32 runs it on CPU
FLOAT4_OPSET = (11, 23)  # float4e2m1 from opset 23 (IR 11)
MX_OPSET = (13, 25)  # FLOAT8E8M0 scales from opset 24; onnxruntime 1.32 has no kernel for them
MX_BLOCK = 32  # OCP MX block size
FLOAT8 = {  # name -> (onnx data type, ml_dtypes type)
    "e4m3fn": (TensorProto.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn),
    "e5m2": (TensorProto.FLOAT8E5M2, ml_dtypes.float8_e5m2),
    "e4m3fnuz": (TensorProto.FLOAT8E4M3FNUZ, ml_dtypes.float8_e4m3fnuz),
    "e5m2fnuz": (TensorProto.FLOAT8E5M2FNUZ, ml_dtypes.float8_e5m2fnuz),
}
SHAPE_X, SHAPE_W = (3, 8), (8, 5)


def _scale(values: np.ndarray, dtype: type) -> np.float32:
    """A float32 scale that maps the largest magnitude to the type's largest finite value."""
    return np.float32(np.abs(values).max() / float(ml_dtypes.finfo(dtype).max))


def _matmul(kind: str) -> onnx.ModelProto:
    _, dtype = FLOAT8[kind]
    rng = np.random.default_rng(len(kind))
    w = rng.normal(0.0, 0.5, SHAPE_W).astype(np.float32)
    w_scale = _scale(w, dtype)
    zero = np.zeros((), dtype)
    inits = [
        numpy_helper.from_array((w / w_scale).astype(dtype), "w_q"),
        numpy_helper.from_array(np.array(w_scale), "w_scale"), numpy_helper.from_array(zero, "w_zero_point"),
        numpy_helper.from_array(np.float32(3.0 / float(ml_dtypes.finfo(dtype).max)), "x_scale"),
        numpy_helper.from_array(zero, "x_zero_point"),
        numpy_helper.from_array(np.float32(6.0 / float(ml_dtypes.finfo(dtype).max)), "y_scale"),
        numpy_helper.from_array(zero, "y_zero_point"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"], name="x_quantize"),
        helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["x_dq"], name="x_dequantize"),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero_point"], ["w_dq"], name="w_dequantize"),
        helper.make_node("MatMul", ["x_dq", "w_dq"], ["mm"], name="matmul"),
        helper.make_node("QuantizeLinear", ["mm", "y_scale", "y_zero_point"], ["mm_q"], name="mm_quantize"),
        helper.make_node("DequantizeLinear", ["mm_q", "y_scale", "y_zero_point"], ["y"], name="mm_dequantize"),
    ]
    graph = helper.make_graph(nodes, f"matmul_{kind}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE_X)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SHAPE_X[0], SHAPE_W[1]])], inits)
    ir, opset = FLOAT8_OPSET
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


def _float4_weights() -> onnx.ModelProto:
    """y = x @ DequantizeLinear(w: float4e2m1, per-axis scales along the output channels)."""
    rng = np.random.default_rng(4)
    w = rng.normal(0.0, 0.5, SHAPE_W).astype(np.float32)
    scales = (np.abs(w).max(axis=0) / 6.0).astype(np.float32)
    inits = [numpy_helper.from_array((w / scales).astype(ml_dtypes.float4_e2m1fn), "w_q"),
             numpy_helper.from_array(scales, "w_scale")]
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["w_dq"], name="w_dequantize", axis=1),
             helper.make_node("MatMul", ["x", "w_dq"], ["y"], name="matmul")]
    graph = helper.make_graph(nodes, "float4_weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE_X)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SHAPE_X[0], SHAPE_W[1]])], inits)
    ir, opset = FLOAT4_OPSET
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


def _mx_weights() -> onnx.ModelProto:
    """MXFP4 weights: y = x @ DequantizeLinear-25(w: float4e2m1, FLOAT8E8M0 scales per block of 32 along K)."""
    rng = np.random.default_rng(32)
    k, n = MX_BLOCK * 2, SHAPE_W[1]
    w = rng.normal(0.0, 0.5, (k, n)).astype(np.float32)
    largest = np.abs(w).reshape(2, MX_BLOCK, n).max(axis=1)
    scales = np.exp2(np.ceil(np.log2(largest / 6.0))).astype(np.float32)  # powers of two: what E8M0 holds
    inits = [numpy_helper.from_array((w / np.repeat(scales, MX_BLOCK, axis=0)).astype(ml_dtypes.float4_e2m1fn), "w_q"),
             numpy_helper.from_array(scales.astype(ml_dtypes.float8_e8m0fnu), "w_scale")]
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["w_dq"], name="w_dequantize", axis=0,
                              block_size=MX_BLOCK, output_dtype=TensorProto.FLOAT),
             helper.make_node("MatMul", ["x", "w_dq"], ["y"], name="matmul")]
    graph = helper.make_graph(nodes, "mxfp4_weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, n])], inits)
    ir, opset = MX_OPSET
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


def hand_built() -> dict[str, onnx.ModelProto]:
    """"matmul-<float8 kind>" for each float8 type, "matmul-float4e2m1-weights" and "matmul-mxfp4-weights"."""
    return {**{f"matmul-{kind}": _matmul(kind) for kind in FLOAT8}, "matmul-float4e2m1-weights": _float4_weights(),
            "matmul-mxfp4-weights": _mx_weights()}


def feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """A deterministic float input per graph input; a few values beyond the float8 range, so that saturation
    is exercised too."""
    rng = np.random.default_rng(seed)
    out = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        x = rng.normal(0.0, 1.0, shape).astype(np.float32)
        x.reshape(-1)[0] = 1e4  # beyond every activation scale's range: saturates
        out[vi.name] = x
    return out


@functools.cache
def _quantizer_written() -> dict[str, bytes]:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in ("cnn", "mlp"):
            source, target = pathlib.Path(folder, f"{name}.onnx"), pathlib.Path(folder, f"{name}-f8.onnx")
            onnx.save(float_models()[name], source)
            with _quiet():
                quantize_static(source, target, _Reader(calibration_samples(name)), quant_format=QuantFormat.QDQ,
                                activation_type=QuantType.QFLOAT8E4M3FN, weight_type=QuantType.QFLOAT8E4M3FN,
                                calibrate_method=CalibrationMethod.Distribution)
            out[f"{name}-qdq_float8e4m3fn"] = target.read_bytes()
    return out


def quantizer_written() -> dict[str, onnx.ModelProto]:
    """onnxruntime's quantize_static float8 output for the corpus cnn and mlp (fresh copies)."""
    return {name: onnx.load_from_string(data) for name, data in _quantizer_written().items()}
