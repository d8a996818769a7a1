"""Random single-op cases (hypothesis strategies) for every integer kernel.

Each strategy draws shapes, attributes, quantized types (storage, granularity,
parameters, schema) and a data seed, and returns a ``Case``: the typed
model, its feeds, the shape of every quantized tensor (for lowering), and
how far the integer kernel may be from the definition: 0 steps for data
movement with equal parameters and lookup tables, 1 step for requantizing
ops. Shared by the agreement tests, the onnxruntime tests and
benchmarks/bench_agreement.py.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from hypothesis import strategies as st
from onnx import TensorProto
from reference_models import T, bias_type, qtypes, storage_data, typed_model

from onnx_qtypes import QType


@dataclasses.dataclass
class Case:
    op: str
    model: object
    feeds: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    tolerance: int  # storage steps the integer kernel may differ from the definition
    ort: bool = True  # onnxruntime runs the lowered QDQ model


def _build(op: str, draw: st.DrawFn, inputs: list, outputs: list, tolerance: int, opset: int = 21, ort: bool = True,
           **attrs: object) -> Case:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    feeds = {}
    for t in inputs:
        if t is None or t.value is not None:
            continue
        feeds[t.name] = storage_data(rng, t.qtype, t.shape) if t.qtype is not None else rng.normal(0, 2, t.shape).astype(np.float32)
    for t in inputs:  # quantized initializers drawn from the same seed
        if t is not None and t.value is not None and isinstance(t.value, str):
            t.value = storage_data(rng, t.qtype, t.shape)
    model = typed_model(op, inputs, outputs, opset=opset, **attrs)
    shapes = {t.name: t.shape for t in [*inputs, *outputs] if t is not None and t.qtype is not None}
    return Case(op, model, feeds, shapes, tolerance, ort)


def _same_or_other(draw: st.DrawFn, source: QType, shape: tuple[int, ...], axes=(None,)) -> QType:
    """The input's own type (data movement keeps parameters) or another one (requantizing)."""
    if draw(st.booleans()):
        return source
    return draw(qtypes((source.storage,), shape, axes))


def _tolerance(source: QType, out: QType) -> int:
    return 0 if source == out else 1


INT8 = ("int8", "uint8")


@st.composite
def conv(draw: st.DrawFn) -> Case:
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    depthwise = draw(st.booleans())
    group, m = (c, c) if depthwise else (1, draw(st.integers(1, 4)))
    kernel = [draw(st.integers(1, 3)) for _ in range(2)]
    strides = [draw(st.integers(1, 2)) for _ in range(2)]
    dilations = [draw(st.integers(1, 2)) for _ in range(2)]
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    size = [draw(st.integers((k - 1) * d + 1, 8)) for k, d in zip(kernel, dilations)]
    out = [(s + pads[i] + pads[i + 2] - ((k - 1) * d + 1)) // st_ + 1
           for i, (s, k, d, st_) in enumerate(zip(size, kernel, dilations, strides))]
    xq = draw(qtypes(INT8, (n, c, *size)))
    wq = draw(qtypes(INT8, (m, c // group, *kernel), axes=(None, 0)))
    yq = draw(qtypes(INT8, (n, m, *out), axes=(None, 1)))
    inputs = [T("x", (n, c, *size), xq), T("w", (m, c // group, *kernel), wq, value="draw")]
    if draw(st.booleans()):
        bq = bias_type(xq, wq, m)
        inputs.append(T("b", (m,), bq, value=np.arange(-m, m, 2)[:m].astype(np.int32) * 97))
    return _build("Conv", draw, inputs, [T("y", (n, m, *out), yq)], 1, group=group, strides=strides,
                  dilations=dilations, pads=pads, kernel_shape=kernel)


@st.composite
def conv_transpose(draw: st.DrawFn) -> Case:
    n, c, m = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(2)]
    strides = [draw(st.integers(1, 2)) for _ in range(2)]
    size = [draw(st.integers(1, 5)) for _ in range(2)]
    pads = [draw(st.integers(0, (k - 1) // 2)) for k in kernel] * 2  # keeps the output non-empty
    extra = [draw(st.integers(0, s - 1)) for s in strides]
    out = [(s - 1) * st_ + k + e - 2 * p for s, st_, k, e, p in zip(size, strides, kernel, extra, pads[:2])]
    xq = draw(qtypes(INT8, (n, c, *size)))
    wq = draw(qtypes(("int8",), (c, m, *kernel), axes=(None, 1)))
    yq = draw(qtypes(INT8, (n, m, *out), axes=(None, 1)))
    inputs = [T("x", (n, c, *size), xq), T("w", (c, m, *kernel), wq, value="draw")]
    return _build("ConvTranspose", draw, inputs, [T("y", (n, m, *out), yq)], 1, strides=strides, pads=pads,
                  output_padding=extra, kernel_shape=kernel)


@st.composite
def matmul(draw: st.DrawFn) -> Case:
    batch = draw(st.sampled_from([(), (2,)]))
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))
    a_shape, b_shape, y_shape = (*batch, m, k), (k, n), (*batch, m, n)
    aq = draw(qtypes(INT8, a_shape, axes=(None, len(a_shape) - 2)))
    bq = draw(qtypes(INT8, b_shape, axes=(None, 1)))
    yq = draw(qtypes(INT8, y_shape, axes=(None, len(y_shape) - 1)))
    inputs = [T("a", a_shape, aq), T("b", b_shape, bq, value="draw")]
    return _build("MatMul", draw, inputs, [T("y", y_shape, yq)], 1)


@st.composite
def gemm(draw: st.DrawFn) -> Case:
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))
    trans_a, trans_b = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    alpha = draw(st.sampled_from([1.0, 0.5, -1.25]))
    beta = draw(st.sampled_from([1.0, 2.0, -0.5]))
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    aq = draw(qtypes(INT8, a_shape))
    bq = draw(qtypes(INT8, b_shape, axes=(None, 0 if trans_b else 1)))
    yq = draw(qtypes(INT8, (m, n), axes=(None, 1)))
    inputs = [T("a", a_shape, aq), T("b", b_shape, bq, value="draw")]
    if draw(st.booleans()):
        c_shape = draw(st.sampled_from([(n,), (m, n)]))
        cq = draw(qtypes(("int32", "int8"), c_shape, axes=(None, len(c_shape) - 1)))
        inputs.append(T("c", c_shape, cq, value=np.arange(math.prod(c_shape)).reshape(c_shape).astype(cq.storage_type.np_dtype) - 3))
    return _build("Gemm", draw, inputs, [T("y", (m, n), yq)], 1, transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)


_BROADCASTS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (1, 4)), ((2, 1, 4), (3, 1)), ((4,), (2, 3, 4))]


def _binary(op: str):
    @st.composite
    def case(draw: st.DrawFn) -> Case:
        a_shape, b_shape = draw(st.sampled_from(_BROADCASTS))
        if draw(st.booleans()):
            a_shape, b_shape = b_shape, a_shape
        y_shape = tuple(np.broadcast_shapes(a_shape, b_shape))
        aq = draw(qtypes(INT8, a_shape, axes=(None, *range(len(a_shape)))))
        bq = draw(qtypes(INT8, b_shape, axes=(None, len(b_shape) - 1)))
        yq = draw(qtypes(INT8, y_shape, axes=(None, len(y_shape) - 1)))
        return _build(op, draw, [T("a", a_shape, aq), T("b", b_shape, bq)], [T("y", y_shape, yq)], 1)

    return case


def _unary(op: str, lookup_table: bool = False, **attrs: object):
    """Relu-like ops (per-tensor or per-axis, 0 steps with equal types) or lookup-table ops (per-tensor, always 0 steps)."""

    @st.composite
    def case(draw: st.DrawFn) -> Case:
        shape = draw(st.sampled_from([(2, 3, 4), (1, 5), (7,)]))
        axes = (None,) if lookup_table else (None, len(shape) - 1)
        xq = draw(qtypes(INT8, shape, axes=axes))
        yq = draw(qtypes(INT8, shape, axes=axes)) if lookup_table else _same_or_other(draw, xq, shape)
        tolerance = 0 if lookup_table or xq == yq else 1
        return _build(op, draw, [T("x", shape, xq)], [T("y", shape, yq)], tolerance, **attrs)

    return case


@st.composite
def clip(draw: st.DrawFn) -> Case:
    shape = (2, 3, 4)
    xq = draw(qtypes(INT8, shape, axes=(None, 2)))
    yq = _same_or_other(draw, xq, shape)
    low, high = sorted(draw(st.floats(-3, 3, width=32)) for _ in range(2))
    inputs = [T("x", shape, xq), T("lo", (), value=np.float32(low)), T("hi", (), value=np.float32(high))]
    return _build("Clip", draw, inputs, [T("y", shape, yq)], _tolerance(xq, yq))


@st.composite
def leaky_relu(draw: st.DrawFn) -> Case:
    shape = (2, 3, 4)
    xq = draw(qtypes(INT8, shape, axes=(None, 1)))
    yq = draw(qtypes(INT8, shape, axes=(None, 1)))
    alpha = draw(st.sampled_from([0.01, 0.1, 0.3, -0.5, 2.0]))
    return _build("LeakyRelu", draw, [T("x", shape, xq)], [T("y", shape, yq)], 1, alpha=alpha)


def _pool_geometry(draw: st.DrawFn, same_pads: bool = False) -> dict:
    kernel = [draw(st.integers(1, 3)) for _ in range(2)]
    strides = [draw(st.integers(1, 2)) for _ in range(2)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel] * 2
    if same_pads:  # onnx.reference's MaxPool fails when the pads differ between dims (e.g. [0, 1, 0, 1])
        pads = [min(pads[:2])] * 4
    size = [draw(st.integers(k, 7)) for k in kernel]
    return {"kernel_shape": kernel, "strides": strides, "pads": pads, "size": size,
            "ceil_mode": draw(st.integers(0, 1))}


def _pool_out(g: dict) -> list[int]:
    out = []
    for s, k, st_, p in zip(g["size"], g["kernel_shape"], g["strides"], g["pads"][:2]):
        length = s + 2 * p - k
        count = (-(-length // st_) if g["ceil_mode"] else length // st_) + 1
        if g["ceil_mode"] and (count - 1) * st_ >= s + p:
            count -= 1
        out.append(count)
    return out


@st.composite
def max_pool(draw: st.DrawFn) -> Case:
    g = _pool_geometry(draw, same_pads=True)
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    out = (n, c, *_pool_out(g))
    shape = (n, c, *g.pop("size"))
    xq = draw(qtypes(INT8, shape, axes=(None, 1)))
    yq = _same_or_other(draw, xq, out, axes=(None, 1))
    return _build("MaxPool", draw, [T("x", shape, xq)], [T("y", out, yq)], _tolerance(xq, yq), **g)


@st.composite
def average_pool(draw: st.DrawFn) -> Case:
    g = _pool_geometry(draw)
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    out = (n, c, *_pool_out(g))
    shape = (n, c, *g.pop("size"))
    xq = draw(qtypes(INT8, shape, axes=(None, 1)))
    yq = _same_or_other(draw, xq, out, axes=(None, 1))  # equal scales: the exact division makes it exact
    return _build("AveragePool", draw, [T("x", shape, xq)], [T("y", out, yq)], _tolerance(xq, yq),
                  count_include_pad=draw(st.integers(0, 1)), **g)


@st.composite
def global_average_pool(draw: st.DrawFn) -> Case:
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    out = (*shape[:2], 1, 1)
    xq = draw(qtypes(INT8, shape, axes=(None, 1)))
    yq = _same_or_other(draw, xq, out, axes=(None, 1))
    return _build("GlobalAveragePool", draw, [T("x", shape, xq)], [T("y", out, yq)], _tolerance(xq, yq))


@st.composite
def reduce_mean(draw: st.DrawFn) -> Case:
    shape = (2, 3, 4)
    axes = sorted(draw(st.sets(st.integers(0, 2), min_size=1, max_size=3)))
    keepdims = draw(st.integers(0, 1))
    out = tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)
    kept = [i for i in range(3) if i not in axes]
    xq = draw(qtypes(INT8, shape, axes=(None, *kept)))
    yq = draw(qtypes(INT8, out))
    inputs = [T("x", shape, xq), T("axes", (len(axes),), dtype=TensorProto.INT64, value=np.array(axes, np.int64))]
    return _build("ReduceMean", draw, inputs, [T("y", out, yq)], 1, keepdims=keepdims)


def _movement(op: str, in_shape: tuple[int, ...], out_shape: tuple[int, ...], extra: list, axes=(None,), **attrs):
    @st.composite
    def case(draw: st.DrawFn) -> Case:
        xq = draw(qtypes(INT8, in_shape, axes=axes))
        yq = xq if xq.axis is not None else _same_or_other(draw, xq, out_shape)
        return _build(op, draw, [T("x", in_shape, xq), *extra], [T("y", out_shape, _remap(op, xq, yq, attrs))],
                      _tolerance(xq, yq), **attrs)

    return case


def _remap(op: str, source: QType, out: QType, attrs: dict) -> QType:
    """A per-axis type's axis after the movement (Transpose moves it; the cases keep other axes in place)."""
    if out.axis is None or op != "Transpose":
        return out
    return out.replace(axis=list(attrs["perm"]).index(source.axis))


def _i64(name: str, values: list[int]) -> T:
    return T(name, (len(values),), dtype=TensorProto.INT64, value=np.array(values, np.int64))


@st.composite
def concat(draw: st.DrawFn) -> Case:
    count = draw(st.integers(2, 3))
    widths = [draw(st.integers(1, 3)) for _ in range(count)]
    parts = [T(f"x{i}", (2, w, 3), draw(qtypes(INT8[:1], (2, w, 3)))) for i, w in enumerate(widths)]
    yq = parts[0].qtype if draw(st.booleans()) else draw(qtypes(INT8[:1], (2, sum(widths), 3)))
    tolerance = 0 if all(p.qtype == yq for p in parts) else 1
    return _build("Concat", draw, parts, [T("y", (2, sum(widths), 3), yq)], tolerance, axis=1)


@st.composite
def pad(draw: st.DrawFn) -> Case:
    shape = (1, 2, 3, 4)
    pads = [draw(st.integers(0, 2)) for _ in range(8)]
    mode = draw(st.sampled_from(["constant", "edge", "reflect"]))
    if mode == "reflect":
        pads = [min(p, shape[i % 4] - 1) for i, p in enumerate(pads)]
    out = tuple(d + pads[i] + pads[i + 4] for i, d in enumerate(shape))
    xq = draw(qtypes(INT8, shape))
    yq = _same_or_other(draw, xq, out)
    inputs = [T("x", shape, xq), _i64("pads", pads)]
    if mode == "constant" and draw(st.booleans()):
        inputs.append(T("value", (), value=np.float32(draw(st.sampled_from([0.0, 0.5, -1.25])))))
    return _build("Pad", draw, inputs, [T("y", out, yq)], _tolerance(xq, yq), mode=mode)


@st.composite
def resize(draw: st.DrawFn) -> Case:
    shape = (1, 2, 3, 4)
    factors = [1.0, 1.0, draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])), draw(st.sampled_from([0.5, 1.5, 2.0]))]
    out = tuple(int(math.floor(d * f)) for d, f in zip(shape, factors))
    xq = draw(qtypes(INT8, shape))
    yq = _same_or_other(draw, xq, out)
    inputs = [T("x", shape, xq), None, T("scales", (4,), value=np.array(factors, np.float32))]
    return _build("Resize", draw, inputs, [T("y", out, yq)], _tolerance(xq, yq), mode="nearest")


@st.composite
def softmax(draw: st.DrawFn) -> Case:
    shape = draw(st.sampled_from([(2, 5), (2, 3, 4)]))
    axis = draw(st.integers(-1, len(shape) - 1))
    xq = draw(qtypes(INT8, shape))
    yq = draw(st.sampled_from([QType("uint8", 1 / 256, 0), QType("int8", 1 / 256, -128), draw(qtypes(INT8, shape))]))
    return _build("Softmax", draw, [T("x", shape, xq)], [T("y", shape, yq)], 1, axis=axis)


def _operands(qtype: QType) -> tuple[np.ndarray, np.ndarray]:
    """Q/DQ scale and zero-point operands of a per-tensor (scalar) or per-axis (1-D) type."""
    scale = np.asarray(qtype.scale, np.float32)
    zero_point = np.asarray(qtype.zero_point).astype(qtype.storage_type.np_dtype)
    return (scale.reshape(()), zero_point.reshape(())) if qtype.axis is None else (scale, zero_point)


@st.composite
def quantize_linear(draw: st.DrawFn) -> Case:
    shape = (2, 3, 4)
    yq = draw(qtypes(("int8", "uint8", "int16", "uint16"), shape, axes=(None, 1)))
    scale, zero_point = _operands(yq)
    inputs = [T("x", shape), T("s", scale.shape, value=scale), T("z", zero_point.shape, value=zero_point)]
    axis = {} if yq.axis is None else {"axis": yq.axis}
    return _build("QuantizeLinear", draw, inputs, [T("y", shape, yq)], 0, **axis)


@st.composite
def requantize_linear(draw: st.DrawFn) -> Case:
    shape = (2, 3, 4)
    xq = draw(qtypes(("int8", "uint8", "int16"), shape))
    yq = draw(qtypes(INT8, shape))
    inputs = [T("x", shape, xq), T("s", (), value=np.float32(yq.scale[0])),
              T("z", (), value=np.asarray(yq.zero_point[0]).astype(yq.storage_type.np_dtype))]
    return _build("QuantizeLinear", draw, inputs, [T("y", shape, yq)], 1, ort=False)


@st.composite
def dequantize_linear(draw: st.DrawFn) -> Case:
    shape = (2, 3, 4)
    xq = draw(qtypes(("int8", "uint8", "int16", "uint16", "int4"), shape, axes=(None, 2)))
    scale, zero_point = _operands(xq)
    inputs = [T("x", shape, xq), T("s", scale.shape, value=scale), T("z", zero_point.shape, value=zero_point)]
    axis = {} if xq.axis is None else {"axis": xq.axis}
    return _build("DequantizeLinear", draw, inputs, [T("y", shape, dtype=TensorProto.FLOAT)], 0, ort=False, **axis)


CASES = {
    "Conv": conv(),
    "ConvTranspose": conv_transpose(),
    "MatMul": matmul(),
    "Gemm": gemm(),
    "Add": _binary("Add")(),
    "Sub": _binary("Sub")(),
    "Mul": _binary("Mul")(),
    "Relu": _unary("Relu")(),
    "Clip": clip(),
    "LeakyRelu": leaky_relu(),
    "MaxPool": max_pool(),
    "AveragePool": average_pool(),
    "GlobalAveragePool": global_average_pool(),
    "ReduceMean": reduce_mean(),
    "Reshape": _movement("Reshape", (2, 3, 4), (6, 4), [_i64("shape", [6, 4])])(),
    "Transpose": _movement("Transpose", (2, 3, 4), (4, 2, 3), [], axes=(None, 0, 1, 2), perm=[2, 0, 1])(),
    "Flatten": _movement("Flatten", (2, 3, 4), (6, 4), [], axis=2)(),
    "Squeeze": _movement("Squeeze", (2, 1, 4), (2, 4), [_i64("axes", [1])])(),
    "Unsqueeze": _movement("Unsqueeze", (2, 4), (2, 1, 4), [_i64("axes", [1])])(),
    "Concat": concat(),
    "Slice": _movement("Slice", (4, 6), (2, 3), [_i64("starts", [1, 0]), _i64("ends", [3, 6]), _i64("axes", [0, 1]),
                                                   _i64("steps", [1, 2])])(),
    "Gather": _movement("Gather", (5, 3), (2, 2, 3), [T("idx", (2, 2), dtype=TensorProto.INT64, value=np.array([[0, 4], [2, 2]]))],
                        axis=0)(),
    "Pad": pad(),
    "Resize": resize(),
    "Sigmoid": _unary("Sigmoid", lookup_table=True)(),
    "Tanh": _unary("Tanh", lookup_table=True)(),
    "HardSwish": _unary("HardSwish", lookup_table=True)(),
    "Softmax": softmax(),
    "QuantizeLinear": quantize_linear(),
    "DequantizeLinear": dequantize_linear(),
}
REQUANTIZE_CASES = {"QuantizeLinear(quantized x)": requantize_linear()}
LOOKUP_TABLE_OPS = {"Sigmoid", "Tanh", "HardSwish"}
