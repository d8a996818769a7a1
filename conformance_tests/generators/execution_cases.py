"""Write the execution conformance cases: single-op typed models, their storage-integer inputs and the outputs our
definitional reference computes (run: python conformance_tests/generators/execution_cases.py [OUT_DIR]).

Every operator of reference_ops/ops is crossed with the storage types it runs on (int8, uint8, int16, uint16,
int4, uint4, int2, uint2), per-tensor and per-axis weights, and float32 / float16 expressed types; special cases add rounding
ties (x / scale exactly .5), saturation at both ends of the storage range and zero points at its extremes. Each
case folder conformance_tests/cases/execution/<id>/ holds case.json (case.schema.json), model.onnx (the typed
model, fail-closed markers), model.qdq.onnx (``onnx_qtypes.lower`` of it: standard ONNX) and test_data_set_0/ in
the ONNX backend-test layout (input_<i>.pb, output_<i>.pb). Data come from fixed seeds (numpy default_rng), so
the files are the same on every run; tests/test_conformance_execution_cases.py regenerates them and fails when
the committed files drift. A combination that ``lower`` refuses or that the reference cannot run is left out.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil
import sys
import tempfile
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = ROOT / "conformance_tests" / "cases" / "execution"

SPEC = "proposal/spec/semantics.md"
STORAGES = ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2")
EXPRESSED = ("float32", "float16")
FLOAT16_REASON = ("float16 expressed: a runtime computing the operator in float16, as the standard-ONNX form does, rounds "
                  "its real result to float16 before quantizing it, which can move it across a rounding boundary: one "
                  "step (semantics.md#expressed-arithmetic)")
# operators that compute new real values (exact in the definition) but take no requantization tolerance there
COMPUTED = {"Sigmoid", "Tanh", "HardSwish", "AveragePool", "GlobalAveragePool"}
# of those, the ones whose float result no runtime computes to the last bit (a library approximation of tanh / exp,
# or a product rounded to float32); an average with the input's parameters is a multiple of 1 / count step, at least
# 1 / (2 count) step from a rounding boundary, so float32's rounding of it cannot cross one: those stay exact
APPROXIMATED = {"Sigmoid", "Tanh", "HardSwish"}
FLOAT32_REASON = ("float32 expressed: a runtime computing the operator in float32 evaluates it with a library "
                  "approximation (onnxruntime's tanh is up to 2.7e-7 off) rounded to float32, which can move the real "
                  "result across a rounding boundary: one step (semantics.md#expressed-arithmetic)")
REQUANTIZE_REASON = ("the output is requantized: an integer implementation (int32 accumulation, fixed-point multiplier "
                     "and shift, semantics.md#one-step) may land one storage step from the exact definition")


@dataclasses.dataclass
class Spec:
    """One case before it is written: the node, its tensors and what may deviate."""

    op: str
    inputs: list
    outputs: list
    tolerance: int
    attrs: dict
    anchor: str = "dequantize-op-quantize"
    note: str = ""
    feeds: dict | None = None  # fixed feeds (special cases); random storage data otherwise
    nodes: list | None = None  # a graph of several nodes: (op, input names, output names, attrs); None: one ``op`` node
    hidden: list = dataclasses.field(default_factory=list)  # the graph's intermediate tensors (T), typed where quantized
    qdq: str = "lower"  # the standard-ONNX form: "lower" (onnx_qtypes.lower), "plain" (the graph without its types)
    reason: str = ""  # why the tolerance is above 0, where REQUANTIZE_REASON does not say it
    steps: dict | None = None  # float output -> the real step it is judged in (case.json "steps")
    inner: list = dataclasses.field(default_factory=list)  # tensors inside If / Loop / Scan bodies (T), typed there


def _helpers():
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import reference_models  # noqa: PLC0415 (the test builders)
    finally:
        sys.path.pop(0)
    return reference_models


class _Gen:
    """Draws types and data for one case from its own seed."""

    def __init__(self, seed: int, storage: str, expressed: str) -> None:
        from onnx_qtypes.proto.storage_types import STORAGE_TYPES  # noqa: PLC0415

        self.rng = np.random.default_rng(seed)
        self.storage = storage
        self.expressed = expressed
        self.info = STORAGE_TYPES[storage]
        self.fdtype = np.float16 if expressed == "float16" else np.float32
        self.auto: list = []
        self.weight_storage = storage  # mixed cases (16-bit activations, 8-bit weights ...) set another

    def scale(self) -> float:
        """A dyadic scale (exact in float16 and float32), small enough that 16-bit storage fits float16."""
        bits = self.info.bits
        top = {2: 1, 4: 2, 8: 5, 16: 13}[bits]
        return float(int(self.rng.integers(1, 32)) * 2.0 ** -int(self.rng.integers(top, top + 4)))

    def out(self, width: float, fitted: bool = True):
        """An output type whose range is about ``width`` reals wide (some values saturate, most do not); fitted
        to what the operator computes when ``fitted`` (graph outputs only)."""
        from onnx_qtypes import QType  # noqa: PLC0415

        target = width / (self.info.max - self.info.min)
        exponent = int(np.floor(np.log2(target)))
        if self.expressed == "float16":
            exponent = max(exponent, -14 + 4)
        scale = float(int(self.rng.integers(16, 32)) * 2.0 ** (exponent - 4))
        qtype = QType(self.storage, scale, self.zero_point(), expressed=self.expressed)
        if fitted:
            self.auto.append(qtype)  # replaced by one fitted to the reals the operator computes (``fit``)
        return qtype

    def fit(self, reals: np.ndarray):
        """An output type covering the middle of ``reals`` (a few percent saturate at each end)."""
        from onnx_qtypes import QType  # noqa: PLC0415

        reals = np.asarray(reals, np.float64).ravel()
        lo, hi = float(np.percentile(reals, 4)), float(np.percentile(reals, 96))
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        span = max(hi - lo, 2.0 ** -8)
        target = span / (self.info.max - self.info.min)
        exponent = int(np.floor(np.log2(target)))
        if self.expressed == "float16":
            exponent = max(exponent, -14 + 4)
        scale = float(int(np.ceil(target / 2.0 ** (exponent - 4))) * 2.0 ** (exponent - 4))
        zero_point = int(np.clip(round(self.info.min - lo / scale), self.info.min, self.info.max))
        return QType(self.storage, scale, zero_point, expressed=self.expressed)

    def width(self, qtype) -> float:
        """How wide the reals of ``qtype`` are."""
        return float(max(qtype.scale)) * (qtype.storage_max - qtype.storage_min)

    def zero_point(self) -> int:
        lo, hi = self.info.min, self.info.max
        quarter = (hi - lo) // 4
        return int(self.rng.integers(lo + quarter, hi - quarter + 1))

    def q(self, count: int | None = None, axis: int | None = None, storage: str | None = None,
          block: int | None = None, **fixed):
        from onnx_qtypes import QType  # noqa: PLC0415

        storage = storage or self.storage
        if block is not None:  # ``count`` parameters, blocks of ``block`` along ``axis``
            return QType(storage, [self.scale() for _ in range(count)], [self.zero_point() for _ in range(count)],
                         axis=axis, block_size=block, expressed=self.expressed)
        if axis is None:
            return QType(storage, fixed.get("scale", self.scale()), fixed.get("zero_point", self.zero_point()),
                         expressed=self.expressed)
        scales = [self.scale() for _ in range(count)]
        zps = [self.zero_point() for _ in range(count)]
        return QType(storage, scales, zps, axis=axis, expressed=self.expressed)

    def weight(self, shape, axis=None, block: int | None = None):
        """A symmetric weight type (zero point 0), per-tensor, per-axis or blocked along ``axis``."""
        from onnx_qtypes import QType  # noqa: PLC0415

        if block is not None:
            count = int(np.prod([-(-d // block) if i == axis else d for i, d in enumerate(shape)]))
            return QType(self.weight_storage, [self.scale() for _ in range(count)], [0] * count, axis=axis,
                         block_size=block, schema="symmetric", expressed=self.expressed)
        if axis is None:
            return QType(self.weight_storage, self.scale(), 0, schema="symmetric", expressed=self.expressed)
        n = shape[axis]
        return QType(self.weight_storage, [self.scale() for _ in range(n)], [0] * n, axis=axis, schema="symmetric",
                     expressed=self.expressed)

    def data(self, qtype, shape):
        lo, hi = qtype.storage_min, qtype.storage_max
        return self.rng.integers(lo, hi + 1, size=shape).astype(np.int64)

    def real(self, shape, spread=2.0):
        return (self.rng.normal(0, spread, shape)).astype(self.fdtype)


def _i64(T, name, values):
    from onnx import TensorProto  # noqa: PLC0415

    return T(name, (len(values),), dtype=TensorProto.INT64, value=np.array(values, np.int64))


def _bias(g, xq, wq, m):
    from onnx_qtypes import QType  # noqa: PLC0415

    ws = list(wq.scale) if wq.axis is not None else [wq.scale[0]] * m
    product = [float(np.float32(xq.scale[0]) * np.float32(s)) for s in ws]
    if wq.axis is None:
        return QType("int32", product[0], 0, schema="symmetric", expressed=g.expressed)
    return QType("int32", product, [0] * m, axis=0, schema="symmetric", expressed=g.expressed)


# --- one builder per operator: (gen, variant) -> Spec | None -------------------------------------------------


def _ops(rm):
    from onnx import TensorProto  # noqa: PLC0415

    T = rm.T

    def fdt(g):
        return TensorProto.FLOAT16 if g.expressed == "float16" else TensorProto.FLOAT

    def binary(op):
        def build(g, v):
            a, b = g.q(), g.q()
            wa, wb = g.width(a), g.width(b)
            y = g.out(wa * wb / 4 if op == "Mul" else (wa + wb) * 0.75)
            return Spec(op, [T("a", (2, 3, 4), a), T("b", (3, 4), b)], [T("y", (2, 3, 4), y)], 1, {})
        return build

    def same(op, shape, out_shape, extra=(), **attrs):
        def build(g, v):
            x = g.q()
            return Spec(op, [T("x", shape, x), *extra], [T("y", out_shape, x)], 0, dict(attrs))
        return build

    def lut(op):
        def build(g, v):
            x = g.fit(np.linspace(-6, 6, 13))  # the inputs span the curve's bend
            width = {"Sigmoid": 1.0, "Tanh": 2.0}.get(op, g.width(x) / 2)
            return Spec(op, [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), g.out(width))], 0, {})
        return build

    def relu(g, v):
        x = g.q()
        return Spec("Relu", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), x)], 0, {})

    def clip(g, v):
        x = g.q()
        reals = x.scale[0] * (np.array([x.storage_min, x.storage_max]) - x.zero_point[0])
        lo, hi = (float(np.round(t, 2)) for t in np.sort(g.rng.uniform(0.1, 0.9, 2)) * (reals[1] - reals[0]) + reals[0])
        inputs = [T("x", (2, 3, 4), x), T("lo", (), dtype=fdt(g), value=np.asarray(lo, g.fdtype)),
                  T("hi", (), dtype=fdt(g), value=np.asarray(hi, g.fdtype))]
        return Spec("Clip", inputs, [T("y", (2, 3, 4), x)], 0, {})

    def leaky_relu(g, v):
        x = g.q()
        return Spec("LeakyRelu", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), g.out(g.width(x)))], 1, {"alpha": 0.125})

    def softmax(g, v):
        from onnx_qtypes import QType  # noqa: PLC0415

        bits = g.info.bits
        zp = g.info.min if g.info.min < 0 else 0
        y = QType(g.storage, 2.0 ** -bits, zp, expressed=g.expressed)
        return Spec("Softmax", [T("x", (2, 5), g.q())], [T("y", (2, 5), y)], 1, {"axis": -1})

    def max_pool(g, v):
        x = g.q()
        return Spec("MaxPool", [T("x", (1, 2, 5, 5), x)], [T("y", (1, 2, 2, 2), x)], 0,
                    {"kernel_shape": [2, 2], "strides": [2, 2]})

    def average_pool(g, v):
        x = g.q()
        return Spec("AveragePool", [T("x", (1, 2, 4, 4), x)], [T("y", (1, 2, 3, 3), x)], 0,
                    {"kernel_shape": [2, 2], "strides": [1, 1]})

    def global_average_pool(g, v):
        x = g.q()
        return Spec("GlobalAveragePool", [T("x", (1, 3, 2, 2), x)], [T("y", (1, 3, 1, 1), x)], 0, {})

    def reduce_mean(g, v):
        x = g.q()
        inputs = [T("x", (2, 3, 4), x), _i64(T, "axes", [2])]
        return Spec("ReduceMean", inputs, [T("y", (2, 3, 1), g.out(g.width(x) / 2))], 1, {"keepdims": 1})

    def concat(g, v):
        x = g.q()
        return Spec("Concat", [T("x0", (2, 1, 3), x), T("x1", (2, 2, 3), x)], [T("y", (2, 3, 3), x)], 0, {"axis": 1})

    def pad(g, v):
        x = g.q()
        inputs = [T("x", (1, 2, 3, 4), x), _i64(T, "pads", [0, 0, 1, 2, 0, 0, 2, 1])]
        return Spec("Pad", inputs, [T("y", (1, 2, 6, 7), x)], 0, {"mode": "constant"})

    def resize(g, v):
        x = g.q()
        inputs = [T("x", (1, 2, 3, 4), x), None, T("scales", (4,), value=np.array([1, 1, 2, 1.5], np.float32))]
        return Spec("Resize", inputs, [T("y", (1, 2, 6, 6), x)], 0, {"mode": "nearest"})

    def gather(g, v):
        x = g.q()
        idx = T("idx", (2, 2), dtype=TensorProto.INT64, value=np.array([[0, 4], [2, 2]], np.int64))
        return Spec("Gather", [T("x", (5, 3), x), idx], [T("y", (2, 2, 3), x)], 0, {"axis": 0})

    def indexed(op, shape, idx, out_shape, **attrs):
        def build(g, v):
            x = g.q()
            index = T("idx", np.shape(idx), dtype=TensorProto.INT64, value=np.array(idx, np.int64))
            return Spec(op, [T("x", shape, x), index], [T("y", out_shape, x)], 0, dict(attrs))
        return build

    def split(g, v):
        x = g.q()
        return Spec("Split", [T("x", (2, 6), x), _i64(T, "split", [2, 4])], [T("y0", (2, 2), x), T("y1", (2, 4), x)],
                    0, {"axis": 1})

    def slice_(g, v):
        x = g.q()
        extra = [_i64(T, "starts", [1, 0]), _i64(T, "ends", [3, 6]), _i64(T, "axes", [0, 1]), _i64(T, "steps", [1, 2])]
        return Spec("Slice", [T("x", (4, 6), x), *extra], [T("y", (2, 3), x)], 0, {})

    def conv(g, v):
        per_axis = v == "per-axis"
        x = g.q()
        w = g.weight((3, 2, 3, 3), 0 if per_axis else None)
        y = g.out(g.width(x) * g.width(w) * 18 ** 0.5 / 6)
        inputs = [T("x", (1, 2, 5, 5), x), T("w", (3, 2, 3, 3), w, value=g.data(w, (3, 2, 3, 3)).astype(np.int32))]
        bq = _bias(g, x, w, 3)
        inputs.append(T("b", (3,), bq, value=np.array([-97, 0, 194], np.int32)))
        return Spec("Conv", inputs, [T("y", (1, 3, 5, 5), y)], 1, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})

    def conv_transpose(g, v):
        per_axis = v == "per-axis"
        x = g.q()
        w = g.weight((2, 3, 2, 2), 1 if per_axis else None)
        y = g.out(g.width(x) * g.width(w) * 2 ** 0.5 / 6)
        inputs = [T("x", (1, 2, 3, 3), x), T("w", (2, 3, 2, 2), w, value=g.data(w, (2, 3, 2, 2)).astype(np.int32))]
        return Spec("ConvTranspose", inputs, [T("y", (1, 3, 6, 6), y)], 1, {"kernel_shape": [2, 2], "strides": [2, 2]})

    def matmul(g, v):
        per_axis = v == "per-axis"
        a = g.q()
        b = g.weight((4, 5), 0, block=2) if v == "blocked" else g.weight((4, 5), 1 if per_axis else None)
        y = g.out(g.width(a) * g.width(b) * 4 ** 0.5 / 6)
        inputs = [T("a", (2, 3, 4), a), T("b", (4, 5), b, value=g.data(b, (4, 5)).astype(np.int32))]
        return Spec("MatMul", inputs, [T("y", (2, 3, 5), y)], 1, {})

    def gemm(g, v):
        per_axis = v == "per-axis"
        a = g.q()
        b = g.weight((5, 4), 0 if per_axis else None)
        y = g.out(g.width(a) * g.width(b) * 4 ** 0.5 / 6)
        inputs = [T("a", (3, 4), a), T("b", (5, 4), b, value=g.data(b, (5, 4)).astype(np.int32))]
        cq = _bias(g, a, b, 5)  # per-axis: axis 0 of the (5,) bias, the output channels
        inputs.append(T("c", (5,), cq, value=np.array([-300, -7, 0, 11, 250], np.int32)))
        return Spec("Gemm", inputs, [T("y", (3, 5), y)], 1, {"transB": 1})

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
        feeds = {"x": (g.rng.normal(0, 1, (2, 3, 4)) * spread).astype(g.fdtype)}
        attrs = {"axis": 1} if per_axis else {"axis": 2, "block_size": 2} if v == "blocked" else {}
        return Spec("QuantizeLinear", inputs, [T("y", (2, 3, 4), y)], 0, attrs, anchor="boundary", feeds=feeds)

    def dequantize_linear(g, v):
        per_axis = v == "per-axis"
        x = g.q(4, 2) if per_axis else g.q(12, 2, block=2) if v == "blocked" else g.q()
        inputs = [T("x", (2, 3, 4), x), *boundary_parameters(g, x, (2, 3, 4))]
        attrs = {"axis": 2} if per_axis else {"axis": 2, "block_size": 2} if v == "blocked" else {}
        return Spec("DequantizeLinear", inputs, [T("y", (2, 3, 4), dtype=fdt(g))], 0, attrs, anchor="boundary")

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


# --- special cases: rounding ties, saturation, zero-point extremes ---------------------------------------------


def _specials(rm):
    from onnx import TensorProto  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415

    T = rm.T

    def q_linear(g, y, x, note):
        scale = np.asarray(y.scale[0], g.fdtype).reshape(())
        zp = np.asarray(y.zero_point[0]).astype(g.info.np_dtype).reshape(())
        fdt = TensorProto.FLOAT16 if g.expressed == "float16" else TensorProto.FLOAT
        inputs = [T("x", x.shape, dtype=fdt), T("s", (), dtype=fdt, value=scale), T("z", (), value=zp)]
        return Spec("QuantizeLinear", inputs, [T("y", x.shape, y)], 0, {}, anchor="quantize", note=note,
                    feeds={"x": x.astype(g.fdtype)})

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
            fdt = TensorProto.FLOAT16 if g.expressed == "float16" else TensorProto.FLOAT
            inputs = [T("x", (2, 3, 4), x), T("s", (), dtype=fdt, value=np.asarray(s, g.fdtype)),
                      T("z", (), value=np.asarray(zp).astype(g.info.np_dtype))]
            return Spec("DequantizeLinear", inputs, [T("y", (2, 3, 4), dtype=fdt)], 0, {}, anchor="dequantize",
                        note=f"zero point at storage_{which}")
        return build

    def relu_zp_extreme(which):
        def build(g, v):
            zp = g.info.min if which == "min" else g.info.max
            x = QType(g.storage, g.scale(), zp, expressed=g.expressed)
            return Spec("Relu", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), x)], 0, {},
                        note=f"zero point at storage_{which}")
        return build

    def requantize_ties(g, v):
        """The output scale is twice the input's with the same zero point: every odd step is a tie."""
        x = g.q()
        y = QType(g.storage, x.scale[0] * 2, x.zero_point[0], expressed=g.expressed)
        return Spec("Reshape", [T("x", (2, 3, 4), x), _i64(T, "shape", [6, 4])], [T("y", (6, 4), y)], 1, {},
                    anchor="rounding", note="requantization ties: (q - zp) / 2 is k + 0.5 for odd q - zp")

    def add_saturation(g, v):
        """Sums far beyond the output's range: both ends saturate."""
        a, b = g.q(), g.q()
        y = QType(g.storage, min(a.scale[0], b.scale[0]) / 8, (g.info.min + g.info.max + 1) // 2,
                  expressed=g.expressed)
        return Spec("Add", [T("a", (2, 3, 4), a), T("b", (3, 4), b)], [T("y", (2, 3, 4), y)], 1, {},
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
            return Spec(op, [T("x", shape, x), *extra], [T("y", out_shape, x)], 0, dict(attrs),
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
        return Spec("Tanh", [T("x", (2, 3, 4), x)], [T("y", (2, 3, 4), y)], 0, {}, anchor="expressed-arithmetic",
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


# --- graphs: requantization chains, dynamic types ---------------------------------------------------------------

CHAIN_REASON = ("{first} requantizes (one step, semantics.md#one-step); {rest}")


def _graphs(rm):
    from onnx import TensorProto  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415

    T = rm.T

    def conv_relu_max_pool(g, v):
        x, w = g.q(), g.weight((3, 2, 3, 3), 0 if v == "per-axis" else None)
        t = g.out(g.width(x) * g.width(w) * 18 ** 0.5 / 6, fitted=False)
        inputs = [T("x", (1, 2, 5, 5), x), T("w", (3, 2, 3, 3), w, value=g.data(w, (3, 2, 3, 3)).astype(np.int32)),
                  T("b", (3,), _bias(g, x, w, 3), value=np.array([-97, 0, 194], np.int32))]
        nodes = [("Conv", ["x", "w", "b"], ["t"], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
                 ("Relu", ["t"], ["r"], {}),
                 ("MaxPool", ["r"], ["y"], {"kernel_shape": [2, 2], "strides": [2, 2]})]
        reason = CHAIN_REASON.format(first="Conv", rest="Relu and MaxPool keep its parameters, exact and monotone, "
                                     "so that step reaches y unchanged")
        return Spec("Conv", inputs, [T("y", (1, 3, 2, 2), t)], 1, {}, nodes=nodes,
                    hidden=[T("t", (1, 3, 5, 5), t), T("r", (1, 3, 5, 5), t)], reason=reason,
                    note="Conv -> Relu -> MaxPool, one requantization")

    def matmul_add(g, v):
        a, b = g.q(), g.weight((4, 5), 1 if v == "per-axis" else None)
        t = g.out(g.width(a) * g.width(b) * 4 ** 0.5 / 6, fitted=False)
        c = g.q()
        y = QType(g.storage, 2 * max(t.scale[0], c.scale[0]), g.zero_point(), expressed=g.expressed)
        inputs = [T("a", (2, 3, 4), a), T("b", (4, 5), b, value=g.data(b, (4, 5)).astype(np.int32)),
                  T("c", (2, 3, 5), c)]
        nodes = [("MatMul", ["a", "b"], ["t"], {}), ("Add", ["t", "c"], ["y"], {})]
        reason = CHAIN_REASON.format(first="MatMul", rest="Add reads t at half y's scale or finer, so t's step moves "
                                     "y by at most half a step before Add's own rounding: two steps")
        return Spec("MatMul", inputs, [T("y", (2, 3, 5), y)], 2, {}, nodes=nodes, hidden=[T("t", (2, 3, 5), t)],
                    reason=reason, note="MatMul -> Add, two requantizations")

    def requantize_concat(g, v):
        a = g.q()
        b = QType(g.storage, a.scale[0] * 3, g.zero_point(), expressed=g.expressed)
        inputs = [T("x0", (2, 3, 4), a), _i64(T, "shape", [2, 4, 3]), T("x1", (2, 2, 3), b)]
        nodes = [("Reshape", ["x0", "shape"], ["t"], {}), ("Concat", ["t", "x1"], ["y"], {"axis": 1})]
        reason = CHAIN_REASON.format(first="Reshape to another scale", rest="Concat with equal parameters is exact")
        return Spec("Concat", inputs, [T("y", (2, 6, 3), b)], 1, {}, nodes=nodes, hidden=[T("t", (2, 4, 3), b)],
                    reason=reason, note="Reshape (requantizing) -> Concat")

    def quantize_relu_dequantize(g, v):
        a = g.q()
        fdt = TensorProto.FLOAT16 if g.expressed == "float16" else TensorProto.FLOAT
        scale, zp = np.asarray(a.scale[0], g.fdtype), np.asarray(a.zero_point[0]).astype(g.info.np_dtype)
        inputs = [T("x", (2, 3, 4), dtype=fdt), T("s", (), dtype=fdt, value=scale), T("z", (), value=zp)]
        nodes = [("QuantizeLinear", ["x", "s", "z"], ["q"], {}), ("Relu", ["q"], ["r"], {}),
                 ("DequantizeLinear", ["r", "s", "z"], ["y"], {})]
        feeds = {"x": (g.rng.normal(0, 1, (2, 3, 4)) * g.width(a) / 4).astype(g.fdtype)}
        return Spec("Relu", inputs, [T("y", (2, 3, 4), dtype=fdt)], 0, {}, nodes=nodes, anchor="boundary",
                    hidden=[T("q", (2, 3, 4), a), T("r", (2, 3, 4), a)], feeds=feeds,
                    note="QuantizeLinear -> Relu -> DequantizeLinear, float in and out")

    def dynamic_quantize_linear(g, v):
        if g.expressed != "float32":
            return None  # ONNX defines DynamicQuantizeLinear on float32 only
        shift = 3.0 if v == "positive" else 0.0  # all positive: the range still includes 0
        feeds = {"x": (g.rng.normal(shift, 1.5, (2, 3, 4))).astype(np.float32)}
        nodes = [("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"], {})]
        outputs = [T("y", (2, 3, 4), QType("uint8")), T("y_scale", (), dtype=TensorProto.FLOAT),
                   T("y_zero_point", (), dtype=TensorProto.UINT8)]
        return Spec("DynamicQuantizeLinear", [T("x", (2, 3, 4))], outputs, 0, {}, nodes=nodes, qdq="plain",
                    anchor="dynamic-binding", feeds=feeds, note=f"a dynamic uint8 type ({v} inputs)")

    def quantize_binds(g, v):
        fdt = TensorProto.FLOAT16 if g.expressed == "float16" else TensorProto.FLOAT
        bound = g.q()
        inputs = [T("x", (2, 3, 4), dtype=fdt), T("s", (), dtype=fdt), T("z", (), dtype=g.info.data_type)]
        nodes = [("QuantizeLinear", ["x", "s", "z"], ["y"], {}), ("DequantizeLinear", ["y", "s", "z"], ["r"], {})]
        feeds = {"x": (g.rng.normal(0, 1, (2, 3, 4)) * g.width(bound) / 4).astype(g.fdtype),
                 "s": np.asarray(bound.scale[0], g.fdtype), "z": np.asarray(bound.zero_point[0]).astype(g.info.np_dtype)}
        outputs = [T("y", (2, 3, 4), QType(g.storage, None, None, expressed=g.expressed)), T("r", (2, 3, 4), dtype=fdt)]
        return Spec("QuantizeLinear", inputs, outputs, 0, {}, nodes=nodes, qdq="plain", anchor="dynamic-binding",
                    feeds=feeds, note="the dynamic output type binds the run-time scale and zero point")

    def dynamic_matmul(g, v):
        from onnx_qtypes.reference_ops import dynamic_parameters  # noqa: PLC0415

        if g.expressed != "float32":
            return None  # ONNX defines DynamicQuantizeLinear on float32 only
        b = g.weight((4, 5), 1 if v == "per-axis" else None)
        x = g.rng.normal(0, 1.5, (3, 4)).astype(np.float32)
        feeds = {"x": x}
        x_scale = dynamic_parameters(x, QType("uint8")).scale[0]  # what DynamicQuantizeLinear computes
        nodes = [("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], {}), ("MatMul", ["xq", "b"], ["y"], {})]
        inputs = [T("x", (3, 4)), T("b", (4, 5), b, value=g.data(b, (4, 5)).astype(np.int32))]
        hidden = [T("xq", (3, 4), QType("uint8")), T("xs", ()), T("xz", (), dtype=TensorProto.UINT8)]
        reason = ("a float result: a runtime summing in float32 rounds; judged in steps of x_scale * min(b scale), the "
                  "product's quantization step, of which that rounding is a small fraction")
        return Spec("MatMul", inputs, [T("y", (3, 5))], 1, {}, nodes=nodes, hidden=hidden, anchor="dynamic-binding",
                    feeds=feeds, reason=reason, steps={"y": float(x_scale) * float(min(b.scale))},
                    note="DynamicQuantizeLinear -> MatMul with a float result (dynamic quantization)")

    def body(name, nodes, inputs, outputs):
        """A subgraph: nodes (op, inputs, outputs, attrs), its formal inputs and outputs (T)."""
        from onnx import helper  # noqa: PLC0415

        return helper.make_graph([helper.make_node(op, ins, outs, name=f"{name}_{i}", **attrs)
                                  for i, (op, ins, outs, attrs) in enumerate(nodes)], name,
                                 [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in inputs],
                                 [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in outputs])

    def if_(g, v):
        """The branch taken computes (Max of x and w) or moves (Transpose twice) with the outer type, which the If's
        output keeps."""
        x = g.q()
        then = body("then", [("Max", ["x", "w"], ["t"], {})], [], [T("t", (2, 3, 4), x)])
        else_ = body("else", [("Transpose", ["x"], ["u"], {"perm": [0, 2, 1]}),
                              ("Transpose", ["u"], ["e"], {"perm": [0, 2, 1]})], [], [T("e", (2, 3, 4), x)])
        inputs = [T("x", (2, 3, 4), x), T("w", (2, 3, 4), x), T("c", (), dtype=TensorProto.BOOL)]
        nodes = [("If", ["c"], ["y"], {"then_branch": then, "else_branch": else_})]
        return Spec("If", inputs, [T("y", (2, 3, 4), x)], 0, {}, nodes=nodes, anchor="data-movement",
                    feeds={"c": np.array(v == "then")}, inner=[T("t", (2, 3, 4), x), T("u", (2, 4, 3), x),
                                                                T("e", (2, 3, 4), x)],
                    qdq="plain",
                    note=f"the {v} branch (Max / Transpose twice) on the outer type")

    def loop(g, v):
        """Three iterations each rotate the carried x by one along its last axis (Slice, Concat) and keep the
        elementwise maximum of it and its rotation (Max with the carried type): moved and compared, never
        requantized. No scan output: onnx.reference 1.23.2 concatenates Loop scan outputs where ONNX stacks them."""
        x = g.q()
        nodes = [("Slice", ["acc_in", "one", "end", "last"], ["tail"], {}),
                 ("Slice", ["acc_in", "zero", "one", "last"], ["head"], {}),
                 ("Concat", ["tail", "head"], ["turned"], {"axis": 2}),
                 ("Max", ["acc_in", "turned"], ["acc_out"], {}),
                 ("Identity", ["cond_in"], ["cond_out"], {})]
        consts = [_i64(T, "zero", [0]), _i64(T, "one", [1]), _i64(T, "end", [4]), _i64(T, "last", [2])]
        inner = [T("acc_in", (2, 3, 4), x), T("tail", (2, 3, 3), x), T("head", (2, 3, 1), x),
                 T("turned", (2, 3, 4), x), T("acc_out", (2, 3, 4), x)]
        graph = body("body", nodes, [T("i", (), dtype=TensorProto.INT64), T("cond_in", (), dtype=TensorProto.BOOL),
                                     inner[0]], [T("cond_out", (), dtype=TensorProto.BOOL), inner[4]])
        inputs = [T("n", (), dtype=TensorProto.INT64, value=np.array(3, np.int64)), None, T("x", (2, 3, 4), x), *consts]
        nodes = [("Loop", ["n", "", "x"], ["y"], {"body": graph})]
        return Spec("Loop", inputs, [T("y", (2, 3, 4), x)], 0, {}, nodes=nodes, anchor="data-movement", inner=inner,
                    qdq="plain", note="rotate and elementwise maximum in the body, 3 iterations")

    def scan(g, v):
        """A running minimum over the scanned slices (state) and each slice's reverse (scan output)."""
        x = g.q()
        nodes = [("Min", ["s_in", "x_in"], ["s_out"], {}), ("Slice", ["x_in", "last", "past", "axis", "back"],
                                                             ["y_out"], {})]
        consts = [_i64(T, "last", [-1]), _i64(T, "past", [-5]), _i64(T, "axis", [0]), _i64(T, "back", [-1])]
        inner = [T("s_in", (4,), x), T("x_in", (4,), x), T("s_out", (4,), x), T("y_out", (4,), x)]
        graph = body("body", nodes, inner[:2], inner[2:])
        inputs = [T("s", (4,), x), T("xs", (3, 4), x), *consts]
        nodes = [("Scan", ["s", "xs"], ["y", "ys"], {"body": graph, "num_scan_inputs": 1})]
        return Spec("Scan", inputs, [T("y", (4,), x), T("ys", (3, 4), x)], 0, {}, nodes=nodes,
                    anchor="data-movement", inner=inner, qdq="plain",
                    note="running minimum (state) and reversed slices")

    return {
        # standard ONNX has no subgraph form from lower: the QDQ form is the graph on storage integers, which moves
        # and compares them exactly (equal parameters throughout); onnxruntime's Max / Min take 8-bit storage only
        "if": (if_, ("int8", "uint8"), ("then", "else")),
        "loop": (loop, ("int8", "uint8"), ("chain",)),
        "scan": (scan, ("int8", "uint8"), ("chain",)),
        "conv-relu-max_pool": (conv_relu_max_pool, ("int8", "uint8", "int16"), ("per-tensor", "per-axis")),
        "matmul-add": (matmul_add, ("int8", "uint8", "int16", "uint16"), ("per-tensor", "per-axis")),
        "reshape-requantize-concat": (requantize_concat, ("int8", "uint8", "int16", "uint4"), ("chain",)),
        "quantize-relu-dequantize": (quantize_relu_dequantize, ("int8", "uint8", "int16", "uint16"), ("chain",)),
        "dynamic_quantize_linear": (dynamic_quantize_linear, ("uint8",), ("mixed", "positive")),
        "quantize_linear-binds-dynamic": (quantize_binds, ("int8", "uint8", "int16", "uint16"), ("dynamic",)),
        "dynamic_quantize_linear-matmul": (dynamic_matmul, ("int8",), ("per-tensor", "per-axis")),
    }


MIXED = (("int16", "int8"), ("uint16", "int8"), ("uint16", "uint8"), ("uint8", "int4"), ("int8", "int4"))


# --- building, running and writing ------------------------------------------------------------------------------


def _snake(op: str) -> str:
    """The operator's file name in reference_ops/ops (MatMul -> matmul, ConvTranspose -> conv_transpose)."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in op).lstrip("_")
    return snake.replace("mat_mul", "matmul").replace("n_d", "nd")


def _storage_array(values, qtype) -> np.ndarray:
    return np.asarray(values).astype(np.int64).astype(qtype.storage_type.np_dtype)


def _tensor(name, value):
    from onnx import numpy_helper  # noqa: PLC0415

    return numpy_helper.from_array(np.asarray(value), name).SerializeToString()


def _steps(a, b, quantized: bool) -> float:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0
    if quantized:
        return int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))
    x, y = a.astype(np.float64), b.astype(np.float64)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    return 0 if same.all() else float("inf")


def _case(rm, case_id: str, seed: int, storage: str, expressed: str, variant: str, build, tmp: pathlib.Path,
          weights: str | None = None):
    """(case.json, files) of one case, or None when lower or the reference cannot take it."""
    import onnx_qtypes  # noqa: PLC0415
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415

    g = _Gen(seed, storage, expressed)
    g.weight_storage = weights or storage
    try:
        spec = build(g, variant)
    except Exception:  # noqa: BLE001 (a type this storage cannot hold: not a case)
        return None
    if spec is None:
        return None
    if expressed == "float16" and spec.tolerance == 0 and spec.op in COMPUTED:
        spec.tolerance, spec.reason = 1, FLOAT16_REASON
    if expressed == "float32" and spec.tolerance == 0 and spec.op in APPROXIMATED:
        spec.tolerance, spec.reason = 1, FLOAT32_REASON
    for t in spec.inputs:
        if t is not None and t.value is not None and t.qtype is not None:
            t.value = _storage_array(t.value, t.qtype)
    graph_inputs = [t for t in spec.inputs if t is not None and t.value is None]
    feeds = {}
    for t in graph_inputs:
        if spec.feeds and t.name in spec.feeds:
            feeds[t.name] = spec.feeds[t.name]
        elif t.qtype is not None:
            feeds[t.name] = _storage_array(g.data(t.qtype, t.shape), t.qtype)
        else:
            feeds[t.name] = g.real(t.shape)
    fitted = [t for t in spec.outputs if any(t.qtype is q for q in g.auto)]
    if fitted:  # run once with real outputs, then fit each output's type to what it holds
        from onnx import TensorProto  # noqa: PLC0415

        fdt = TensorProto.FLOAT16 if expressed == "float16" else TensorProto.FLOAT
        plain = [rm.T(t.name, t.shape, None, fdt) if any(t is f for f in fitted) else t for t in spec.outputs]
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):  # float16 overflow: left out just below
                warnings.simplefilter("ignore")
                float_model = _model(rm, spec, plain)
                reals = ReferenceEvaluator(float_model).run(None, feeds)
        except Exception:  # noqa: BLE001 (the reference cannot run it)
            return None
        if not all(np.isfinite(np.asarray(r, np.float64)).all() for r in reals):
            return None  # the expressed type overflows: not a case for fitted outputs
        for t, value in zip(spec.outputs, reals):
            if any(t is f for f in fitted):
                t.qtype = g.fit(value)
    tensors = [t for t in [*spec.inputs, *spec.hidden, *spec.inner, *spec.outputs] if t is not None]
    try:
        model = _model(rm, spec, spec.outputs)
        path = tmp / f"{case_id}.onnx"
        onnx_qtypes.save(model, path)
        model_bytes = path.read_bytes()
        typed = onnx_qtypes.load(model_bytes)
    except Exception:  # noqa: BLE001 (not a valid typed model)
        return None
    qdq_bytes, qdq_unavailable = _qdq_form(rm, spec, typed)
    if qdq_bytes is None and not qdq_unavailable:
        return None  # lower refuses a type that has a standard form elsewhere: not a case
    names = [t.name for t in spec.outputs]
    try:
        expected = ReferenceEvaluator(onnx_qtypes.load(model_bytes), kernels="definitional").run(None, feeds)
        integer = ReferenceEvaluator(onnx_qtypes.load(model_bytes), kernels="integer").run(None, feeds)
    except Exception:  # noqa: BLE001 (the reference cannot run it)
        return None
    quantized = {t.name: t.qtype is not None for t in spec.outputs}
    for t, want, got in zip(spec.outputs, expected, integer):
        if _steps(want, got, quantized[t.name]) > spec.tolerance:
            SKIPPED.append(f"{case_id}: integer kernels beyond {spec.tolerance} step(s)")
            return None
    expected = [_storage_array(v, t.qtype) if t.qtype is not None else np.asarray(v)
                for t, v in zip(spec.outputs, expected)]
    qtypes = [t.qtype for t in tensors if t.qtype is not None]
    main = next(t.qtype for t in tensors if t.qtype is not None and t.qtype.storage_type.bits < 32)
    doc = {
        "id": case_id,
        "kind": "execution",
        "operator": spec.op,
        "spec": f"{SPEC}#{spec.anchor}",
        "description": f"{spec.op} on {storage} storage, {expressed} expressed, {variant}"
                       + (f": {spec.note}" if spec.note else ""),
        "tags": {
            "storage": storage,
            "granularity": ("blocked" if any(q.block_size is not None for q in qtypes) else
                            "per-axis" if any(q.axis is not None for q in qtypes) else "per-tensor"),
            "schema": main.schema.name.lower(),
            "expressed": expressed,
        },
        "model": "model.onnx",
        "qdq_model": "model.qdq.onnx",
        "inputs": [t.name for t in graph_inputs],
        "outputs": names,
        "tolerance": {n: spec.tolerance for n in names},
    }
    if spec.tolerance:
        doc["tolerance_reason"] = spec.reason or REQUANTIZE_REASON
    if spec.steps:
        doc["steps"] = spec.steps
    files = {"model.onnx": model_bytes}
    if qdq_bytes is None:
        doc["qdq_model"] = None
        doc["qdq_unavailable"] = qdq_unavailable
    else:
        files["model.qdq.onnx"] = qdq_bytes
    for i, t in enumerate(graph_inputs):
        files[f"test_data_set_0/input_{i}.pb"] = _tensor(t.name, feeds[t.name])
    for i, (n, v) in enumerate(zip(names, expected)):
        files[f"test_data_set_0/output_{i}.pb"] = _tensor(n, v)
    return doc, files


SKIPPED: list[str] = []


def _model(rm, spec: Spec, outputs: list):
    """The typed model of ``spec`` with these graph outputs: one node, or the graph ``spec.nodes`` describes."""
    if spec.nodes is None:
        model = rm.typed_model(spec.op, spec.inputs, outputs, opset=_opset(spec, outputs)[1], **spec.attrs)
        model.ir_version = _opset(spec, outputs)[0]
        return model
    return _graph(rm, spec, outputs, typed=True)


def _opset(spec: Spec, outputs: list) -> tuple[int, int]:
    """(IR, opset) of the typed model: 2-bit storage is a QuantizeLinear / DequantizeLinear type from opset 25 on."""
    tensors = [t for t in [*spec.inputs, *spec.hidden, *spec.inner, *outputs] if t is not None and t.qtype is not None]
    two_bit = any(t.qtype.storage in ("int2", "uint2") for t in tensors)
    return (13, 25) if two_bit else (10, 21)


def _graph(rm, spec: Spec, outputs: list, typed: bool):
    from onnx import helper, numpy_helper  # noqa: PLC0415

    from onnx_qtypes import set_qtype  # noqa: PLC0415

    nodes = [helper.make_node(op, ins, outs, name=f"n{i}_{op.lower()}", **attrs)
             for i, (op, ins, outs, attrs) in enumerate(spec.nodes)]
    present = [t for t in spec.inputs if t is not None]
    graph = helper.make_graph(
        nodes, f"chain_{spec.op}",
        [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in present if t.value is None],
        [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in outputs],
        [numpy_helper.from_array(np.asarray(t.value), t.name) for t in present if t.value is not None],
        value_info=[helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in spec.hidden])
    ir, opset = _opset(spec, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    if typed:
        for t in [*present, *spec.hidden, *spec.inner, *outputs]:
            if t.qtype is not None:
                set_qtype(model, t.name, t.qtype)
    return model


def _qdq_form(rm, spec: Spec, typed) -> tuple[bytes | None, str]:
    """(model.qdq.onnx bytes, "") or (None, why standard ONNX cannot express the case); (None, "") leaves it out."""
    import onnx_qtypes  # noqa: PLC0415
    from onnx_qtypes.checker import iter_diagnostics  # noqa: PLC0415

    narrow = [d for d in iter_diagnostics(typed) if d.rule == "QT120"]
    if narrow:  # the QDQ form would compute something else: DequantizeLinear rounds to the expressed type
        return None, f"{narrow[0].rule} {narrow[0].name}: {narrow[0].message}"
    if spec.qdq == "plain":  # standard operators throughout (DynamicQuantizeLinear ...): the graph minus its types
        return _graph(rm, spec, spec.outputs, typed=False).SerializeToString(), ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return onnx_qtypes.lower(typed).SerializeToString(), ""
    except Exception as exc:  # noqa: BLE001
        dynamic = [t.name for t in [*spec.inputs, *spec.hidden, *spec.outputs]
                   if t is not None and t.qtype is not None and t.qtype.is_dynamic]
        if dynamic:
            return None, (f"tensor {dynamic[0]!r} has a dynamic type whose parameters an operator chooses at run time "
                          f"(semantics.md#dynamic-binding); standard ONNX has no form for it ({exc})")
        return None, ""


def _plan(rm):
    import zlib  # noqa: PLC0415

    ops = _ops(rm)
    for op, build in ops.items():
        variants = (("per-tensor", "per-axis", "blocked") if op in BLOCKED else ("per-tensor", "per-axis")
                    if op in WEIGHTED else ("per-tensor",))
        for storage in STORAGES:
            for expressed in EXPRESSED:
                for variant in variants:
                    case_id = f"{_snake(op)}-{storage}-{expressed}-{variant}"
                    yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, build
    for name, build in _specials(rm).items():
        for storage in STORAGES:
            for expressed in EXPRESSED:
                case_id = f"{name}-{storage}-{expressed}"
                yield case_id, zlib.crc32(case_id.encode()), storage, expressed, name, build
    for op in ("MatMul", "Conv", "Gemm"):  # activations and weights of different storage types
        for storage, weights in MIXED:
            for expressed in EXPRESSED:
                for variant in ("per-tensor", "per-axis"):
                    case_id = f"{_snake(op)}-{storage}-w{weights}-{expressed}-{variant}"
                    yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, ops[op], weights
    for name, (build, storages, variants) in _graphs(rm).items():
        for storage in storages:
            for expressed in EXPRESSED:
                for variant in variants:
                    case_id = f"{name}-{storage}-{expressed}" + (f"-{variant}" if len(variants) > 1 else "")
                    yield case_id, zlib.crc32(case_id.encode()), storage, expressed, variant, build


def case_documents() -> dict[str, tuple[dict, dict[str, bytes]]]:
    """Case id -> (case.json document, {relative path: bytes})."""
    rm = _helpers()
    SKIPPED.clear()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case_id, seed, storage, expressed, variant, build, *weights in _plan(rm):
            made = _case(rm, case_id, seed, storage, expressed, variant, build, pathlib.Path(tmp), *weights)
            if made is not None:
                out[case_id] = made
    return out


def write(folder: pathlib.Path = CASES) -> int:
    """Replace ``folder`` with every case; returns how many were written."""
    if folder.exists():
        shutil.rmtree(folder)
    documents = case_documents()
    for case_id, (doc, files) in documents.items():
        target = folder / case_id
        (target / "test_data_set_0").mkdir(parents=True)
        (target / "case.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for name, data in files.items():
            (target / name).write_bytes(data)
    return len(documents)


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else CASES
    print(f"{write(out)} execution cases in {out}")
    for line in SKIPPED:
        print("left out:", line)
