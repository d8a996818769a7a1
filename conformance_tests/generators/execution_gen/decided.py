"""The cases RFC's answers to the review's questions name (the spec cites them by id): the calling convention of dynamic graph
inputs and outputs (B1), an accumulator an int32 runtime would wrap (B3), NaN and infinities into integer storage
(B6), negative weight scales on requantizing linear operators (B7, in features.py), DynamicQuantizeLinear on all
zeros (B8), saturate=0 on a float8 boundary (B9) and 16-bit dynamic parameters in float16 (B10)."""

from __future__ import annotations

import numpy as np

from .common import Spec, far_from_ties

# how a dynamic graph input is fed (semantics.md#dynamic-binding): the case's note, its feature tag
_FED = {"storage": ("fed as storage with x.scale and x.zero_point", "dynamic-input-storage"),
        "storage-without-zero-point": ("fed as storage with x.scale only: the optional x.zero_point absent means 0",
                                       "dynamic-input-storage"),
        "reals": ("fed as reals, quantized by its schema", "dynamic-input-reals")}


def _decided(rm):
    from onnx import TensorProto  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.reference_ops import dynamic_parameters  # noqa: PLC0415

    T = rm.T

    def dynamic_input(fed_as):
        """x: a dynamic int8 graph input; fed as storage with x.scale / x.zero_point, or as reals quantized by its
        schema (semantics.md#dynamic-binding). Add with a static c into a static y."""
        def build(g, v):
            x = QType("int8", expressed=g.expressed)
            c = QType("int8", 2.0 ** -4, 9, expressed=g.expressed)
            y = QType("int8", 2.0 ** -3, -4, expressed=g.expressed)
            if fed_as.startswith("storage"):
                feeds = {"x": g.rng.integers(-128, 128, (2, 3, 4)).astype(np.int8),
                         "x.scale": np.asarray(3 * 2.0 ** -6, np.float32), "x.zero_point": np.asarray(-11, np.int8)}
                if fed_as == "storage-without-zero-point":  # optional: absent means 0 (semantics.md §3)
                    del feeds["x.zero_point"]
            else:
                reals = g.rng.normal(0.5, 2.0, (2, 3, 4)).astype(np.float32)
                for _ in range(3):
                    reals = far_from_ties(reals, dynamic_parameters(reals, x))
                feeds = {"x": reals}
            return Spec("Add", [T("x", (2, 3, 4), x), T("c", (2, 3, 4), c)], [T("y", (2, 3, 4), y)], {},
                        anchor="dynamic-binding", feeds=feeds, features=("dynamic", _FED[fed_as][1]),
                        qdq="lower-reals" if fed_as == "reals" else "lower", note=f"a dynamic graph input {_FED[fed_as][0]}")
        return build

    def dynamic_output(g, v):
        """y: a dynamic int8 graph output of Identity(x): its storage, y.scale and y.zero_point."""
        y = QType("int8", expressed=g.expressed)
        x = g.rng.normal(-0.5, 3.0, (2, 3, 4)).astype(np.float32)
        for _ in range(3):
            x = far_from_ties(x, dynamic_parameters(x, y))
        return Spec("Identity", [T("x", (2, 3, 4))], [T("y", (2, 3, 4), y)], {}, anchor="dynamic-binding",
                    feeds={"x": x}, features=("dynamic", "dynamic-output"),
                    note="a dynamic graph output: its storage, y.scale and y.zero_point")

    def accumulator(g, v):
        """int16 activations at their extremes times int8 weights over K = 1024: the exact sums reach 4.3e9, so an
        int32 accumulator that wraps changes the output (QT407 warns; B3: compute exactly or refuse)."""
        k = 1024
        a = QType("int16", 2.0 ** -8, 0, expressed=g.expressed)
        b = QType("int8", 2.0 ** -7, 0, schema="symmetric", expressed=g.expressed)
        data = np.full((2, k), 32767, np.int64)
        data[1, ::3] = -32768
        weights = np.full((k, 3), 127, np.int64)
        weights[:, 1] = -128
        weights[::2, 2] = -128
        step = 2.0 ** -8 * 2.0 ** -7 * 2.0 ** 17  # the output's step: 2^17 accumulator units
        y = QType("int16", step, 0, expressed=g.expressed)
        return Spec("MatMul", [T("a", (2, k), a), T("b", (k, 3), b, value=weights)], [T("y", (2, 3), y)], {},
                    feeds={"a": data.astype(np.int16)}, features=("accumulator",),
                    note="exact sums beyond the int32 range (an int32 accumulator would wrap)")

    def quantize_nan_inf(g, v):
        y = QType("int8", 0.5, -3, expressed=g.expressed)
        x = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -1.75, 300.0, -300.0, np.nan, 2.25, -np.inf, 63.0], np.float32)
        inputs = [T("x", (12,), dtype=TensorProto.FLOAT), T("s", (), value=np.asarray(0.5, np.float32)),
                  T("z", (), value=np.asarray(-3, np.int8))]
        return Spec("QuantizeLinear", inputs, [T("y", (12,), y)], {}, anchor="quantize", feeds={"x": x},
                    note="NaN is the zero point, +inf and -inf saturate")

    def all_zero(g, v):
        """DynamicQuantizeLinear of zeros: y and y_zero_point are normative, y_scale any positive finite value (B8),
        judged as such (case.json "judge")."""
        nodes = [("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"], {})]
        outputs = [T("y", (2, 3, 4), QType("uint8")), T("y_scale", ()), T("y_zero_point", (), dtype=TensorProto.UINT8)]
        return Spec("DynamicQuantizeLinear", [T("x", (2, 3, 4))], outputs, {}, nodes=nodes, qdq="plain",
                    anchor="all-zero", feeds={"x": np.zeros((2, 3, 4), np.float32)},
                    note="all-zero input: y and y_zero_point exact, y_scale any positive finite value")

    def saturate_0(g, v):
        y = QType("float8e4m3fn", 2.0 ** -2, 0)
        x = np.array([1.0, -3.5, 100.0, 112.0, 113.0, -200.0, 1e6, -1e6, 0.01, 0.0, -0.03, 50.0], np.float32)
        inputs = [T("x", (12,), dtype=TensorProto.FLOAT), T("s", (), value=np.asarray(0.25, np.float32))]
        return Spec("QuantizeLinear", inputs, [T("y", (12,), y)],
                    {"saturate": 0, "output_dtype": TensorProto.FLOAT8E4M3FN}, anchor="float-storage", feeds={"x": x},
                    note="saturate=0: beyond 448 steps the value is NaN (the node's attribute governs)")

    def dynamic_16bit_float16(g, v):
        """Identity into a dynamic 16-bit float16 type and out to float16: qmax - qmin = 65535 is no float16 value,
        so the parameters need the exact integer constants (B10)."""
        h = QType(g.storage, expressed="float16")
        x = g.rng.normal(0.25, 3.0, (2, 3, 4)).astype(np.float16)
        nodes = [("Identity", ["x"], ["h"], {}), ("Identity", ["h"], ["y"], {})]
        step = dynamic_parameters(x, h).scale[0]  # y is judged in h's steps (every element is a near-tie in float16)
        return Spec("Identity", [T("x", (2, 3, 4), dtype=TensorProto.FLOAT16)],
                    [T("y", (2, 3, 4), dtype=TensorProto.FLOAT16)], {}, nodes=nodes, hidden=[T("h", (2, 3, 4), h)],
                    anchor="dynamic-parameters", feeds={"x": x}, features=("dynamic",), steps={"y": step},
                    note="dynamic 16-bit parameters computed in float16 with exact integer constants")

    return [
        ("dynamic-graph-input-storage-int8-float32", "int8", "float32", "dynamic", dynamic_input("storage")),
        ("dynamic-graph-input-storage-without-zero-point-int8-float32", "int8", "float32", "dynamic",
         dynamic_input("storage-without-zero-point")),
        ("dynamic-graph-input-reals-int8-float32", "int8", "float32", "dynamic", dynamic_input("reals")),
        ("dynamic-graph-output-int8-float32", "int8", "float32", "dynamic", dynamic_output),
        ("matmul-accumulator-exceeds-int32-int16-int8-float32", "int16", "float32", "per-tensor", accumulator),
        ("quantize-linear-nan-inf-int8-float32", "int8", "float32", "per-tensor", quantize_nan_inf),
        ("dynamic-quantize-linear-all-zero", "uint8", "float32", "dynamic", all_zero),
        ("quantize-linear-float8e4m3fn-saturate-0", "float8e4m3fn", "float32", "per-tensor", saturate_0),
        ("dynamic-quantize-uint16-float16", "uint16", "float16", "dynamic", dynamic_16bit_float16),
        ("dynamic-quantize-int16-float16", "int16", "float16", "dynamic", dynamic_16bit_float16),
    ]
