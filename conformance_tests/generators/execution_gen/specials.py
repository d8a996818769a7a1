"""Special cases: rounding ties, saturation, zero-point extremes, order-selecting operators on negative zero points."""

from __future__ import annotations

import numpy as np

from .common import Spec, _i64, _storage_array, far_from_ties


def _specials(rm):

    from onnx_qtypes import QType  # noqa: PLC0415

    T = rm.T

    def q_linear(g, y, x, note):
        scale = np.asarray(y.scale[0], g.fdtype).reshape(())
        zp = np.asarray(y.zero_point[0]).astype(g.info.np_dtype).reshape(())
        fdt = g.fdt
        inputs = [T("x", x.shape, dtype=fdt), T("s", (), dtype=fdt, value=scale), T("z", (), value=zp)]
        return Spec("QuantizeLinear", inputs, [T("y", x.shape, y)], {}, anchor="quantize", note=note,
                    feeds={"x": far_from_ties(x.astype(g.fdtype), y)})

    def ties(g, v):
        """x / scale = k + 0.5 for k around the zero point: round half to even decides every element."""
        y = QType(g.storage, 0.25, 0 if g.info.min < 0 else 3, expressed=g.expressed)
        k = np.arange(-12, 12, dtype=np.float64)
        if g.info.bits == 4:
            k = np.concatenate([np.arange(-6, 6), np.arange(-6, 6)]).astype(np.float64)
        if g.info.bits == 2:
            k = np.tile(np.arange(-2, 2), 6).astype(np.float64)
        if g.info.min == 0:
            k = k - k.min() - 3
        x = ((k + 0.5) * 0.25).reshape(2, 3, 4)
        return q_linear(g, y, x, "rounding ties: x / scale is exactly k + 0.5 (round half to even)")

    def saturation(g, v):
        """Values beyond both ends of the storage range, and the last representable ones."""
        s = 0.5 if g.info.bits < 16 else 2.0 ** -4
        zp = 1 if g.info.min < 0 else 2
        y = QType(g.storage, s, zp, expressed=g.expressed)
        lo, hi = (g.info.min - zp) * s, (g.info.max - zp) * s
        vals = [lo - 100 * s, lo - s, lo - 0.5 * s, lo - 0.25 * s, lo, lo + s, hi - s, hi, hi + 0.25 * s,
                hi + 0.5 * s, hi + s, hi + 100 * s]
        if g.expressed == "float16":
            vals = [max(min(t, 60000.0), -60000.0) for t in vals]
        x = np.array(vals * 2, np.float64).reshape(2, 3, 4)
        return q_linear(g, y, x, "saturation: values past storage_min and storage_max clamp to them")

    def zp_extreme(which):
        def build(g, v):
            zp = g.info.min if which == "min" else g.info.max
            s = 2.0 ** -3 if g.info.bits < 16 else 2.0 ** -9
            y = QType(g.storage, s, zp, expressed=g.expressed)
            x = g.rng.normal(0, 1, (2, 3, 4)) * s * (g.info.max - g.info.min) / 2
            return q_linear(g, y, x, f"zero point at storage_{which}: half the reals saturate")
        return build

    def dq_zp_extreme(which):
        def build(g, v):
            zp = g.info.min if which == "min" else g.info.max
            s = 2.0 ** -3 if g.info.bits < 16 else 2.0 ** -9
            x = QType(g.storage, s, zp, expressed=g.expressed)
            fdt = g.fdt
            inputs = [T("x", (2, 3, 4), x), T("s", (), dtype=fdt, value=np.asarray(s, g.fdtype)),
                      T("z", (), value=np.asarray(zp).astype(g.info.np_dtype))]
            return Spec("DequantizeLinear", inputs, [T("y", (2, 3, 4), dtype=fdt)], {}, anchor="dequantize",
                        note=f"zero point at storage_{which}")
        return build

    def relu_zp_extreme(which):
        def build(g, v):
            zp = g.info.min if which == "min" else g.info.max
            x = QType(g.storage, g.scale(), zp, expressed=g.expressed)
            return Spec("Relu", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), x)], {},
                        note=f"zero point at storage_{which}")
        return build

    def requantize_ties(g, v):
        """The output scale is twice the input's with the same zero point: every odd step is a tie."""
        x = g.q()
        y = QType(g.storage, x.scale[0] * 2, x.zero_point[0], expressed=g.expressed)
        return Spec("Reshape", [T("x", (2, 3, 4), x), _i64(T, "shape", [6, 4])], [T("y", (6, 4), y)], {},
                    anchor="rounding", note="requantization ties: (q - zp) / 2 is k + 0.5 for odd q - zp")

    def add_saturation(g, v):
        """Sums far beyond the output's range: both ends saturate."""
        a, b = g.q(), g.q()
        y = QType(g.storage, min(a.scale[0], b.scale[0]) / 8, (g.info.min + g.info.max + 1) // 2,
                  expressed=g.expressed)
        return Spec("Add", [T("a", (2, 3, 4), a), T("b", (3, 4), b)], [T("y", (2, 3, 4), y)], {},
                    note="saturation at both ends of the output's storage range")

    def order_selecting(op, shape, out_shape, extra=(), **attrs):
        """Reals below zero on most of the range (a negative zero point; every real <= 0 on unsigned storage) and
        both storage extremes in the data: the maximum / minimum is the stored one, nothing saturates or rounds."""
        def build(g, v):
            zp = g.info.max if g.info.min == 0 else g.info.min // 2
            x = QType(g.storage, g.scale(), zp, expressed=g.expressed)
            data = g.rng.integers(g.info.min, g.info.max + 1, size=shape).astype(np.int64).ravel()
            data[:2] = g.info.min, g.info.max
            data = g.rng.permutation(data).reshape(shape)
            return Spec(op, [T("x", shape, x), *extra], [T("y", out_shape, x)], dict(attrs),
                        anchor="data-movement", feeds={"x": _storage_array(data, x)},
                        note="negative zero point, storage_min and storage_max in the data")
        return build

    def tanh_float_step(g, v):
        """Inputs where onnxruntime's float32 tanh (1.32.0, unoptimized DQ -> Tanh -> Q) rounds one step from the
        float64 definition: 10 of the 65,536 int16 inputs at these scales (found by running all of them)."""
        if g.storage != "int16" or g.expressed != "float32":
            return None
        x, y = QType("int16", 2.0 ** -10, 0), QType("int16", 2.0 ** -14, 0)
        crossing = [-5678, -4682, -4553, -1022, -157, 157, 1022, 4553, 4682, 5678]
        data = np.array(crossing + list(range(-7000, 7000, 1000)), np.int64).reshape(2, 3, 4)
        return Spec("Tanh", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), y)], {}, anchor="expressed-arithmetic",
                    feeds={"x": _storage_array(data, x)},
                    note="inputs where a float32 tanh rounds across a rounding boundary")

    return {
        "reduce_max-negative-zp": order_selecting("ReduceMax", (2, 3, 4), (2, 3, 1), [_i64(T, "axes", [2])],
                                                  keepdims=1),
        "reduce_min-negative-zp": order_selecting("ReduceMin", (2, 3, 4), (2, 1, 4), [_i64(T, "axes", [1])],
                                                  keepdims=1),
        "global_max_pool-negative-zp": order_selecting("GlobalMaxPool", (1, 3, 2, 2), (1, 3, 1, 1)),
        "tanh-float-step": tanh_float_step,
        "ties": ties, "saturation": saturation,
        "zp-min": zp_extreme("min"), "zp-max": zp_extreme("max"),
        "dq-zp-min": dq_zp_extreme("min"), "dq-zp-max": dq_zp_extreme("max"),
        "relu-zp-min": relu_zp_extreme("min"), "relu-zp-max": relu_zp_extreme("max"),
        "requantize-ties": requantize_ties, "add-saturation": add_saturation,
    }
