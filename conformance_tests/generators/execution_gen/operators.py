"""One builder per operator: (gen, variant) -> Spec | None; the operator cases cross each with every storage and expressed type."""

from __future__ import annotations

import numpy as np

from .common import Spec, _bias, _i64, far_from_ties


def _ops(rm):
    from onnx import TensorProto  # noqa: PLC0415

    T = rm.T

    def fdt(g):
        return g.fdt

    def binary(op):
        def build(g, v):
            a, b = g.q(), g.q()
            wa, wb = g.width(a), g.width(b)
            y = g.out(wa * wb / 4 if op == "Mul" else (wa + wb) * 0.75)
            return Spec(op, [T("a", (2, 3, 4), a), T("b", (3, 4), b)], [T("y", (2, 3, 4), y)], {})
        return build

    def same(op, shape, out_shape, extra=(), **attrs):
        def build(g, v):
            x = g.q()
            return Spec(op, [T("x", shape, x), *extra], [T("y", out_shape, x)], dict(attrs))
        return build

    def lut(op):
        def build(g, v):
            x = g.fit(np.linspace(-6, 6, 13))  # the inputs span the curve's bend
            width = {"Sigmoid": 1.0, "Tanh": 2.0}.get(op, g.width(x) / 2)
            return Spec(op, [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), g.out(width))], {})
        return build

    def relu(g, v):
        x = g.q()
        return Spec("Relu", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), x)], {})

    def clip(g, v):
        x = g.q()
        reals = x.scale[0] * (np.array([x.storage_min, x.storage_max]) - x.zero_point[0])
        lo, hi = (float(np.round(t, 2)) for t in np.sort(g.rng.uniform(0.1, 0.9, 2)) * (reals[1] - reals[0]) + reals[0])
        inputs = [T("x", (2, 3, 4), x), T("lo", (), dtype=fdt(g), value=np.asarray(lo, g.fdtype)),
                  T("hi", (), dtype=fdt(g), value=np.asarray(hi, g.fdtype))]
        return Spec("Clip", inputs, [T("y", (2, 3, 4), x)], {})

    def leaky_relu(g, v):
        x = g.q()
        return Spec("LeakyRelu", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), g.out(g.width(x)))], {"alpha": 0.125})

    def softmax(g, v):
        from onnx_qtypes import QType  # noqa: PLC0415

        bits = g.info.bits
        zp = g.info.min if g.info.min < 0 else 0
        y = QType(g.storage, 2.0 ** -bits, zp, expressed=g.expressed)
        return Spec("Softmax", [T("x", (2, 5), g.q())], [T("y", (2, 5), y)], {"axis": -1})

    def max_pool(g, v):
        x = g.q()
        return Spec("MaxPool", [T("x", (1, 2, 5, 5), x)], [T("y", (1, 2, 2, 2), x)],
                    {"kernel_shape": [2, 2], "strides": [2, 2]})

    def average_pool(g, v):
        x = g.q()
        return Spec("AveragePool", [T("x", (1, 2, 4, 4), x)], [T("y", (1, 2, 3, 3), x)],
                    {"kernel_shape": [2, 2], "strides": [1, 1]})

    def global_average_pool(g, v):
        x = g.q()
        return Spec("GlobalAveragePool", [T("x", (1, 3, 2, 2), x)], [T("y", (1, 3, 1, 1), x)], {})

    def reduce_mean(g, v):
        x = g.q()
        inputs = [T("x", (2, 3, 4), x), _i64(T, "axes", [2])]
        return Spec("ReduceMean", inputs, [T("y", (2, 3, 1), g.out(g.width(x) / 2))], {"keepdims": 1})

    def concat(g, v):
        x = g.q()
        return Spec("Concat", [T("x0", (2, 1, 3), x), T("x1", (2, 2, 3), x)], [T("y", (2, 3, 3), x)], {"axis": 1})

    def pad(g, v):
        x = g.q()
        inputs = [T("x", (1, 2, 3, 4), x), _i64(T, "pads", [0, 0, 1, 2, 0, 0, 2, 1])]
        return Spec("Pad", inputs, [T("y", (1, 2, 6, 7), x)], {"mode": "constant"})

    def resize(g, v):
        x = g.q()
        inputs = [T("x", (1, 2, 3, 4), x), None, T("scales", (4,), value=np.array([1, 1, 2, 1.5], np.float32))]
        return Spec("Resize", inputs, [T("y", (1, 2, 6, 6), x)], {"mode": "nearest"})

    def gather(g, v):
        x = g.q()
        idx = T("idx", (2, 2), dtype=TensorProto.INT64, value=np.array([[0, 4], [2, 2]], np.int64))
        return Spec("Gather", [T("x", (5, 3), x), idx], [T("y", (2, 2, 3), x)], {"axis": 0})

    def indexed(op, shape, idx, out_shape, **attrs):
        def build(g, v):
            x = g.q()
            index = T("idx", np.shape(idx), dtype=TensorProto.INT64, value=np.array(idx, np.int64))
            return Spec(op, [T("x", shape, x), index], [T("y", out_shape, x)], dict(attrs))
        return build

    def split(g, v):
        x = g.q()
        return Spec("Split", [T("x", (2, 6), x), _i64(T, "split", [2, 4])], [T("y0", (2, 2), x), T("y1", (2, 4), x)],
                    {"axis": 1})

    def slice_(g, v):
        x = g.q()
        extra = [_i64(T, "starts", [1, 0]), _i64(T, "ends", [3, 6]), _i64(T, "axes", [0, 1]), _i64(T, "steps", [1, 2])]
        return Spec("Slice", [T("x", (4, 6), x), *extra], [T("y", (2, 3), x)], {})

    def conv(g, v):
        per_axis = v == "per-axis"
        x = g.q()
        w = g.weight((3, 2, 3, 3), 0 if per_axis else None)
        y = g.out(g.width(x) * g.width(w) * 18 ** 0.5 / 6)
        inputs = [T("x", (1, 2, 5, 5), x), T("w", (3, 2, 3, 3), w, value=g.data(w, (3, 2, 3, 3)).astype(np.int32))]
        bq = _bias(g, x, w, 3)
        inputs.append(T("b", (3,), bq, value=np.array([-97, 0, 194], np.int32)))
        return Spec("Conv", inputs, [T("y", (1, 3, 5, 5), y)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})

    def conv_transpose(g, v):
        per_axis = v == "per-axis"
        x = g.q()
        w = g.weight((2, 3, 2, 2), 1 if per_axis else None)
        y = g.out(g.width(x) * g.width(w) * 2 ** 0.5 / 6)
        inputs = [T("x", (1, 2, 3, 3), x), T("w", (2, 3, 2, 2), w, value=g.data(w, (2, 3, 2, 2)).astype(np.int32))]
        return Spec("ConvTranspose", inputs, [T("y", (1, 3, 6, 6), y)], {"kernel_shape": [2, 2], "strides": [2, 2]})

    def matmul(g, v):
        per_axis = v == "per-axis"
        a = g.q()
        b = g.weight((4, 5), 0, block=2) if v == "blocked" else g.weight((4, 5), 1 if per_axis else None)
        y = g.out(g.width(a) * g.width(b) * 4 ** 0.5 / 6)
        inputs = [T("a", (2, 3, 4), a), T("b", (4, 5), b, value=g.data(b, (4, 5)).astype(np.int32))]
        return Spec("MatMul", inputs, [T("y", (2, 3, 5), y)], {})

    def gemm(g, v):
        per_axis = v == "per-axis"
        a = g.q()
        b = g.weight((5, 4), 0 if per_axis else None)
        y = g.out(g.width(a) * g.width(b) * 4 ** 0.5 / 6)
        inputs = [T("a", (3, 4), a), T("b", (5, 4), b, value=g.data(b, (5, 4)).astype(np.int32))]
        cq = _bias(g, a, b, 5)  # per-axis: axis 0 of the (5,) bias, the output channels
        inputs.append(T("c", (5,), cq, value=np.array([-300, -7, 0, 11, 250], np.int32)))
        return Spec("Gemm", inputs, [T("y", (3, 5), y)], {"transB": 1})

    def boundary_parameters(g, qtype, shape=None) -> list:
        """The scale and zero-point inputs of a QuantizeLinear / DequantizeLinear applying ``qtype``."""
        from onnx_qtypes.proto.parameter_layout import parameter_shape  # noqa: PLC0415

        scale = np.asarray(qtype.scale, g.fdtype)
        zp = np.asarray(qtype.zero_point).astype(g.info.np_dtype)
        if qtype.axis is None:
            scale, zp = scale.reshape(()), zp.reshape(())
        elif qtype.block_size is not None:
            scale, zp = scale.reshape(parameter_shape(qtype, shape)), zp.reshape(parameter_shape(qtype, shape))
        return [T("s", scale.shape, dtype=fdt(g), value=scale), T("z", zp.shape, value=zp)]

    def quantize_linear(g, v):
        per_axis = v == "per-axis"
        y = g.q(3, 1) if per_axis else g.q(12, 2, block=2) if v == "blocked" else g.q()
        inputs = [T("x", (2, 3, 4), dtype=fdt(g)), *boundary_parameters(g, y, (2, 3, 4))]
        spread = float(np.max(y.scale)) * (g.info.max - g.info.min) / 8
        feeds = {"x": far_from_ties((g.rng.normal(0, 1, (2, 3, 4)) * spread).astype(g.fdtype), y)}
        attrs = {"axis": 1} if per_axis else {"axis": 2, "block_size": 2} if v == "blocked" else {}
        return Spec("QuantizeLinear", inputs, [T("y", (2, 3, 4), y)], attrs, anchor="boundary", feeds=feeds)

    def dequantize_linear(g, v):
        per_axis = v == "per-axis"
        x = g.q(4, 2) if per_axis else g.q(12, 2, block=2) if v == "blocked" else g.q()
        inputs = [T("x", (2, 3, 4), x), *boundary_parameters(g, x, (2, 3, 4))]
        attrs = {"axis": 2} if per_axis else {"axis": 2, "block_size": 2} if v == "blocked" else {}
        return Spec("DequantizeLinear", inputs, [T("y", (2, 3, 4), dtype=fdt(g))], attrs, anchor="boundary")

    return {
        "Add": binary("Add"), "Sub": binary("Sub"), "Mul": binary("Mul"),
        "Relu": relu, "Clip": clip, "LeakyRelu": leaky_relu,
        "Sigmoid": lut("Sigmoid"), "Tanh": lut("Tanh"), "HardSwish": lut("HardSwish"), "Softmax": softmax,
        "MaxPool": max_pool, "AveragePool": average_pool, "GlobalAveragePool": global_average_pool,
        "ReduceMean": reduce_mean,
        "Reshape": same("Reshape", (2, 3, 4), (6, 4), [_i64(T, "shape", [6, 4])]),
        "Transpose": same("Transpose", (2, 3, 4), (4, 2, 3), perm=[2, 0, 1]),
        "Flatten": same("Flatten", (2, 3, 4), (6, 4), axis=2),
        "Squeeze": same("Squeeze", (2, 1, 4), (2, 4), [_i64(T, "axes", [1])]),
        "Unsqueeze": same("Unsqueeze", (2, 4), (2, 1, 4), [_i64(T, "axes", [1])]),
        "Concat": concat, "Pad": pad, "Resize": resize, "Gather": gather, "Slice": slice_,
        "Identity": same("Identity", (2, 3, 4), (2, 3, 4)),
        "Expand": same("Expand", (3, 1), (2, 3, 4), [_i64(T, "shape", [2, 3, 4])]),
        "Tile": same("Tile", (2, 3), (4, 6), [_i64(T, "repeats", [2, 2])]),
        "DepthToSpace": same("DepthToSpace", (1, 8, 2, 3), (1, 2, 4, 6), blocksize=2, mode="CRD"),
        "SpaceToDepth": same("SpaceToDepth", (1, 2, 4, 6), (1, 8, 2, 3), blocksize=2),
        "GatherElements": indexed("GatherElements", (3, 4), [[3, 0], [1, 1], [0, 2]], (3, 2), axis=1),
        "GatherND": indexed("GatherND", (3, 4, 2), [[0, 1], [2, 3]], (2, 2)),
        "GlobalMaxPool": same("GlobalMaxPool", (1, 3, 2, 2), (1, 3, 1, 1)),
        "ReduceMax": same("ReduceMax", (2, 3, 4), (2, 3, 1), [_i64(T, "axes", [2])], keepdims=1),
        "ReduceMin": same("ReduceMin", (2, 3, 4), (2, 1, 4), [_i64(T, "axes", [1])], keepdims=1),
        "Split": split,
        "Conv": conv, "ConvTranspose": conv_transpose, "MatMul": matmul, "Gemm": gemm,
        "QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear,
    }


WEIGHTED = {"Conv", "ConvTranspose", "MatMul", "Gemm", "QuantizeLinear", "DequantizeLinear"}
BLOCKED = {"MatMul", "QuantizeLinear", "DequantizeLinear"}  # block_size is defined on Q / DQ (opset 21)
