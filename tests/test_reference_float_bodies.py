"""Operators ONNX defines by a function body are evaluated on exact reals (float64), semantics.md#exactness.

The expected values here are computed independently, in float64 numpy from the operator's body as ONNX writes it
(its float constants the float32 values it holds), never by onnx.reference: a reference that rounds a step of
the body to float32 (a typed constant, a Cast to stash_type) lands one step off on some of the 65,536 int16
inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference_models import T, typed_model

from onnx_qtypes import QType
from onnx_qtypes.reference_ops import ReferenceEvaluator, dequantize, quantize

F32 = lambda v: float(np.float32(v))  # noqa: E731 - a constant as the body's float32 Constant holds it
ERF = np.vectorize(math.erf)


def _gelu(x: np.ndarray) -> np.ndarray:  # Gelu-20 body: 0.5 x (1 + erf(x / sqrt(2)))
    return F32(0.5) * x * (F32(1) + ERF(x / np.sqrt(F32(2))))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    return F32(0.5) * x * (F32(1) + np.tanh(np.sqrt(F32(2 / math.pi)) * (x + F32(0.044715) * x ** 3)))


def _hard_swish(x: np.ndarray) -> np.ndarray:  # HardSwish-22 body: x * HardSigmoid(alpha=float32(1/6), beta=0.5)
    return x * np.clip(F32(1 / 6) * x + F32(0.5), 0, 1)


def _every_int16(x_t: QType) -> tuple[np.ndarray, np.ndarray]:
    q = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
    return q, dequantize(q, x_t)


@pytest.mark.parametrize(("approximate", "function"), [("none", _gelu), ("tanh", _gelu_tanh)])
def test_gelu_over_every_int16_input_is_its_body_on_exact_reals(approximate, function):
    x_t, y_t = QType("int16", 2.0 ** -11, 0), QType("int16", 2.0 ** -12, -20000)
    model = typed_model("Gelu", [T("x", (256, 256), x_t)], [T("y", (256, 256), y_t)], opset=21,
                        approximate=approximate)
    q, reals = _every_int16(x_t)
    want = quantize(function(reals), y_t)
    got = ReferenceEvaluator(model).run(None, {"x": q})[0]
    np.testing.assert_array_equal(got, want)


def test_hard_swish_takes_the_alpha_its_body_holds():
    """HardSwish's 1/6 is the float32 value of its body's HardSigmoid attribute (semantics.md#exactness): on these
    inputs the exact 1/6 and float32(1/6) quantize differently, and the reference gives the body's."""
    x_t, y_t = QType("int16", F32(0.001), 0), QType("int16", F32(0.0001), -20000)
    q, reals = _every_int16(x_t)
    body, formula = quantize(_hard_swish(reals), y_t), quantize(reals * np.clip(reals / 6 + 0.5, 0, 1), y_t)
    assert int((body != formula).sum()) == 6  # the decision is visible on this grid (semantics.md quotes the count)
    model = typed_model("HardSwish", [T("x", (256, 256), x_t)], [T("y", (256, 256), y_t)], opset=22)
    for kernels in ("definitional", "integer"):  # the integer kernel's table is built from the definition
        np.testing.assert_array_equal(ReferenceEvaluator(model, kernels=kernels).run(None, {"x": q})[0], body)


def test_a_cast_to_stash_type_in_a_body_does_not_round():
    """GroupNormalization's body casts to float32 (stash_type); the definition normalizes the exact reals."""
    x_t, y_t = QType("int16", 2.0 ** -9, 0), QType("int16", 2.0 ** -13, 0)
    rng = np.random.default_rng(3)
    q = rng.integers(-32768, 32768, (2, 4, 64, 64)).astype(np.int16)
    scale, bias = np.array([1.5, 0.75, -1.0, 2.0], np.float32), np.array([0.25, -0.5, 0.0, 1.0], np.float32)
    model = typed_model("GroupNormalization", [T("x", q.shape, x_t), T("s", (4,), value=scale),
                                               T("b", (4,), value=bias)], [T("y", q.shape, y_t)], opset=21,
                        num_groups=2, epsilon=1e-5)
    x = dequantize(q, x_t).reshape(2, 2, -1)
    z = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + F32(1e-5))
    want = quantize(z.reshape(q.shape) * scale.astype(np.float64)[None, :, None, None]
                    + bias.astype(np.float64)[None, :, None, None], y_t)
    np.testing.assert_array_equal(ReferenceEvaluator(model).run(None, {"x": q})[0], want)
