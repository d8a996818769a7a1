"""Target profiles (tensorrt-int8, ethos-u-vela, qnn-htp, vitis-ai-dpu): each is valid, cites public sources,
accepts a model built for its target, and rejects a near miss that breaks exactly one of its constraints with
the QT5xx rule that names that constraint."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from builders import ROOT
from checker_models import F32, Graph, conv_model, int8, mover, unary_model

from onnx_qtypes import QType
from onnx_qtypes.checker import iter_diagnostics, load_profile
from onnx_qtypes.checker.profile import schema

TARGETS = ["tensorrt-int8", "ethos-u-vela", "qnn-htp", "vitis-ai-dpu"]
P2 = [2.0**-7] * 4  # per-channel power-of-two weight scales


@pytest.mark.parametrize("name", TARGETS)
def test_target_profile_validates_and_cites_public_sources(name):
    document = json.loads((ROOT / "checker" / "profiles" / f"{name}.json").read_text())
    jsonschema.Draft202012Validator(schema()).validate(document)
    profile = load_profile(name)
    assert profile.name == name and len(profile.sources) >= 2
    assert all(s["url"].startswith("https://") and s.get("says") for s in profile.sources)
    spec = (ROOT / "proposal" / "spec" / "profiles.md").read_text()
    assert f'<a id="{name}"></a>' in spec
    assert all(s["url"] in spec for s in profile.sources), "profiles.md's table cites every source of the profile"


def _sixteen_bit(op: str, out_q: QType, x_q: QType | None = None):
    """x_q (16-bit graph input) -> op -> y_q -> DQ -> y."""
    x_q = x_q or QType(out_q.storage, 2.0**-10, out_q.zero_point[0] if out_q.storage == "uint16" else 0)
    g = Graph(op.lower()).input("x_q", (1, 8), x_q)
    g.node(op, ["x_q"], ["y_q"], name=op.lower()).value("y_q", (1, 8), out_q)
    return g.dequantize("y_q", "y", out_q).output("y", (1, 8)).build()


def _bias(x_scale: float, w_scales, axis: int | None = 0) -> QType:
    scales = [float(np.float32(x_scale) * np.float32(s)) for s in w_scales]
    return QType("int32", scales if axis is not None else scales[0], [0] * len(scales) if axis is not None else 0,
                 axis=axis)


def _conv16x8(y_q: QType | None = None):
    """int16 activations, int8 per-channel weights, int32 bias (TFLite's 16x8 mode)."""
    x_q = QType("int16", 2.0**-12, 0)
    return conv_model(x_q=x_q, y_q=y_q or QType("int16", 2.0**-10, 0), bias=_bias(2.0**-12, [0.01, 0.02, 0.04, 0.005]))


def _conv_uint8(w_q: QType | None = None, bias: QType | None | str = "default"):
    x_q, y_q = QType("uint8", F32, 128), QType("uint8", 0.05, 128)
    if bias == "default":
        bias = _bias(F32, [0.01, 0.02, 0.04, 0.005])
    return conv_model(x_q=x_q, y_q=y_q, w_q=w_q, bias=bias)


def _pow2_conv(per_channel: bool = False, y_scale: float = 2.0**-4):
    w_q = int8(P2, [0] * 4, axis=0) if per_channel else int8(2.0**-7, 0)
    bias = _bias(2.0**-6, P2 if per_channel else P2[:1], axis=0 if per_channel else None)
    return conv_model(x_q=int8(2.0**-6, 0), y_q=int8(y_scale, 0), w_q=w_q, bias=bias)


def _relu(q: QType):
    return mover("Relu", (1, 8), (1, 8), q, q)


def _reshape(out_scale: float):
    shape = ("shape", np.array([1, 8], np.int64))
    return mover("Reshape", (1, 2, 4), (1, 8), int8(0.1, 0), int8(out_scale, 0), extra_inputs=[shape])


FITS = {
    "tensorrt-int8": lambda: conv_model(y_q=int8(0.05, 0)),
    "ethos-u-vela": conv_model,  # int8 activations with a zero point, symmetric per-channel weights
    "ethos-u-vela/16x8": _conv16x8,
    "ethos-u-vela/reshape": lambda: _reshape(0.1),
    "qnn-htp": _conv_uint8,
    "qnn-htp/sigmoid-u16": lambda: _sixteen_bit("Sigmoid", QType("uint16", 2.0**-16, 0)),
    "qnn-htp/tanh-u16": lambda: _sixteen_bit("Tanh", QType("uint16", 2.0**-15, 32768)),
    "qnn-htp/sigmoid-i16": lambda: _sixteen_bit("Sigmoid", QType("int16", 2.0**-15, 0)),
    "vitis-ai-dpu": _pow2_conv,
}


@pytest.mark.parametrize("case", sorted(FITS))
def test_a_model_built_for_the_target_checks_clean(case):
    name = case.split("/")[0]
    errors = [str(d) for d in iter_diagnostics(FITS[case](), name) if d.is_error]
    assert errors == []


NEAR_MISSES = [
    # (profile, what breaks, model, the one rule that fires)
    ("tensorrt-int8", "activation zero point -10", lambda: conv_model(), "QT504"),
    ("tensorrt-int8", "per-channel activations", lambda: _relu(int8([0.1] * 8, [0] * 8, axis=1)), "QT503"),
    ("tensorrt-int8", "uint8 activations", lambda: conv_model(x_q=QType("uint8", F32, 0), y_q=int8(0.05, 0)), "QT501"),
    ("ethos-u-vela", "Exp is not placed on the NPU", lambda: unary_model("Exp", int8(0.1, 0)), "QT508"),
    ("ethos-u-vela", "Reshape changes the scale", lambda: _reshape(0.2), "QT506"),
    ("ethos-u-vela", "uint8 activations", _conv_uint8, "QT501"),
    ("qnn-htp", "uint16 Sigmoid output at scale 2^-15",
     lambda: _sixteen_bit("Sigmoid", QType("uint16", 2.0**-15, 0)), "QT507"),
    ("qnn-htp", "uint16 Tanh output with zero point 0",
     lambda: _sixteen_bit("Tanh", QType("uint16", 2.0**-15, 0)), "QT507"),
    ("qnn-htp", "per-channel activations", lambda: _relu(QType("uint8", [0.1] * 8, [0] * 8, axis=1)), "QT503"),
    ("vitis-ai-dpu", "output scale 0.05", lambda: _pow2_conv(y_scale=0.05), "QT505"),
    ("vitis-ai-dpu", "per-channel weights", lambda: _pow2_conv(per_channel=True), "QT503"),
]


@pytest.mark.parametrize(("name", "what", "build", "rule"), NEAR_MISSES, ids=[f"{n}:{w}" for n, w, _, _ in NEAR_MISSES])
def test_a_near_miss_gives_exactly_its_finding(name, what, build, rule):
    model = build()
    errors = {d.rule for d in iter_diagnostics(model, name) if d.is_error}
    assert errors == {rule}, what
    generic = {d.rule for d in iter_diagnostics(model, "generic") if d.is_error}
    assert generic == set(), f"{what}: the model is valid under the extension; only the target refuses it"
