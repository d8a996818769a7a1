"""QT403 / QT405 on biases real producers write, which are right.

QT405 on a dead channel: onnxruntime's quantize_static on PP-OCR rec after quant_pre_process (BatchNormalization
folded) gives some output channels weight scales near 1e-37; the bias scale it writes, x_scale * w_scale taken in
float32, is subnormal and so keeps fewer significant bits than 1e-6 relative. That is the product, not a wrong
scale; a bias scale a few subnormal steps off still is."""

from __future__ import annotations

import numpy as np
from checker_models import conv_model, int8

from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.proto import QType, Schema

X_SCALE = float(np.float32(9.41639e-05))  # the values of that file
DEAD = [float(np.float32(s)) for s in (0.01, 6.70658e-37, 0.04, 2.15555e-38)]  # two channels BatchNorm zeroed


def _model(steps_off: int):
    products = [np.float32(X_SCALE) * np.float32(s) for s in DEAD]  # float32 arithmetic, as onnxruntime's
    assert np.float32(products[1]) < np.finfo(np.float32).tiny  # subnormal: the case at hand
    scales = [float(p) for p in products]
    for _ in range(steps_off):  # float32 steps up from the float32 product
        scales[1] = float(np.nextafter(np.float32(scales[1]), np.float32(1), dtype=np.float32))
    weights = int8(DEAD, [0] * 4, axis=0, schema=Schema.SYMMETRIC)
    return conv_model(w_q=weights, bias=QType("int32", scales, [0] * 4, axis=0), x_q=int8(X_SCALE, 0))


def _qt405(model) -> list[str]:
    return [d.message for d in iter_diagnostics(model) if d.rule == "QT405"]


def test_a_subnormal_float32_product_is_the_bias_scale():
    assert _qt405(_model(0)) == []


def test_a_bias_scale_steps_away_from_a_subnormal_product_still_fires():
    (message,) = _qt405(_model(3))
    assert "scale[1]" in message


def _with_bias_values(model, values):
    bias = next(t for t in model.graph.initializer if t.name == "b")  # int8 storage under its marker, as raw bytes
    bias.raw_data = np.asarray(values, np.int8).tobytes()
    return model


def test_a_bias_that_is_all_zero_points_adds_nothing_at_any_storage_or_scale():
    """AMD Quark 0.13 A8W8 on PyTorch's zero-initialized out_proj bias: int8, scale 1, every value 0."""
    quark, weights = QType("int8", 1.0, 0), int8(0.01, 0, schema=Schema.SYMMETRIC)  # per tensor, as A8W8 writes
    rules = {d.rule for d in iter_diagnostics(_with_bias_values(conv_model(bias=quark, w_q=weights), [0, 0, 0, 0]))}
    assert rules == set()
    rules = {d.rule for d in iter_diagnostics(_with_bias_values(conv_model(bias=quark, w_q=weights), [0, 0, 1, 0]))}
    assert {"QT403", "QT405"} <= rules  # one value that is not 0: the bias adds something, in the wrong units
