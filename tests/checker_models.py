"""Typed models for the checker's tests, and the table of rule cases.

``Graph`` builds small typed models directly (declarations written through
onnx_qtypes.proto, invalid ones as raw QuantizedType messages). ``CASES``
lists, for every rule, models that must fire it at an exact location and
near misses that must not fire it; tests/test_checker_rules.py runs them and
tests/test_checker_contract.py fails when a registered rule has none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes.proto import QType, Schema, Statistics, TensorStatistics, set_qtype
from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.encoding import marked_storage, marker, to_wire_form, unmark_tensor
from onnx_qtypes.proto.model import read_view, write_view

IR_VERSION, OPSET = 10, 21
FLOAT = TensorProto.FLOAT
F32 = float(np.float32(0.02))  # a float32 scale, as a Python float


def qmsg(storage: int = TensorProto.INT8, scale: Sequence[float] = (0.5,), zero_point: Sequence[int] = (),
         axis: int | None = None, block_size: int | None = None, schema: int | None = None,
         storage_min: int | None = None, storage_max: int | None = None, expressed: int | None = None,
         extra: bytes = b"") -> pb.QuantizedType:
    """A raw QuantizedType message: any field values, valid or not (``extra``: appended wire bytes).

    Scales are rounded to float32 values (the default expressed type), as a writer should store them.
    """
    msg = pb.QuantizedType(storage_type=storage)
    msg.scale.extend(float(np.float32(s)) for s in scale)
    msg.zero_point.extend(zero_point)
    for field, value in (("axis", axis), ("block_size", block_size), ("schema", schema),
                         ("storage_min", storage_min), ("storage_max", storage_max), ("expressed_type", expressed)):
        if value is not None:
            setattr(msg, field, value)
    if extra:
        msg.MergeFromString(extra)
    return msg


def stats(**fields: object) -> TensorStatistics:
    """Whole-tensor statistics; ``per_axis`` / ``axis`` pass through."""
    per_axis = fields.pop("per_axis", ())
    axis = fields.pop("axis", None)
    return TensorStatistics(tensor=Statistics(**fields) if fields else None, axis=axis, per_axis=per_axis)


Q = QType | pb.QuantizedType


def declare(vi: onnx.ValueInfoProto, q: Q | None = None, statistics: TensorStatistics | None = None,
            elem_type: int | None = None) -> None:
    """Write a quantized type (and statistics) into a declaration, byte for byte as given; ``elem_type`` None is
    the fail-closed marker of the storage type (UNDEFINED when the storage type is not one)."""
    view = read_view(vi.type.tensor_type)
    if q is not None:
        message = q.to_proto() if isinstance(q, QType) else q
        view.quantization.CopyFrom(message)
        if elem_type is None:
            elem_type = marker(message.storage_type) if marked_storage(marker(message.storage_type)) else 0
        view.elem_type = elem_type
        if isinstance(q, QType) and q.statistics is not None and statistics is None:
            statistics = q.statistics
    if statistics is not None:
        view.statistics.CopyFrom(statistics.to_proto())
    write_view(vi.type.tensor_type, view)


class Graph:
    """A tiny typed-graph builder: declarations, initializers and nodes in order."""

    def __init__(self, name: str = "g") -> None:
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.value_info: list[onnx.ValueInfoProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.explicit_markers: dict[str, int] = {}  # declarations whose elem_type a case sets itself

    def _vi(self, name: str, elem_type: int, shape: Sequence[int] | None, q: Q | None, st: TensorStatistics | None,
            marker: int | None = None) -> onnx.ValueInfoProto:
        vi = helper.make_tensor_value_info(name, TensorProto.UNDEFINED if q is not None else elem_type,
                                           None if shape is None else list(shape))
        if q is not None or st is not None:
            declare(vi, q, st, marker)
        if marker is not None:
            self.explicit_markers[name] = marker
        return vi

    def input(self, name: str, shape: Sequence[int] | None, q: Q | None = None, elem_type: int = FLOAT,
              statistics: TensorStatistics | None = None, marker: int | None = None) -> Graph:
        self.inputs.append(self._vi(name, elem_type, shape, q, statistics, marker))
        return self

    def output(self, name: str, shape: Sequence[int] | None, q: Q | None = None, elem_type: int = FLOAT) -> Graph:
        self.outputs.append(self._vi(name, elem_type, shape, q, None))
        return self

    def value(self, name: str, shape: Sequence[int] | None, q: Q | None = None, elem_type: int = FLOAT,
              statistics: TensorStatistics | None = None) -> Graph:
        self.value_info.append(self._vi(name, elem_type, shape, q, statistics))
        return self

    def init(self, name: str, array: np.ndarray, q: Q | None = None, declare_shape: bool = True) -> Graph:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        if q is not None:
            self.value(name, array.shape if declare_shape else None, q)
        return self

    def node(self, op: str, inputs: Sequence[str], outputs: Sequence[str], name: str | None = None,
             **attrs: object) -> Graph:
        self.nodes.append(helper.make_node(op, list(inputs), list(outputs), name=name or outputs[0], **attrs))
        return self

    def quantize(self, x: str, y: str, q: QType, shape: Sequence[int]) -> Graph:
        """y = QuantizeLinear(x) with y's parameters as initializers (y declared ``q``)."""
        self._qdq_params(y, q)
        attrs = {"axis": q.axis} if q.axis is not None else {}
        if q.block_size:
            attrs["block_size"] = q.block_size
        self.node("QuantizeLinear", [x, f"{y}_scale", f"{y}_zero_point"], [y], name=f"quantize_{y}", **attrs)
        return self.value(y, shape, q)

    def dequantize(self, x: str, y: str, q: QType) -> Graph:
        """y = DequantizeLinear(x) reading x's parameters (x already declared ``q``)."""
        self._qdq_params(x, q)
        attrs = {"axis": q.axis} if q.axis is not None else {}
        return self.node("DequantizeLinear", [x, f"{x}_scale", f"{x}_zero_point"], [y], name=f"dequantize_{x}",
                         **attrs)

    def _qdq_params(self, name: str, q: QType) -> None:
        if any(i.name == f"{name}_scale" for i in self.inits):
            return
        shape = () if q.axis is None else (len(q.scale),)
        self.inits.append(numpy_helper.from_array(np.asarray(q.scale, np.float32).reshape(shape), f"{name}_scale"))
        zp = np.asarray(q.zero_point, np.int64).astype(q.storage_type.np_dtype).reshape(shape)
        self.inits.append(numpy_helper.from_array(zp, f"{name}_zero_point"))

    def build(self, opset: int = OPSET, ir_version: int = IR_VERSION) -> onnx.ModelProto:
        """The model as onnx_qtypes.save writes it (quantized constants and boundary zero points marked), but
        for the elem_types a case set itself."""
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits,
                                  value_info=self.value_info)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)
        to_wire_form(model)
        for vi in (*model.graph.input, *model.graph.output, *model.graph.value_info):
            if vi.name in self.explicit_markers:
                vi.type.tensor_type.elem_type = self.explicit_markers[vi.name]
        return model


# --- building blocks ----------------------------------------------------------------


def one_tensor(q: Q, shape: Sequence[int] | None = (2, 3), statistics: TensorStatistics | None = None,
               marker: int | None = None) -> onnx.ModelProto:
    """Graph input ``q`` of the given type, read by Identity into a float output ``y``."""
    out_shape = None if shape is None else list(shape)
    expressed = q.expressed_type.data_type if isinstance(q, QType) else q.expressed_type
    out_type = expressed if expressed in (TensorProto.FLOAT16, TensorProto.BFLOAT16) else FLOAT
    return (Graph().input("q", shape, q, statistics=statistics, marker=marker)
            .node("Identity", ["q"], ["y"], name="identity").output("y", out_shape, elem_type=out_type).build())


def _kept_pair(scale: float) -> onnx.ModelProto:
    """A typed model (graph input ``q``) with a QuantizeLinear / DequantizeLinear pair on a float tensor that no
    quantized type covers, as a lift keeps a pair whose scale no type holds (proposal/spec/interop.md
    #lift-untypeable-scales): x -> Q(scale, 0) -> DQ -> y."""
    return (Graph().input("q", (2, 3), QType("int8", 0.5, 0)).node("Identity", ["q"], ["u"], name="identity")
            .output("u", (2, 3)).input("x", (2, 3))
            .init("x_scale", np.array(scale, np.float32)).init("x_zero_point", np.array(0, np.int8))
            .node("QuantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_q"], name="kept_q")
            .node("DequantizeLinear", ["x_q", "x_scale", "x_zero_point"], ["y"], name="kept_dq")
            .output("y", (2, 3)).build())


def _relu_read(statistics: TensorStatistics) -> onnx.ModelProto:
    """Graph input ``q`` (int8, scale 0.02, zero point -128: range [0, 5.1]) read only by a Relu: its statistics
    are the pre-Relu values a calibrator records, negatives included."""
    q, y = QType("int8", f32(0.02), -128), QType("int8", f32(0.02), -128)
    return (Graph().input("q", (2, 3), q, statistics=statistics).node("Relu", ["q"], ["r"], name="relu")
            .value("r", (2, 3), y).dequantize("r", "y", y).output("y", (2, 3)).build())


def f32(scale: float | Sequence[float]) -> float | list[float]:
    """Scales as float32 values (so that QT102 stays quiet), held as Python floats."""
    if isinstance(scale, (int, float)):
        return float(np.float32(scale))
    return [float(np.float32(s)) for s in scale]


def int8(scale: float | Sequence[float] = F32, zero_point: int | Sequence[int] = 0, **kw: object) -> QType:
    return QType("int8", f32(scale), zero_point, **kw)


X_SCALE, W_SCALES = F32, [float(np.float32(s)) for s in (0.01, 0.02, 0.04, 0.005)]


def conv_model(w_axis: int = 0, bias: Q | None | str = "default", w_q: QType | None = None,
               x_q: QType | None = None, y_q: QType | None = None, k: int = 3, cin: int = 3,
               w_data: np.ndarray | None = None, b_data: np.ndarray | None = None) -> onnx.ModelProto:
    """x -> Q -> x_q -> Conv(x_q, w, b) -> y_q -> DQ -> y, with per-channel int8 weights and int32 bias."""
    cout = 4
    rng = np.random.default_rng(7)
    x_q = x_q or int8(X_SCALE, 0)
    y_q = y_q or int8(0.05, -10)
    w_shape = (cout, cin, k, k)
    data = w_data if w_data is not None else rng.integers(-127, 128, size=w_shape).astype(np.int8)
    if w_q is None:
        scales = W_SCALES if w_axis == 0 else [W_SCALES[0]] * w_shape[w_axis]
        w_q = int8(scales, [0] * len(scales), axis=w_axis, schema=Schema.SYMMETRIC)
    if bias == "default":
        bias = QType("int32", [float(np.float32(X_SCALE) * np.float32(s)) for s in W_SCALES], [0] * cout, axis=0)
    g = Graph("conv").input("x", (1, cin, 8, 8))
    g.quantize("x", "x_q", x_q, (1, cin, 8, 8))
    g.init("w", data, w_q)
    inputs = ["x_q", "w"]
    if bias is not None:
        b_storage = bias.storage_type.np_dtype if isinstance(bias, QType) else np.int32
        values = b_data if b_data is not None else rng.integers(-50, 50, size=(cout,))
        g.init("b", np.asarray(values).astype(b_storage), bias)
        inputs.append("b")
    pad = (k - 1) // 2
    g.node("Conv", inputs, ["y_q"], name="conv", pads=[pad] * 4)
    g.value("y_q", (1, cout, 8, 8), y_q)
    g.dequantize("y_q", "y", y_q).output("y", (1, cout, 8, 8))
    return g.build()


def float_bias_conv(values: Sequence[float]) -> onnx.ModelProto:
    """``conv_model`` with a float bias that has no type of its own (calibrate leaves one float that no int32
    scale holds): an integer kernel adds it in steps of x_scale * w_scale."""
    model = conv_model(bias=None)
    model.graph.initializer.append(numpy_helper.from_array(np.asarray(values, np.float32), "b"))
    next(n for n in model.graph.node if n.op_type == "Conv").input.append("b")
    return model


def mover(op: str, in_shape: Sequence[int], out_shape: Sequence[int], in_q: QType, out_q: QType,
          extra_inputs: Sequence[tuple[str, np.ndarray]] = (), **attrs: object) -> onnx.ModelProto:
    """x_q (graph input) -> op -> y_q (declared) -> DQ -> y."""
    g = Graph(op.lower()).input("x_q", in_shape, in_q)
    for name, array in extra_inputs:
        g.init(name, array)
    g.node(op, ["x_q", *(n for n, _ in extra_inputs)], ["y_q"], name=op.lower(), **attrs)
    g.value("y_q", out_shape, out_q)
    return g.dequantize("y_q", "y", out_q).output("y", out_shape).build()


def concat_model(scales: Sequence[float], out_scale: float) -> onnx.ModelProto:
    """Concat of quantized graph inputs a, b along axis 1, output declared quantized."""
    g = Graph("concat")
    names = []
    for i, s in enumerate(scales):
        g.input(f"in{i}", (1, 2), int8(s, 0))
        names.append(f"in{i}")
    out = int8(out_scale, 0)
    g.node("Concat", names, ["cat"], name="concat", axis=1).value("cat", (1, 2 * len(scales)), out)
    return g.dequantize("cat", "y", out).output("y", (1, 2 * len(scales))).build()


def matmul_model(k: int, x_zero_point: int = -128, accumulate_weight: int = 127) -> onnx.ModelProto:
    """x_q [1, K] (int8, given zero point) @ w [K, 2] int8 constant filled with ``accumulate_weight``."""
    x_q = int8(F32, x_zero_point)
    w_q = int8(F32, 0)
    y_q = int8(0.5, 0)
    g = Graph("matmul").input("x_q", (1, k), x_q)
    g.init("w", np.full((k, 2), accumulate_weight, np.int8), w_q)
    g.node("MatMul", ["x_q", "w"], ["y_q"], name="matmul").value("y_q", (1, 2), y_q)
    return g.dequantize("y_q", "y", y_q).output("y", (1, 2)).build()


def matmul16_model(k: int) -> onnx.ModelProto:
    """matmul_model with uint16 activations (zero point 0: |x - zx| reaches 65535) and int8 weights of 127."""
    x_q, w_q, y_q = QType("uint16", F32, 0), int8(F32, 0), QType("uint16", 0.5, 0)
    g = Graph("matmul16").input("x_q", (1, k), x_q)
    g.init("w", np.full((k, 2), 127, np.int8), w_q)
    g.node("MatMul", ["x_q", "w"], ["y_q"], name="matmul").value("y_q", (1, 2), y_q)
    return g.dequantize("y_q", "y", y_q).output("y", (1, 2)).build()


def one_large_weight_model(k: int) -> onnx.ModelProto:
    """matmul_model whose weight columns hold one 127 and K - 1 ones: the type's bound K * 255 * 127 passes
    2^31 at K = 70000, what the weights can sum to (255 * (127 + K - 1)) does not."""
    model = matmul_model(k, accumulate_weight=1)
    w = next(t for t in model.graph.initializer if t.name == "w")
    values = np.ones((k, 2), np.int8)
    values[0] = 127
    w.raw_data = values.tobytes()
    return model


def float8_matmul_model(k: int, weight: float = 57344, first: float | None = None) -> onnx.ModelProto:
    """matmul_model in float8e5m2 (largest finite 57344): its products are not accumulated in integers.
    ``first``: another value for the weight's first element."""
    import ml_dtypes  # noqa: PLC0415

    x_q, w_q, y_q = (QType("float8e5m2", s) for s in (F32, F32, 0.5))
    g = Graph("matmul").input("x_q", (1, k), x_q)
    w = np.full((k, 2), weight, ml_dtypes.float8_e5m2)
    if first is not None:
        w[0, 0] = first
    g.init("w", w, w_q)
    g.node("MatMul", ["x_q", "w"], ["y_q"], name="matmul").value("y_q", (1, 2), y_q)
    return g.dequantize("y_q", "y", y_q).output("y", (1, 2)).build()


def unary_model(op: str, out_q: QType, **attrs: object) -> onnx.ModelProto:
    """x_q (graph input, int8) -> op -> y_q -> DQ -> y."""
    x_q = int8(0.1, 0)
    g = Graph(op.lower()).input("x_q", (1, 8), x_q)
    g.node(op, ["x_q"], ["y_q"], name=op.lower(), **attrs).value("y_q", (1, 8), out_q)
    return g.dequantize("y_q", "y", out_q).output("y", (1, 8)).build()


def with_subgraph(inner: QType, outer: QType) -> onnx.ModelProto:
    """An If whose then-branch declares the outer tensor ``q`` again (outer-scope reference)."""
    then_out = helper.make_tensor_value_info("t", FLOAT, [2])
    then_vi = helper.make_tensor_value_info("q", TensorProto.UNDEFINED, [2])
    declare(then_vi, inner)
    then_graph = helper.make_graph([helper.make_node("Identity", ["q"], ["t"], name="then_id")], "then", [],
                                   [then_out], value_info=[then_vi])
    else_graph = helper.make_graph([helper.make_node("Identity", ["q"], ["e"], name="else_id")], "else", [],
                                   [helper.make_tensor_value_info("e", FLOAT, [2])])
    g = Graph("if").input("q", (2,), outer).input("c", (), elem_type=TensorProto.BOOL)
    g.node("If", ["c"], ["r"], name="branch", then_branch=then_graph, else_branch=else_graph)
    return g.output("r", (2,)).build()


def sequence_model(nested: QType | None) -> onnx.ModelProto:
    """n = SequenceLength(seq) with seq a sequence of int8 tensors whose element type carries ``nested``."""
    tensor = helper.make_tensor_type_proto(TensorProto.INT8, [2])
    if nested is not None:
        vi = onnx.ValueInfoProto(name="elem", type=tensor)
        declare(vi, nested, elem_type=TensorProto.INT8)
        tensor = vi.type
    seq = helper.make_value_info("seq", helper.make_sequence_type_proto(tensor))
    graph = helper.make_graph([helper.make_node("SequenceLength", ["seq"], ["n"], name="length")], "seq", [seq],
                              [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def _vi(name: str, q: QType | None, shape: list[int] | None, elem_type: int = TensorProto.INT8) -> onnx.ValueInfoProto:
    """A declaration, quantized with ``q`` when given (elem_type then UNDEFINED)."""
    v = helper.make_tensor_value_info(name, TensorProto.UNDEFINED if q else elem_type, shape)
    if q is not None:
        declare(v, q)
    return v


def if_model(branch: QType | None, out: QType, else_q: QType | None = None) -> onnx.ModelProto:
    """r = If(c) whose branches return Identity(x_q) as ``t`` (typed ``branch``) and ``e`` (``else_q``, default
    ``out``); r typed ``out``."""
    def body(name: str, q: QType | None) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Identity", ["x_q"], [name], name=f"{name}_id")], name, [],
                                 [_vi(name, q, [2])])

    g = Graph("if").input("x_q", (2,), out).input("c", (), elem_type=TensorProto.BOOL)
    g.node("If", ["c"], ["r"], name="branch", then_branch=body("t", branch), else_branch=body("e", else_q or out))
    return g.value("r", (2,), out).dequantize("r", "y", out).output("y", (2,)).build()


def function_call_model(outer: QType, inner: QType | None, inner_out: QType | None = None) -> onnx.ModelProto:
    """c_q = local.QAdd(a_q, a_q) with a_q and c_q typed ``outer``; the body c = Add(a, b) declares a, b as
    ``inner`` and c as ``inner_out`` (default ``inner``; None: an untyped body)."""
    from onnx_qtypes import set_qtypes

    fn = helper.make_function("local", "QAdd", ["a", "b"], ["c"], [helper.make_node("Add", ["a", "b"], ["c"])],
                              [helper.make_opsetid("", OPSET)])
    g = Graph("call").input("a_q", (4,), outer)
    g.node("QAdd", ["a_q", "a_q"], ["c_q"], name="call", domain="local")
    model = g.value("c_q", (4,), outer).dequantize("c_q", "y", outer).output("y", (4,)).build()
    model.functions.append(fn)
    model.opset_import.append(helper.make_opsetid("local", 1))
    if inner is not None:
        set_qtypes(model, {"a": inner, "b": inner, "c": inner_out or inner}, function="local:QAdd")
    return model


def loop_model(body_q: QType, out: QType, body_out: QType | None = None, scan_out: QType | None = None
               ) -> onnx.ModelProto:
    """r = Loop(n, , x_q) carrying x_q through Identity: the body's carried input typed ``body_q``, its output
    ``body_out`` (default ``body_q``); with ``scan_out``, the body also emits the carried value as a scan output
    ``s`` (typed ``body_q``), stacked into ``rs`` typed ``scan_out``."""
    nodes = [helper.make_node("Identity", ["acc_in"], ["acc_out"], name="carry"),
             helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")]
    outputs = [_vi("cond_out", None, [], TensorProto.BOOL), _vi("acc_out", body_out or body_q, [2])]
    if scan_out is not None:
        nodes.append(helper.make_node("Identity", ["acc_in"], ["s"], name="emit"))
        outputs.append(_vi("s", body_q, [2]))
    body = helper.make_graph(nodes, "body", [_vi("i", None, [], TensorProto.INT64),
                                             _vi("cond_in", None, [], TensorProto.BOOL), _vi("acc_in", body_q, [2])],
                             outputs)
    g = Graph("loop").input("x_q", (2,), out).init("n", np.array(3, np.int64))
    g.node("Loop", ["n", "", "x_q"], ["r"] + (["rs"] if scan_out is not None else []), name="repeat", body=body)
    g.value("r", (2,), out).dequantize("r", "y", out).output("y", (2,))
    if scan_out is not None:
        g.value("rs", (3, 2), scan_out).dequantize("rs", "ys", scan_out).output("ys", (3, 2))
    return g.build()


def scan_model(state_body: QType, state: QType, slice_q: QType, stacked: QType) -> onnx.ModelProto:
    """final, ys = Scan(s_q, x_q): state s_q (typed ``state``) carried through the body as s_in / s_out (typed
    ``state_body``); scan input x_q [3, 2] (typed ``stacked``) sliced to x_in [2] (``slice_q``), copied to y_out
    (``slice_q``) and stacked into ys [3, 2] (``stacked``)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["s_in"], ["s_out"], name="keep"),
         helper.make_node("Identity", ["x_in"], ["y_out"], name="copy")], "body",
        [_vi("s_in", state_body, [2]), _vi("x_in", slice_q, [2])],
        [_vi("s_out", state_body, [2]), _vi("y_out", slice_q, [2])])
    g = Graph("scan").input("s_q", (2,), state).input("x_q", (3, 2), stacked)
    g.node("Scan", ["s_q", "x_q"], ["final", "ys"], name="scan", body=body, num_scan_inputs=1)
    g.value("final", (2,), state).value("ys", (3, 2), stacked)
    g.dequantize("final", "f", state).dequantize("ys", "y", stacked)
    return g.output("f", (2,)).output("y", (3, 2)).build()


def _absurd_scan(num_scan_inputs: int) -> onnx.ModelProto:
    """scan_model with ``num_scan_inputs`` as given (1 is what it scans)."""
    model = scan_model(int8(0.5, 0), int8(0.5, 0), int8(0.5, 0), int8(0.5, 0))
    scan = next(n for n in model.graph.node if n.op_type == "Scan")
    next(a for a in scan.attribute if a.name == "num_scan_inputs").i = num_scan_inputs
    return model


def _long_loop(trips: int, condition: bool = False) -> onnx.ModelProto:
    """loop_model with a scan output of [2] int8 per iteration, ``trips`` constant iterations, and a condition
    input when ``condition``."""
    q = int8(0.5, 0)
    model = loop_model(q, q, scan_out=q)
    next(t for t in model.graph.initializer if t.name == "n").CopyFrom(numpy_helper.from_array(
        np.array(trips, np.int64), "n"))
    if condition:
        loop = next(n for n in model.graph.node if n.op_type == "Loop")
        loop.input[1] = "go"
        model.graph.initializer.append(numpy_helper.from_array(np.array(True), "go"))
    return model


def matmul_nbits_model(import_domain: bool) -> onnx.ModelProto:
    """A com.microsoft.MatMulNBits (K 16, N 2, 4 bits, one block), as NNCF writes it without the domain import."""
    packed = numpy_helper.from_array(np.full((2, 1, 8), 0x98, np.uint8), "w_q4")  # codes 8, 9: 0 and 1 step
    scales = numpy_helper.from_array(np.array([0.5, 0.25], np.float32), "w_scales")
    node = helper.make_node("MatMulNBits", ["a", "w_q4", "w_scales"], ["y"], name="mm", domain="com.microsoft",
                            K=16, N=2, bits=4, block_size=16)
    graph = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("a", FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", FLOAT, [1, 2])], [packed, scales])
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid("com.microsoft", 1)] if import_domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


# --- the case table -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """A model that must fire ``rule`` at ``pointer`` (``fires``), or must not fire it (near miss)."""

    rule: str
    id: str
    build: Callable[[], onnx.ModelProto]
    fires: bool = True
    pointer: str | None = None
    tensor: str | None = None
    node: str | None = None
    profile: str | dict | None = None
    clean: bool = True  # near misses: no finding of any rule either (no error when quiet is False)
    quiet: bool = True
    message: str | None = None  # a fragment the message must contain


IN = "/graph/input/0/type/tensor_type"
QF = f"{IN}/quantization"
SF = f"{IN}/statistics/tensor"


def _dynamic_quantize_linear(x_q: QType, w_q: QType = QType("int8", 0.5, 0)) -> onnx.ModelProto:
    """x_q = DynamicQuantizeLinear(x); y = MatMul(x_q, w) with x_q and w declared as given."""
    return (Graph().input("x", (1, 2)).node("DynamicQuantizeLinear", ["x"], ["x_q", "x_s", "x_z"], name="dql")
            .value("x_q", (1, 2), x_q).init("w", np.array([[1, -2], [3, 4]], np.int8), w_q)
            .node("MatMul", ["x_q", "w"], ["y"], name="mm").output("y", (1, 2)).build())


def _fire(rule: str, id: str, build: Callable, pointer: str, tensor: str | None = None, node: str | None = None,
          profile: str | dict | None = None, message: str | None = None) -> Case:
    return Case(rule, id, build, True, pointer, tensor, node, profile, message=message)


def _miss(rule: str, id: str, build: Callable, profile: str | dict | None = None, quiet: bool = True) -> Case:
    return Case(rule, id, build, False, profile=profile, quiet=quiet)


def _expressed(storage: str, expressed: str, scale: float | Sequence[float] = 0.375,
               zero_point: int | Sequence[int] = 0, **kw: object) -> QType:
    """A type with the given storage and expressed types (0.375 and 0.0625 are values of every expressed type)."""
    return QType(storage, scale, zero_point, expressed=expressed, **kw)


def _per_axis(scales: Sequence[float], **kw: object) -> pb.QuantizedType:
    return qmsg(scale=scales, zero_point=[0] * len(scales), axis=kw.pop("axis", 1), **kw)  # type: ignore[arg-type]


def _raw_tensor(name: str, dims: list[int], data_type: int, raw: bytes) -> onnx.TensorProto:
    return helper.make_tensor(name, data_type, dims, raw, raw=True)


def _bogus_attribute() -> onnx.ModelProto:
    model = one_tensor(int8())
    model.graph.node[0].attribute.append(helper.make_attribute("bogus", 1))
    return model


def _cast_of_quantized_constant(also_input: bool) -> onnx.ModelProto:
    g = Graph("cast")
    w = QType("int8", 0.5, 0)
    if also_input:
        g.input("w", (2,), w)
    g.init("w", np.array([100, 100], np.int8), None if also_input else w)
    return g.node("Cast", ["w"], ["y"], name="cast", to=FLOAT).output("y", (2,)).build()


def _plain_constants(which: str) -> onnx.ModelProto:
    """A marked model (as save writes it) with one tensor of quantized integers left plain (QT311)."""
    if which == "initializer":
        model = _cast_of_quantized_constant(False)
        unmark_tensor(model.graph.initializer[0])
        return model
    model = _qdq()
    quantize = model.graph.node[0]
    zero_point = next(t for t in model.graph.initializer if t.name == quantize.input[2])
    if which == "zero point":
        unmark_tensor(zero_point)
    elif which == "no zero point":
        del quantize.input[2]
        quantize.attribute.append(helper.make_attribute("output_dtype", TensorProto.INT8))
    return model


def _undeclared_output(declared: bool) -> onnx.ModelProto:
    q = int8(0.1, 0)
    g = Graph("relu").input("x_q", (1, 4), q).node("Relu", ["x_q"], ["r"], name="relu")
    if declared:
        g.value("r", (1, 4), q)
    return g.dequantize("r", "y", q).output("y", (1, 4)).build() if declared else \
        g.node("Identity", ["r"], ["y"], name="identity").output("y", (1, 4)).build()


def _weight_only(op: str) -> onnx.ModelProto:
    """Weight-only quantization as lift writes MatMulNBits: MatMul(x float, w int8) or Gather(w int8, ids), the
    float result undeclared and read by Relu."""
    w = np.arange(-8, 8, dtype=np.int8).reshape(4, 4)
    g = Graph("weights").init("w", w, int8(0.05, 0))
    if op == "MatMul":
        g.input("x", (1, 4)).node("MatMul", ["x", "w"], ["m"], name="mm")
    else:
        g.init("ids", np.array([0, 2], np.int64)).node("Gather", ["w", "ids"], ["m"], name="gather")
    shape = (1, 4) if op == "MatMul" else (2, 4)
    return g.node("Relu", ["m"], ["y"], name="relu").output("y", shape).build()


def _qdq(node_scale: float = F32, node_zp: int = 0, type_q: QType | None = None, scale_input: bool = False,
         axis_attr: int | None = None) -> onnx.ModelProto:
    """x -> QuantizeLinear(x, s, z) -> x_q (declared type_q) -> DQ (type's params) -> y."""
    type_q = type_q or int8(F32, 0)
    g = Graph("qdq").input("x", (1, 4))
    if scale_input:
        g.input("s", ())
    else:
        g.init("s", np.array(node_scale, np.float32))
    g.init("z", np.array(node_zp, np.int8))
    attrs = {} if axis_attr is None else {"axis": axis_attr}
    g.node("QuantizeLinear", ["x", "s", "z"], ["x_q"], name="quantize", **attrs).value("x_q", (1, 4), type_q)
    return g.dequantize("x_q", "y", type_q).output("y", (1, 4)).build()


def _float8_quantize(how: str) -> onnx.ModelProto:
    """x -> QuantizeLinear(saturate=0) -> q -> DequantizeLinear -> y, q float8e4m3fn by its declared quantized type
    (``how`` "typed") or by the node's output_dtype alone (no zero-point input)."""
    import ml_dtypes  # noqa: PLC0415

    q = QType("float8e4m3fn", F32)
    g = Graph("float8_quantize").input("x", (1, 4)).init("s", np.array(F32, np.float32))
    if how == "typed":
        g.init("z", np.array(0, ml_dtypes.float8_e4m3fn))
        g.node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quantize", saturate=0).value("q", (1, 4), q)
        return g.dequantize("q", "y", q).output("y", (1, 4)).build()
    g.node("QuantizeLinear", ["x", "s"], ["q"], name="quantize", saturate=0, output_dtype=TensorProto.FLOAT8E4M3FN)
    return g.node("DequantizeLinear", ["q", "s"], ["y"], name="dequantize").output("y", (1, 4)).build()


def _float8_qdq(saturate: int | None = None, zero_point: float = 0.0) -> onnx.ModelProto:
    """A plain QDQ model: x -> Relu -> QuantizeLinear(float8e4m3fn zero point) -> DequantizeLinear -> Neg -> y."""
    import ml_dtypes  # noqa: PLC0415

    g = Graph("float8_qdq").input("x", (1, 4)).init("s", np.array(F32, np.float32))
    g.init("z", np.array(zero_point, ml_dtypes.float8_e4m3fn))
    attrs = {} if saturate is None else {"saturate": saturate}
    g.node("Relu", ["x"], ["r"], name="relu").node("QuantizeLinear", ["r", "s", "z"], ["q"], name="quantize", **attrs)
    g.node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dequantize").node("Neg", ["d"], ["y"], name="neg")
    return g.output("y", (1, 4)).build()


def _referenced_weight(change: str = "") -> onnx.ModelProto:
    """An int8 weight whose per-axis scales are kept in initializer ``w_scale``, read by Identity into float ``y``;
    ``change`` spoils the reference one way (see QT117 / QT118)."""
    g = Graph("referenced").init("w", np.ones((2, 3), np.int8))
    g.node("Identity", ["w"], ["y"], name="identity").output("y", (2, 3))
    if change == "dequantize":  # a DequantizeLinear of w reads the scales: allowed
        g.node("DequantizeLinear", ["w", "w_scale"], ["w_real"], name="dq", axis=1).output("w_real", (2, 3))
    model = g.build()
    set_qtype(model, "w", QType("int8", f32([0.5, 0.25, 0.125]), None, axis=1, scale_tensor="w_scale"))
    scale = next(t for t in model.graph.initializer if t.name == "w_scale")
    if change == "missing":
        model.graph.initializer.remove(scale)
    elif change == "float64":
        scale.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(scale).astype(np.float64), "w_scale"))
    elif change == "dims":
        scale.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(scale).reshape(1, 3), "w_scale"))
    elif change == "both":
        vi = model.graph.value_info[0]
        view = read_view(vi.type.tensor_type)
        view.quantization.scale.extend(f32([0.5, 0.25, 0.125]))
        write_view(vi.type.tensor_type, view)
    elif change == "graph-input":
        model.graph.input.append(helper.make_tensor_value_info("w_scale", FLOAT, [3]))
    elif change == "read-as-data":
        model.graph.node.append(helper.make_node("Mul", ["w_scale", "w_scale"], ["sq"], name="square"))
        model.graph.output.append(helper.make_tensor_value_info("sq", FLOAT, [3]))
    elif change == "shared":
        model.graph.initializer.append(numpy_helper.from_array(np.ones((2, 3), np.int8), "w2"))
        model.graph.node.append(helper.make_node("Identity", ["w2"], ["y2"], name="identity2"))
        model.graph.output.append(helper.make_tensor_value_info("y2", FLOAT, [2, 3]))
        vi = model.graph.value_info.add()
        vi.CopyFrom(model.graph.value_info[0])
        vi.name = "w2"
    return model


def _type_constraint(w_declared: bool) -> onnx.ModelProto:
    g = Graph("tc").input("x", (1, 3, 4, 4))
    g.quantize("x", "x_q", int8(F32, 0), (1, 3, 4, 4))
    g.init("w", np.ones((2, 3, 1, 1), np.int8), int8(0.01, 0) if w_declared else None)
    g.node("Conv", ["x_q", "w"], ["y"], name="conv")
    return g.output("y", (1, 2, 4, 4)).build()


def _mixed_expressed(b_expressed: str) -> onnx.ModelProto:
    a = QType("int8", 0.0625, 0, expressed="float16")
    b = QType("int8", 0.0625, 0, expressed=b_expressed)
    g = Graph("add").input("a", (2,), a).input("b", (2,), b)
    return g.node("Add", ["a", "b"], ["c"], name="add").output("c", (2,), elem_type=TensorProto.FLOAT16).build()


def _quantized_with_float(b_type: int, c_type: int) -> onnx.ModelProto:
    """A float16-expressed quantized `a` added to a float tensor `b` of ``b_type`` into a float `c` of ``c_type``:
    the quantized operand stands for float16, so T binds to float16 (semantics.md#mixed-expressed)."""
    a = QType("int8", 0.0625, 0, expressed="float16")
    g = Graph("add").input("a", (2,), a).input("b", (2,), elem_type=b_type)
    return g.node("Add", ["a", "b"], ["c"], name="add").output("c", (2,), elem_type=c_type).build()


def _function_body_reference(by_reference: bool) -> onnx.ModelProto:
    """A local function whose body declares its input ``a`` int8 with the scale named by reference (a main-graph
    initializer ``s``) or listed: a body has no initializers, so only the listed form is readable."""
    a = helper.make_tensor_value_info("a", TensorProto.INT8, [2])
    view = read_view(a.type.tensor_type)
    view.elem_type = 1003
    view.quantization.storage_type = TensorProto.INT8
    if by_reference:
        view.quantization.scale_tensor, view.quantization.version = "s", 2
    else:
        view.quantization.scale.append(0.5)
    write_view(a.type.tensor_type, view)
    body = helper.make_function("local", "f", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                                [helper.make_opsetid("", 21)])
    body.value_info.append(a)
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="quantize"),
         helper.make_node("f", ["xq"], ["y"], domain="local", name="call")],
        "g", [helper.make_tensor_value_info("x", FLOAT, [2])], [helper.make_tensor_value_info("y", FLOAT, [2])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)],
                              functions=[body])
    model.ir_version = 10
    set_qtype(model, "xq", QType("int8", 0.5, 0))
    return to_wire_form(model)


def _inferred_count(scales: int) -> onnx.ModelProto:
    """Conv output y_q declared without shape, per-axis on axis 1 with ``scales`` scales (4 channels)."""
    y_q = int8([0.05] * scales, [0] * scales, axis=1)
    model = conv_model(y_q=y_q)
    for vi in model.graph.value_info:
        if vi.name == "y_q":
            vi.type.tensor_type.ClearField("shape")
    for init in model.graph.initializer:  # the DQ reads y_q's parameters per-axis
        if init.name == "y_q_scale":
            init.CopyFrom(numpy_helper.from_array(np.full(scales, 0.05, np.float32), "y_q_scale"))
        if init.name == "y_q_zero_point":
            init.CopyFrom(numpy_helper.from_array(np.zeros(scales, np.int8), "y_q_zero_point"))
    return to_wire_form(model)


def _transpose(out_axis: int) -> onnx.ModelProto:
    x = int8([0.1, 0.2], [0, 0], axis=0)
    y = int8([0.1, 0.2], [0, 0], axis=out_axis)
    return mover("Transpose", (2, 3), (3, 2), x, y, perm=[1, 0])


def _slice(out_scales: Sequence[float]) -> onnx.ModelProto:
    x = int8([0.1, 0.2, 0.3, 0.4], [0] * 4, axis=1)
    y = int8(list(out_scales), [0] * len(out_scales), axis=1)
    extra = [("starts", np.array([1], np.int64)), ("ends", np.array([3], np.int64)), ("axes", np.array([1], np.int64))]
    return mover("Slice", (2, 4), (2, 2), x, y, extra_inputs=extra)


def _reshape(out_shape: Sequence[int]) -> onnx.ModelProto:
    x = int8([0.1, 0.2, 0.3, 0.4], [0] * 4, axis=1)
    y = int8([0.1, 0.2, 0.3, 0.4], [0] * 4, axis=1)
    return mover("Reshape", (1, 4, 2, 2), out_shape, x, y, extra_inputs=[("shape", np.array(out_shape, np.int64))])


def _bias_conv(bias: QType) -> Callable[[], onnx.ModelProto]:
    return lambda: conv_model(bias=bias)


def _negative_weight_conv(bias_sign: int) -> onnx.ModelProto:
    """conv_model with the weight's channels 1 and 3 given negative scales, and bias scales x_scale * |w_scale|
    times ``bias_sign`` on those channels (QT411 warns on the quantized output either way)."""
    signs = [1, -1, 1, -1]
    w_q = int8([s * w for s, w in zip(signs, W_SCALES)], [0] * 4, axis=0, schema=Schema.SYMMETRIC)
    bias = _bias([float(np.float32(X_SCALE) * np.float32(w)) * (bias_sign if s < 0 else 1)
                  for s, w in zip(signs, W_SCALES)])
    return conv_model(w_q=w_q, bias=bias)


DEAD_W_SCALE = float(np.float32(1.2e-38))  # a normal float32 weight scale whose product with X_SCALE is subnormal


def _dead_channel(steps_off: int) -> dict:
    """conv_model's arguments with channel 0's weight scale DEAD_W_SCALE and its bias scale the float32 product
    x_scale * w_scale (2.4e-40, subnormal, 1.66e-6 off the exact product relatively, 0.28 of a subnormal step) moved
    ``steps_off`` float32 subnormal steps (2^-149) up."""
    w_scales = [DEAD_W_SCALE, *W_SCALES[1:]]
    scales = [float(np.float32(X_SCALE) * np.float32(s)) for s in w_scales]
    scales[0] += steps_off * 2.0**-149
    return {"w_q": int8(w_scales, [0] * 4, axis=0, schema=Schema.SYMMETRIC), "bias": _bias(scales)}


def _bias(scales: Sequence[float] | None = None, zero_point: int = 0, storage: str = "int32",
          per_tensor: bool = False) -> QType:
    scales = list(scales) if scales is not None else [float(np.float32(X_SCALE) * np.float32(s)) for s in W_SCALES]
    if per_tensor:
        return QType(storage, scales[0], zero_point)
    return QType(storage, scales, [zero_point] * len(scales), axis=0)


def _weight_data(low: int) -> Callable[[], onnx.ModelProto]:
    data = np.random.default_rng(3).integers(low, 128, size=(4, 3, 3, 3)).astype(np.int8)
    data[0, 0, 0, 0] = low
    full_range = int8(W_SCALES, [0] * 4, axis=0, schema=Schema.SYMMETRIC)
    return lambda: conv_model(w_data=data, w_q=full_range)


NEGATIVE_W = (0.02, -0.05, 0.01, -0.03)  # NNCF-style: each channel's sign puts its largest magnitude at -128


def _negative_weight(consumer: str = "MatMul", scales: Sequence[float] = NEGATIVE_W, y_q: QType | None = None,
                     **kw: object) -> onnx.ModelProto:
    """An int8 weight w [3, 4], per-axis on axis 1, with negative scales, read by ``consumer``: MatMul (x [2, 3]
    float, weight-only as NNCF writes it; ``y_q`` quantizes its output), Transpose then Gemm (transB), or an
    operator on w itself (MaxPool, Relu) with a float output."""
    rng = np.random.default_rng(11)
    w_q = int8(f32(list(scales)), [0] * len(scales), axis=1, schema=kw.pop("schema", Schema.SYMMETRIC), **kw)
    data = rng.integers(-127, 128, size=(3, 4)).astype(np.int8)
    data[0] = -128  # the largest magnitude of every channel sits at storage_min
    g = Graph("negative_weight").init("w", data, w_q)
    if consumer == "MatMul":
        g.input("x", (2, 3)).node("MatMul", ["x", "w"], ["y_q" if y_q else "y"], name="matmul")
        if y_q:
            g.value("y_q", (2, 4), y_q).dequantize("y_q", "y", y_q)
        return g.output("y", (2, 4)).build()
    if consumer == "Transpose":
        g.input("x", (2, 3)).node("Transpose", ["w"], ["wt"], name="transpose", perm=[1, 0])
        g.value("wt", (4, 3), w_q.replace(axis=0))
        return g.node("Gemm", ["x", "wt"], ["y"], name="gemm", transB=1).output("y", (2, 4)).build()
    g.node("Unsqueeze", ["w", "axes"], ["w4"], name="unsqueeze").init("axes", np.array([0], np.int64))
    g.value("w4", (1, 3, 4), w_q.replace(axis=2))
    g.node(consumer, ["w4"], ["y"], name=consumer.lower(), **({"kernel_shape": [2]} if consumer == "MaxPool" else {}))
    shape = {"MaxPool": (1, 3, 3), "ReduceMax": (1, 1, 1)}.get(consumer, (1, 3, 4))
    return g.output("y", shape).build()


def _dequantized_constant(q: QType) -> onnx.ModelProto:
    """A constant [2, 3] of type ``q`` read by a DequantizeLinear (a weight, in the smallest graph)."""
    data = np.zeros((2, 3), q.storage_type.np_dtype)
    return Graph("constant").init("q", data, q).dequantize("q", "y", q).output("y", (2, 3)).build()


def _negative_activation(from_graph_input: bool) -> onnx.ModelProto:
    """x -> QuantizeLinear -> x_q (scale -0.05) -> DQ -> y, or x_q a graph input."""
    x_q = int8(f32(-0.05), 0)
    if from_graph_input:
        g = Graph("negative_input").input("x_q", (2, 3), x_q)
    else:
        g = Graph("negative_activation").input("x", (2, 3)).quantize("x", "x_q", x_q, (2, 3))
    return g.dequantize("x_q", "y", x_q).output("y", (2, 3)).build()


USER_SCHEMA_PROFILE = {
    "name": "symmetric-weights",
    "description": "weights must declare the symmetric schema",
    "sources": [],
    "roles": {"weight": {"schemas": ["symmetric"]}},
}
USER_OPS_PROFILE = {
    "name": "conv-only",
    "description": "runs Conv, Relu and the boundary ops on quantized tensors",
    "sources": [],
    "supported_ops": ["Conv", "Relu", "QuantizeLinear", "DequantizeLinear"],
}


def _per_axis_dequantize(opset: int) -> onnx.ModelProto:
    """A plain QDQ weight, as onnxruntime's quantizer writes it: DequantizeLinear(w, s, z, axis=0), s and z
    holding 4 values, then MatMul; at ``opset``."""
    g = (Graph("qdq").input("x", (1, 4)).init("w", np.arange(-8, 8, dtype=np.int8).reshape(4, 4))
         .init("w_scale", np.array([0.5, 0.25, 0.125, 0.0625], np.float32)).init("w_zero_point", np.zeros(4, np.int8))
         .node("DequantizeLinear", ["w", "w_scale", "w_zero_point"], ["w_f"], name="dq", axis=0)
         .node("MatMul", ["x", "w_f"], ["y"], name="mm").output("y", (1, 4)))
    return g.build(opset=opset)


def _int4_quantize(opset: int) -> onnx.ModelProto:
    """x -> QuantizeLinear(x, s, z) with an int4 zero point -> DequantizeLinear -> y, plain QDQ, at ``opset``."""
    z = helper.make_tensor("z", TensorProto.INT4, [], [0])
    g = (Graph("qdq").input("x", (1, 4)).init("s", np.array(0.5, np.float32))
         .node("QuantizeLinear", ["x", "s", "z"], ["x_q"], name="q")
         .node("DequantizeLinear", ["x_q", "s", "z"], ["y"], name="dq").output("y", (1, 4)))
    g.inits.append(z)
    return g.build(opset=opset)


def _quantize_with_inputs(count: int, dequantize_outputs: int = 1) -> onnx.ModelProto:
    """x -> QuantizeLinear(x, s, z, z, ...) with ``count`` inputs -> DequantizeLinear with ``dequantize_outputs``
    outputs -> y, plain QDQ at opset 21 (a mutated file repeated the zero point: every version takes 2 or 3 inputs
    and writes 1 output)."""
    g = (Graph("qdq").input("x", (1, 4)).init("s", np.array(0.5, np.float32)).init("z", np.array(0, np.int8))
         .node("QuantizeLinear", ["x", "s", "z", "z"][:count], ["x_q"], name="q")
         .node("DequantizeLinear", ["x_q", "s", "z"], ["y", "y2"][:dequantize_outputs], name="dq").output("y", (1, 4)))
    return g.build(opset=21)


def _e8m0_dequantize(type_scale: float, domain: str = "") -> onnx.ModelProto:
    """q (int8, typed at ``type_scale``) -> DequantizeLinear(q, s, z, output_dtype=FLOAT) with an E8M0 scale of 0.5,
    the microscaling block scale of opset 24 (``domain``: the node's; "ai.onnx" is no domain onnx.checker reads)."""
    import ml_dtypes  # noqa: PLC0415

    inits = [numpy_helper.from_array(np.array(0.5, ml_dtypes.float8_e8m0fnu), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq", domain=domain,
                            output_dtype=TensorProto.FLOAT)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("q", TensorProto.INT8, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)], ir_version=11)
    return set_qtype(model, "q", QType("int8", type_scale, 0))


def _microsoft_qdq(imported: bool) -> onnx.ModelProto:
    """x -> com.microsoft QuantizeLinear -> DequantizeLinear -> y, a QDQ file importing com.microsoft or not (the lift
    reads the com.microsoft node as the standard one, so only the file still shows it)."""
    g = (Graph("qdq").input("x", (1, 4)).init("s", np.array(0.5, np.float32)).init("z", np.array(0, np.int8))
         .node("QuantizeLinear", ["x", "s", "z"], ["x_q"], name="q", domain="com.microsoft")
         .node("DequantizeLinear", ["x_q", "s", "z"], ["y"], name="dq").output("y", (1, 4)))
    model = g.build(opset=21)
    if imported:
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


def _zero_point_twice(twice: bool) -> onnx.ModelProto:
    """x -> QuantizeLinear -> DequantizeLinear -> y, a QDQ file whose zero point is defined twice with one value (as
    onnx-neural-compressor writes a shared bias's parameters) or once."""
    model = (Graph("qdq").input("x", (1, 4)).init("s", np.array(0.5, np.float32)).init("z", np.array(0, np.int8))
             .node("QuantizeLinear", ["x", "s", "z"], ["x_q"], name="q")
             .node("DequantizeLinear", ["x_q", "s", "z"], ["y"], name="dq").output("y", (1, 4))).build(opset=21)
    if twice:
        model.graph.initializer.append(numpy_helper.from_array(np.array(0, np.int8), "z"))
    return model


def _sigmoid() -> onnx.ModelProto:
    return unary_model("Sigmoid", int8(1 / 256, -128))


def cases() -> list[Case]:
    """Every rule case: at least one that fires and one near miss per rule."""
    h = [0.0, 1.0, 2.0, 3.0]
    wf = "/graph/value_info/1/type/tensor_type/quantization"  # the weight's declaration in conv_model
    return [
        # QT101
        _fire("QT101", "zero-scale", lambda: one_tensor(_per_axis([0.5, 0.0, 2.0])), f"{QF}/scale/1", "q"),
        _fire("QT101", "nan-scale", lambda: one_tensor(qmsg(scale=[float("nan")])), f"{QF}/scale/0", "q"),
        _fire("QT101", "negative-infinite-scale", lambda: one_tensor(qmsg(scale=[float("-inf")])), f"{QF}/scale/0", "q"),
        _miss("QT101", "positive-scales", lambda: one_tensor(_per_axis([0.5, 0.001, 2.0]))),
        _miss("QT101", "negative-weight-scales", lambda: _negative_weight("MatMul")),
        _fire("QT101", "kept-pair-infinite-scale", lambda: _kept_pair(float("inf")), "/graph/node/1/input/1",
              "x_scale", "kept_q", message="scale inf"),
        _miss("QT101", "kept-pair-finite-scale", lambda: _kept_pair(0.25)),
        # QT102
        _fire("QT102", "float16-inexact", lambda: one_tensor(qmsg(scale=[0.1], expressed=TensorProto.FLOAT16)),
              f"{QF}/scale/0", "q", message="nearest is 0.0999755859375"),
        _fire("QT102", "float32-subnormal", lambda: one_tensor(qmsg(scale=[2.0**-140])), f"{QF}/scale/0", "q",
              message="subnormal"),
        _miss("QT102", "float16-exact", lambda: one_tensor(qmsg(scale=[0.0999755859375], expressed=TensorProto.FLOAT16))),
        # QT103
        _fire("QT103", "uint8-300", lambda: one_tensor(qmsg(TensorProto.UINT8, [0.1], [300])), f"{QF}/zero_point/0", "q"),
        _fire("QT103", "narrowed-range", lambda: one_tensor(qmsg(scale=[0.1], zero_point=[-128], storage_min=-127)),
              f"{QF}/zero_point/0", "q", message="[-127, 127]"),
        _fire("QT103", "implied-zero-point", lambda: one_tensor(qmsg(scale=[0.5], storage_max=-1)), f"{QF}/zero_point",
              "q", message="no zero point is written, so every zero point is 0, and zero point 0 is outside"),
        _miss("QT103", "uint8-255", lambda: one_tensor(qmsg(TensorProto.UINT8, [0.1], [255]))),
        _miss("QT103", "implied-zero-point-inside",
              lambda: one_tensor(qmsg(scale=[0.5], storage_min=0, storage_max=9))),
        # QT104
        _fire("QT104", "int64", lambda: one_tensor(qmsg(TensorProto.INT64, [0.1])), f"{QF}/storage_type", "q"),
        _fire("QT104", "absent", lambda: one_tensor(qmsg(0, [0.1])), f"{QF}/storage_type", "q"),
        _miss("QT104", "int4", lambda: one_tensor(qmsg(TensorProto.INT4, [0.1], [7]))),
        _fire("QT104", "float8e8m0", lambda: one_tensor(qmsg(TensorProto.FLOAT8E8M0, [0.1])), f"{QF}/storage_type", "q"),
        _miss("QT104", "float4e2m1", lambda: one_tensor(qmsg(TensorProto.FLOAT4E2M1, [0.1]))),
        # QT105
        _fire("QT105", "below-type", lambda: one_tensor(qmsg(scale=[0.1], storage_min=-129)), f"{QF}/storage_min", "q"),
        _fire("QT105", "empty", lambda: one_tensor(qmsg(TensorProto.UINT8, [0.1], storage_min=10, storage_max=10)),
              f"{QF}/storage_min", "q"),
        _miss("QT105", "narrow", lambda: one_tensor(qmsg(scale=[0.1], storage_min=-127, storage_max=127))),
        # QT106
        _fire("QT106", "int32-expressed", lambda: one_tensor(qmsg(scale=[1.0], expressed=TensorProto.INT32)),
              f"{QF}/expressed_type", "q"),
        _miss("QT106", "bfloat16", lambda: one_tensor(qmsg(scale=[0.0625], expressed=TensorProto.BFLOAT16))),
        # QT107
        _fire("QT107", "per-axis-short", lambda: one_tensor(_per_axis([0.1, 0.2])), f"{QF}/scale", "q",
              message="needs 3 scales, found 2"),
        _fire("QT107", "zero-point-count", lambda: one_tensor(qmsg(scale=[0.1, 0.2, 0.3], zero_point=[0, 0], axis=1)),
              f"{QF}/zero_point", "q"),
        _fire("QT107", "per-tensor-two", lambda: one_tensor(qmsg(scale=[0.1, 0.2], zero_point=[0, 0])), f"{QF}/scale",
              "q"),
        _fire("QT107", "blocked-floor-count", lambda: one_tensor(_per_axis([0.1] * 4, block_size=4), shape=(2, 10)),
              f"{QF}/scale", "q", message="needs 6 scales"),
        _miss("QT107", "per-axis-exact", lambda: one_tensor(_per_axis([0.1, 0.2, 0.3]))),
        _miss("QT107", "blocked-ragged-last-block", lambda: one_tensor(_per_axis([0.1] * 6, block_size=4), shape=(2, 10))),
        # QT108
        _fire("QT108", "past-rank", lambda: one_tensor(_per_axis([0.1, 0.2, 0.3], axis=2)), f"{QF}/axis", "q"),
        _fire("QT108", "negative", lambda: one_tensor(_per_axis([0.1, 0.2, 0.3], axis=-1)), f"{QF}/axis", "q"),
        _miss("QT108", "last-axis", lambda: one_tensor(_per_axis([0.1, 0.2, 0.3], axis=1))),
        # QT109
        _fire("QT109", "scalar-per-axis", lambda: one_tensor(_per_axis([0.1], axis=0), shape=()), f"{QF}/axis", "q"),
        _miss("QT109", "scalar-per-tensor", lambda: one_tensor(qmsg(scale=[0.1]), shape=())),
        # QT110
        _fire("QT110", "zero-block", lambda: one_tensor(_per_axis([0.1] * 3, block_size=0)), f"{QF}/block_size", "q"),
        _fire("QT110", "no-axis", lambda: one_tensor(qmsg(scale=[0.1], block_size=2)), f"{QF}/block_size", "q"),
        _miss("QT110", "block-2", lambda: one_tensor(_per_axis([0.1] * 4, block_size=2))),
        # QT111
        _fire("QT111", "symmetric-nonzero", lambda: one_tensor(qmsg(scale=[0.1, 0.1, 0.1], zero_point=[0, 3, 0], axis=1,
                                                                    schema=pb.SYMMETRIC)), f"{QF}/zero_point/1", "q"),
        _fire("QT111", "unsigned-127", lambda: one_tensor(qmsg(TensorProto.UINT8, [0.1], [127],
                                                               schema=pb.SYMMETRIC_WITH_UNSIGNED)),
              f"{QF}/zero_point/0", "q", message="128 or 0"),
        _miss("QT111", "unsigned-midpoint", lambda: one_tensor(qmsg(TensorProto.UINT8, [0.1], [128],
                                                                    schema=pb.SYMMETRIC_WITH_UNSIGNED))),
        # SYMMETRIC_WITH_UNSIGNED (Glow): the type's midpoint or storage_min; int8 -128 is uint8 0
        _fire("QT111", "int8-unsigned-minus-127", lambda: one_tensor(qmsg(TensorProto.INT8, [0.1], [-127],
                                                                          schema=pb.SYMMETRIC_WITH_UNSIGNED)),
              f"{QF}/zero_point/0", "q", message="0 or -128"),
        _fire("QT111", "int8-unsigned-per-axis", lambda: one_tensor(qmsg(
                  scale=[0.1, 0.1, 0.1], zero_point=[-128, 0, 64], axis=1, schema=pb.SYMMETRIC_WITH_UNSIGNED)),
              f"{QF}/zero_point/2", "q", message="found 64"),
        _fire("QT111", "narrowed-int8-minus-128-is-not-storage-min", lambda: one_tensor(qmsg(
                  TensorProto.INT8, [0.1], [-126], schema=pb.SYMMETRIC_WITH_UNSIGNED, storage_min=-127)),
              f"{QF}/zero_point/0", "q", message="0 or -127"),
        _fire("QT111", "narrowed-uint8-range-midpoint", lambda: one_tensor(qmsg(
                  TensorProto.UINT8, [0.1], [127], schema=pb.SYMMETRIC_WITH_UNSIGNED, storage_max=254)),
              f"{QF}/zero_point/0", "q", message="128 or 0"),
        _fire("QT111", "uint4-unsigned-7", lambda: one_tensor(qmsg(TensorProto.UINT4, [0.1], [7],
                                                                   schema=pb.SYMMETRIC_WITH_UNSIGNED)),
              f"{QF}/zero_point/0", "q", message="8 or 0"),
        _miss("QT111", "int8-unsigned-storage-min", lambda: one_tensor(qmsg(TensorProto.INT8, [0.1], [-128],
                                                                            schema=pb.SYMMETRIC_WITH_UNSIGNED))),
        _miss("QT111", "int8-unsigned-symmetric", lambda: one_tensor(qmsg(TensorProto.INT8, [0.1], [0],
                                                                          schema=pb.SYMMETRIC_WITH_UNSIGNED))),
        _miss("QT111", "uint8-unsigned-zero", lambda: one_tensor(qmsg(TensorProto.UINT8, [0.1], [0],
                                                                      schema=pb.SYMMETRIC_WITH_UNSIGNED))),
        _miss("QT111", "int8-unsigned-per-axis-both-forms", lambda: one_tensor(qmsg(
                  scale=[0.1, 0.1, 0.1], zero_point=[-128, 0, -128], axis=1, schema=pb.SYMMETRIC_WITH_UNSIGNED))),
        _miss("QT111", "narrowed-int8-storage-min", lambda: one_tensor(qmsg(
                  TensorProto.INT8, [0.1], [-127], schema=pb.SYMMETRIC_WITH_UNSIGNED, storage_min=-127))),
        _miss("QT111", "narrowed-uint8-type-midpoint", lambda: one_tensor(qmsg(
                  TensorProto.UINT8, [0.1], [128], schema=pb.SYMMETRIC_WITH_UNSIGNED, storage_max=254))),
        _miss("QT111", "int16-unsigned-storage-min", lambda: one_tensor(qmsg(TensorProto.INT16, [0.1], [-32768],
                                                                             schema=pb.SYMMETRIC_WITH_UNSIGNED))),
        _miss("QT111", "uint16-unsigned-midpoint", lambda: one_tensor(qmsg(TensorProto.UINT16, [0.1], [32768],
                                                                           schema=pb.SYMMETRIC_WITH_UNSIGNED))),
        # QT112
        _fire("QT112", "pow2-0.3", lambda: one_tensor(qmsg(scale=[0.3], schema=pb.SYMMETRIC_POW2_SCALE)),
              f"{QF}/scale/0", "q"),
        _miss("QT112", "pow2-0.125", lambda: one_tensor(qmsg(scale=[0.125], schema=pb.SYMMETRIC_POW2_SCALE))),
        # QT117
        _fire("QT117", "no-such-initializer", lambda: _referenced_weight("missing"),
              "/graph/value_info/0/type/tensor_type/quantization/scale_tensor", "w", message="names no initializer"),
        _fire("QT117", "float64-scales", lambda: _referenced_weight("float64"),
              "/graph/value_info/0/type/tensor_type/quantization/scale_tensor", "w", message="DOUBLE"),
        _fire("QT117", "blocked-dims", lambda: _referenced_weight("dims"),
              "/graph/value_info/0/type/tensor_type/quantization/scale_tensor", "w", message="dims [1, 3]"),
        _fire("QT117", "listed-and-referenced", lambda: _referenced_weight("both"),
              "/graph/value_info/0/type/tensor_type/quantization/scale_tensor", "w", message="not both"),
        _miss("QT117", "referenced-scales", lambda: _referenced_weight(), quiet=False),
        _fire("QT117", "function-body-reference", lambda: _function_body_reference(True),
              "/functions/0/value_info/0/type/tensor_type/quantization/scale_tensor", "a"),
        _miss("QT117", "function-body-listed", lambda: _function_body_reference(False), quiet=False),
        # QT118
        _fire("QT118", "graph-input", lambda: _referenced_weight("graph-input"), "/graph/initializer/1", "w_scale",
              message="graph input"),
        _fire("QT118", "read-by-mul", lambda: _referenced_weight("read-as-data"), "/graph/node/1/input/0", "w_scale",
              node="square", message="as data"),
        _fire("QT118", "two-types-one-initializer", lambda: _referenced_weight("shared"), "/graph/initializer/1",
              "w_scale", message="named by the type of 'w'"),
        _miss("QT118", "read-by-its-dequantize", lambda: _referenced_weight("dequantize"), quiet=False),
        # QT113
        _fire("QT113", "dynamic-with-zero-point", lambda: one_tensor(qmsg(TensorProto.UINT8, [], [128])),
              f"{QF}/zero_point", "q"),
        _miss("QT113", "dynamic", lambda: one_tensor(qmsg(TensorProto.UINT8, []))),
        # QT125
        _fire("QT125", "static-parameters", lambda: _dynamic_quantize_linear(QType("uint8", 0.5, 3)),
              "/graph/node/0/output/0", "x_q", "dql", message="static parameters"),
        _fire("QT125", "symmetric", lambda: _dynamic_quantize_linear(QType("uint8", schema="symmetric")),
              "/graph/node/0/output/0", "x_q", "dql", message="SYMMETRIC"),
        _fire("QT125", "narrowed-range", lambda: _dynamic_quantize_linear(QType("uint8", storage_max=254)),
              "/graph/node/0/output/0", "x_q", "dql", message="[0, 254]"),
        _fire("QT125", "per-axis", lambda: _dynamic_quantize_linear(QType("uint8", axis=1)),
              "/graph/node/0/output/0", "x_q", "dql", message="one scale for the whole tensor"),
        _miss("QT125", "dynamic-uint8-asymmetric", lambda: _dynamic_quantize_linear(QType("uint8"))),
        # QT126
        _fire("QT126", "dynamic-weight", lambda: _dynamic_quantize_linear(QType("uint8"), w_q=QType("int8")),
              "/graph/value_info/1/type/tensor_type/quantization", "w", message="constant 'w'"),
        _miss("QT126", "static-weight", lambda: _dynamic_quantize_linear(QType("uint8"), w_q=QType("int8", 0.5, 0))),
        _miss("QT126", "dynamic-computed", lambda: Graph().input("x", (2,)).node("Relu", ["x"], ["r"], name="relu")
              .value("r", (2,), QType("uint8")).node("Identity", ["r"], ["y"], name="identity").output("y", (2,), QType("uint8"))
              .build()),
        # QT119
        _fire("QT119", "int8-marker", lambda: one_tensor(qmsg(scale=[0.1]), marker=TensorProto.INT8), f"{IN}/elem_type",
              "q"),
        _fire("QT119", "version-1-undefined-marker", lambda: one_tensor(qmsg(scale=[0.1]), marker=TensorProto.UNDEFINED),
              f"{IN}/elem_type", "q", message="version-1 marker"),
        _miss("QT119", "int8-marked-1003", lambda: one_tensor(qmsg(scale=[0.1]))),
        # QT120: m = max |q - zero_point| against the expressed type's significand (float16 11 bits, bfloat16 8)
        _fire("QT120", "int16-float16", lambda: one_tensor(_expressed("int16", "float16")), f"{QF}/scale/0", "q",
              message="reaches 32768 > 2^10"),
        _fire("QT120", "uint8-bfloat16-zero-point-0", lambda: one_tensor(_expressed("uint8", "bfloat16")),
              f"{QF}/scale/0", "q", message="reaches 255 > 2^7"),
        _fire("QT120", "int8-bfloat16-per-axis-minus-128",
              lambda: one_tensor(_expressed("int8", "bfloat16", [0.375] * 3, [0, -128, 0], axis=1)), f"{QF}/scale/1",
              "q", message="zero_point[1] = -128"),
        _fire("QT120", "int16-float16-pow2-scale", lambda: one_tensor(_expressed("int16", "float16", 2.0**-7)),
              f"{QF}/scale/0", "q", message="> 2^11 (the limit for a power-of-two scale)"),
        _fire("QT120", "int8-float16-overflow", lambda: one_tensor(_expressed("int8", "float16", 768.0)),
              f"{QF}/scale/0", "q", message="becomes inf"),
        _fire("QT120", "dynamic-int16-float16", lambda: one_tensor(QType("int16", expressed="float16")),
              f"{QF}/expressed_type", "q", message="can reach 65535"),
        _miss("QT120", "int8-float16", lambda: one_tensor(_expressed("int8", "float16"))),
        _miss("QT120", "int8-bfloat16-symmetric",
              lambda: one_tensor(_expressed("int8", "bfloat16", schema=Schema.SYMMETRIC))),
        _miss("QT120", "int16-float32", lambda: one_tensor(_expressed("int16", "float32"))),
        _miss("QT120", "uint8-bfloat16-zero-point-128",
              lambda: one_tensor(_expressed("uint8", "bfloat16", 0.375, 128))),
        _miss("QT120", "uint8-bfloat16-pow2-scale", lambda: one_tensor(_expressed("uint8", "bfloat16", 0.0625))),
        _miss("QT120", "int8-float16-largest-finite", lambda: one_tensor(_expressed("int8", "float16", 511.75))),
        _miss("QT120", "int32-bfloat16", lambda: one_tensor(_expressed("int32", "bfloat16"))),
        _miss("QT120", "dynamic-int8-bfloat16-symmetric",
              lambda: one_tensor(QType("int8", expressed="bfloat16", schema=Schema.SYMMETRIC))),
        _miss("QT120", "float8e5m2-float16", lambda: one_tensor(qmsg(TensorProto.FLOAT8E5M2, [1.0],
                                                                      expressed=TensorProto.FLOAT16))),
        # QT121-QT123: float storage (float8, float4e2m1)
        _fire("QT121", "float8-zero-point-1", lambda: one_tensor(qmsg(TensorProto.FLOAT8E4M3FN, [0.1], [1])), f"{QF}/zero_point/0", "q",
              message="zero point is 0"),
        _miss("QT121", "float8-zero-point-0", lambda: one_tensor(qmsg(TensorProto.FLOAT8E4M3FN, [0.1], [0]))),
        _miss("QT121", "qdq-float8", lambda: _float8_qdq()),
        _fire("QT122", "float8-range-240", lambda: one_tensor(qmsg(TensorProto.FLOAT8E4M3FN, [0.1], storage_min=-240, storage_max=240)),
              f"{QF}/storage_min", "q", message="takes no storage range"),
        _fire("QT122", "float8-max-only", lambda: one_tensor(qmsg(TensorProto.FLOAT8E4M3FN, [0.1], storage_max=240)),
              f"{QF}/storage_max", "q", message="takes no storage range"),
        _miss("QT122", "float8-own-limits", lambda: one_tensor(qmsg(TensorProto.FLOAT8E4M3FN, [0.1], storage_min=-448, storage_max=448))),
        _fire("QT123", "qdq-float8-saturate-0", lambda: _float8_qdq(saturate=0), "/graph/node/1", node="quantize",
              message="become NaN or infinity"),
        _fire("QT123", "typed-float8-saturate-0", lambda: _float8_quantize("typed"), "/graph/node/0", node="quantize",
              message="(±448)"),
        _fire("QT123", "output-dtype-float8-saturate-0", lambda: _float8_quantize("output_dtype"), "/graph/node/0",
              node="quantize", message="(±448)"),
        _miss("QT123", "qdq-float8-saturate-1", lambda: _float8_qdq(saturate=1)),
        _fire("QT124", "float8e5m2-weight-nan", lambda: float8_matmul_model(4, 1.5, first=float("nan")),
              "/graph/initializer/0", "w", message="the first (nan) at flat index 0"),
        _fire("QT124", "float8e5m2-weight-inf", lambda: float8_matmul_model(4, 1.5, first=float("-inf")),
              "/graph/initializer/0", "w", message="NaN or infinite"),
        _miss("QT124", "float8e5m2-weight-largest", lambda: float8_matmul_model(4, 1.5, first=57344)),
        # QT115
        _fire("QT115", "schema-9", lambda: one_tensor(qmsg(scale=[0.1], extra=b"\x38\x09")), f"{QF}/schema", "q",
              message="value 9 is not defined"),
        _fire("QT115", "field-30", lambda: one_tensor(qmsg(scale=[0.1], extra=b"\xf0\x01\x01")), QF, "q",
              message="field 30"),
        _fire("QT115", "version-4", lambda: one_tensor(qmsg(scale=[0.1], extra=b"\x60\x04")), f"{QF}/version", "q",
              message="extension version 4"),
        # a field of a later version than the type declares: scale_tensor (version 2) without version
        _fire("QT115", "scale-tensor-without-version", lambda: one_tensor(qmsg(scale=[0.1], extra=b"\x52\x01s")),
              f"{QF}/scale_tensor", "q", message="belongs to extension version 2"),
        _miss("QT115", "schema-1", lambda: one_tensor(qmsg(scale=[0.1], schema=pb.SYMMETRIC))),
        # QT128
        _fire("QT128", "uint8-unsigned-form", lambda: one_tensor(qmsg(
            TensorProto.UINT8, [0.1, -0.1, 0.1], [128, 0, 0], axis=1, schema=pb.SYMMETRIC_WITH_UNSIGNED)),
            f"{QF}/scale/1", "q", message="non-negative reals only"),
        _miss("QT128", "uint8-symmetric-form", lambda: _dequantized_constant(QType(
            "uint8", [0.125, -0.125, 0.125], [128, 128, 0], axis=1, schema=Schema.SYMMETRIC_WITH_UNSIGNED))),
        # QT201
        _fire("QT201", "inverted", lambda: one_tensor(int8(), statistics=stats(min=2.5, max=-2.4)), f"{SF}/min", "q"),
        _fire("QT201", "nan-max", lambda: one_tensor(int8(), statistics=stats(min=0.0, max=float("nan"))), f"{SF}/max",
              "q"),
        _miss("QT201", "equal", lambda: one_tensor(int8(), statistics=stats(min=0.5, max=0.5))),
        # QT202
        _fire("QT202", "mean-above", lambda: one_tensor(int8(), statistics=stats(min=0.0, max=1.0, mean=1.5)),
              f"{SF}/mean", "q"),
        _miss("QT202", "mean-inside", lambda: one_tensor(int8(), statistics=stats(min=0.0, max=1.0, mean=0.4))),
        # QT203
        _fire("QT203", "std-too-large", lambda: one_tensor(int8(), statistics=stats(min=0.0, max=1.0, std=0.9)),
              f"{SF}/std", "q", message="(max - min) / 2 = 0.5"),
        _fire("QT203", "std-negative", lambda: one_tensor(int8(), statistics=stats(std=-0.1)), f"{SF}/std", "q"),
        _miss("QT203", "std-at-bound", lambda: one_tensor(int8(), statistics=stats(min=0.0, max=1.0, std=0.5))),
        # QT204
        _fire("QT204", "negative", lambda: one_tensor(int8(), statistics=stats(count=-5)), f"{SF}/count", "q"),
        _miss("QT204", "zero", lambda: one_tensor(int8(), statistics=stats(count=0))),
        # QT205
        _fire("QT205", "repeated-edge", lambda: one_tensor(int8(), statistics=stats(
            histogram_edges=(0.0, 1.0, 1.0, 2.0), histogram_counts=(3, 4, 5))), f"{SF}/histogram_edges/2", "q"),
        _fire("QT205", "count-per-edge", lambda: one_tensor(int8(), statistics=stats(
            histogram_edges=h, histogram_counts=(1, 2, 3, 4))), f"{SF}/histogram_counts", "q"),
        _fire("QT205", "negative-count", lambda: one_tensor(int8(), statistics=stats(
            histogram_edges=h, histogram_counts=(1, -2, 3))), f"{SF}/histogram_counts/1", "q"),
        _miss("QT205", "well-formed", lambda: one_tensor(int8(), statistics=stats(
            histogram_edges=h, histogram_counts=(1, 2, 3)))),
        # QT206
        _fire("QT206", "sum-short", lambda: one_tensor(int8(), statistics=stats(
            count=7, histogram_edges=h, histogram_counts=(1, 2, 3))), f"{SF}/histogram_counts", "q"),
        _miss("QT206", "sum-equal", lambda: one_tensor(int8(), statistics=stats(
            count=6, histogram_edges=h, histogram_counts=(1, 2, 3)))),
        # QT207
        _fire("QT207", "two-of-three", lambda: one_tensor(int8(), statistics=stats(
            axis=1, per_axis=(Statistics(min=0.0, max=1.0),) * 2)), f"{IN}/statistics/per_axis", "q"),
        _fire("QT207", "no-axis", lambda: one_tensor(int8(), statistics=stats(
            per_axis=(Statistics(min=0.0, max=1.0),) * 3)), f"{IN}/statistics/per_axis", "q"),
        _miss("QT207", "three-of-three", lambda: one_tensor(int8(), statistics=stats(
            axis=1, per_axis=(Statistics(min=0.0, max=1.0),) * 3))),
        # QT208
        _fire("QT208", "clips", lambda: one_tensor(int8(0.01, 0), statistics=stats(
            min=-4.0, max=4.0, histogram_edges=(-4.0, -2.0, 0.0, 2.0, 4.0), histogram_counts=(10, 30, 30, 30))),
              f"{IN}/statistics/tensor", "q", message="61.60% of 100"),
        _fire("QT208", "per-axis-slice", lambda: one_tensor(int8([0.01, 0.02, 0.04], [0, 0, 0], axis=1), statistics=stats(
            axis=1, per_axis=(Statistics(min=-1.0, max=1.0), Statistics(min=-3.0, max=1.0),
                              Statistics(min=-1.0, max=1.0)))), f"{IN}/statistics/per_axis/1", "q"),
        _miss("QT208", "half-step-rounds-in", lambda: one_tensor(int8(0.02, 0), statistics=stats(min=-2.565, max=2.549))),
        _miss("QT208", "only-relu-reads-the-clipped-negatives", lambda: _relu_read(stats(min=-4.0, max=2.5))),
        _fire("QT208", "relu-reads-it-but-the-top-clips", lambda: _relu_read(stats(min=-4.0, max=6.0)),
              f"{IN}/statistics/tensor", "q"),
        # QT301
        _fire("QT301", "value-info-differs", lambda: Graph().input("q", (2,), int8(0.5, 0)).value("q", (2,), int8(0.25, 0))
              .node("Identity", ["q"], ["y"], name="identity").output("y", (2,)).build(), "/graph/value_info/0", "q"),
        _fire("QT301", "plain-declaration", lambda: Graph().input("q", (2,), int8(0.5, 0))
              .value("q", (2,), elem_type=TensorProto.INT8).node("Identity", ["q"], ["y"], name="identity")
              .output("y", (2,)).build(), "/graph/value_info/0", "q"),
        _fire("QT301", "subgraph-outer-reference", lambda: with_subgraph(int8(0.25, 0), int8(0.5, 0)),
              "/graph/node/0/attribute/1/g/value_info/0", "q"),
        _miss("QT301", "statistics-differ", lambda: Graph().input("q", (2,), int8(0.5, 0), statistics=stats(min=0.0))
              .value("q", (2,), int8(0.5, 0), statistics=stats(min=-1.0)).node("Identity", ["q"], ["y"], name="identity")
              .output("y", (2,)).build()),
        _miss("QT301", "subgraph-same", lambda: with_subgraph(int8(0.5, 0), int8(0.5, 0))),
        # QT302
        _fire("QT302", "float-data", lambda: Graph().init("w", np.ones((2,), np.float32), int8(0.5, 0))
              .node("Identity", ["w"], ["y"], name="identity").output("y", (2,)).build(), "/graph/initializer/0", "w"),
        _miss("QT302", "int8-data", lambda: conv_model()),
        # QT303
        _fire("QT303", "minus-128-narrow", lambda: conv_model(w_data=np.full((4, 3, 3, 3), -128, np.int8),
                                                              w_q=int8(W_SCALES, [0] * 4, axis=0, storage_min=-127)),
              "/graph/initializer/2", "w", message="first is -128"),
        _miss("QT303", "minus-127-narrow", lambda: conv_model(w_data=np.full((4, 3, 3, 3), -127, np.int8),
                                                              w_q=int8(W_SCALES, [0] * 4, axis=0, storage_min=-127))),
        # QT304
        _fire("QT304", "transposed-declaration", lambda: Graph().init("w", np.ones((4, 3), np.int8), None)
              .value("w", (3, 4), int8(0.5, 0)).node("Identity", ["w"], ["y"], name="identity").output("y", (4, 3))
              .build(), "/graph/initializer/0", "w"),
        _miss("QT304", "same-shape", lambda: conv_model()),
        # QT305
        _fire("QT305", "plain-int8-into-conv", lambda: _type_constraint(False), "/graph/node/1/input/1", "w", "conv",
              message="accepts"),
        _fire("QT305", "mixed-expressed", lambda: _mixed_expressed("float32"), "/graph/node/0/input/1", "b", "add",
              message="already bound to float16"),
        _miss("QT305", "declared-weight", lambda: _type_constraint(True)),
        _miss("QT305", "same-expressed", lambda: _mixed_expressed("float16")),
        _fire("QT305", "quantized-with-float32", lambda: _quantized_with_float(TensorProto.FLOAT, TensorProto.FLOAT16),
              "/graph/node/0/input/1", "b", "add", message="already bound to float16"),
        _fire("QT305", "float-output-not-expressed", lambda: _quantized_with_float(TensorProto.FLOAT16, TensorProto.FLOAT),
              "/graph/node/0/output/0", "c", "add", message="already bound to float16"),
        _miss("QT305", "float-output-expressed", lambda: _quantized_with_float(TensorProto.FLOAT16, TensorProto.FLOAT16)),
        # QT306
        _fire("QT306", "three-of-four-channels", lambda: _inferred_count(3),
              "/graph/value_info/3/type/tensor_type/quantization/scale", "y_q", message="[1, 4, 8, 8]"),
        _miss("QT306", "four-channels", lambda: _inferred_count(4)),
        # QT307
        _fire("QT307", "scale-differs", lambda: _qdq(node_scale=0.05), "/graph/node/0/input/1", "s", "quantize"),
        _fire("QT307", "zero-point-differs", lambda: _qdq(node_zp=3), "/graph/node/0/input/2", "z", "quantize"),
        _fire("QT307", "per-axis-type-scalar-scale", lambda: _qdq(type_q=int8([F32] * 4, [0] * 4, axis=1)),
              "/graph/node/0/input/1", "s", "quantize", message="scalar"),
        _miss("QT307", "equal", lambda: _qdq()),
        # an E8M0 scale states a power of two exactly: 0.5 is not a type's 0.375, though E8M0 rounds 0.375 to 0.5
        _fire("QT307", "e8m0-scale-rounds-the-type-s", lambda: _e8m0_dequantize(0.375), "/graph/node/0/input/1", "s",
              "dq", message="scale 0.5 differs from the type of 'q'"),
        _miss("QT307", "e8m0-scale-the-type-s-power-of-two", lambda: _e8m0_dequantize(0.5)),
        _miss("QT307", "conv-model", lambda: conv_model()),
        # QT308
        _fire("QT308", "scale-is-input", lambda: _qdq(scale_input=True), "/graph/node/0/input/1", "s", "quantize"),
        _miss("QT308", "scale-is-initializer", lambda: _qdq()),
        # QT309
        _fire("QT309", "relu-undeclared", lambda: _undeclared_output(False), "/graph/node/0/output/0", "r", "relu"),
        _miss("QT309", "relu-declared", lambda: _undeclared_output(True)),
        _miss("QT309", "weight-only-matmul", lambda: _weight_only("MatMul")),
        _miss("QT309", "weight-only-gather", lambda: _weight_only("Gather")),
        # QT310
        _fire("QT310", "bogus-attribute", _bogus_attribute, "/graph/node/0", node="identity", message="bogus"),
        _miss("QT310", "plain", lambda: one_tensor(int8())),
        # a boundary node keeps its domain in the float view: "ai.onnx", which onnx.checker reads as no domain
        _fire("QT310", "boundary-node-of-domain-ai-onnx", lambda: _e8m0_dequantize(0.5, "ai.onnx"), "/graph/node/0",
              node="dq", message="No opset import for domain 'ai.onnx'"),
        _miss("QT310", "boundary-node-of-the-default-domain", lambda: _e8m0_dequantize(0.5)),
        # the lift keeps one of two identical copies: the file, not its lifted form, is what onnx.checker refuses
        _fire("QT310", "qdq-initializer-defined-twice-with-one-value", lambda: _zero_point_twice(True),
              "/graph/initializer/2", tensor="z", message="is defined 2 times"),
        _miss("QT310", "qdq-initializer-defined-once", lambda: _zero_point_twice(False)),

        # QT311
        _fire("QT311", "plain-int8-initializer", lambda: _plain_constants("initializer"), "/graph/initializer/0", "w",
              message="quantized constant 'w'"),
        _fire("QT311", "plain-boundary-zero-point", lambda: _plain_constants("zero point"), "/graph/node/0/input/2",
              "z", "quantize", message="zero point 'z'"),
        _fire("QT311", "quantize-without-zero-point", lambda: _plain_constants("no zero point"), "/graph/node/0",
              node="quantize", message="without a zero-point input"),
        _miss("QT311", "marked-initializer", lambda: _cast_of_quantized_constant(False), quiet=False),
        _miss("QT311", "marked-boundary-zero-point", lambda: _plain_constants("")),
        # QT116
        _fire("QT116", "sequence-of-quantized-tensors", lambda: sequence_model(int8(0.5, 0)),
              "/graph/input/0/type/sequence_type/elem_type/tensor_type", "seq",
              message="a quantized type inside the sequence 'seq'"),
        _miss("QT116", "sequence-of-plain-tensors", lambda: sequence_model(None)),
        # QT312
        _fire("QT312", "if-branch-other-scale", lambda: if_model(int8(0.4, 0), int8(0.2, 0)),
              "/graph/node/0/output/0", "r", "branch", message="then_branch output 0 -> output 0"),
        _fire("QT312", "if-branch-plain", lambda: if_model(None, int8(0.2, 0)), "/graph/node/0/output/0", "r", "branch",
              message="'t' is not quantized"),
        _fire("QT312", "loop-carried-other-scale", lambda: loop_model(int8(0.5, 0), int8(0.1, 0)),
              "/graph/node/0/input/2", "x_q", "repeat", message="carried value 0: input 2 -> body input 2"),
        _fire("QT312", "if-else-branch-other-scale", lambda: if_model(int8(0.2, 0), int8(0.2, 0), int8(0.4, 0)),
              "/graph/node/0/output/0", "r", "branch", message="else_branch output 0 -> output 0"),
        _fire("QT312", "loop-next-iteration-other-scale", lambda: loop_model(int8(0.1, 0), int8(0.1, 0), int8(0.5, 0)),
              "/graph/node/0", node="repeat", message="body output 1 -> the next iteration's body input 2"),
        _fire("QT312", "loop-scan-output-other-scale",
              lambda: loop_model(int8(0.1, 0), int8(0.1, 0), scan_out=int8(0.3, 0)), "/graph/node/0/output/1", "rs",
              "repeat", message="body scan output 0 -> output 1"),
        _fire("QT312", "scan-state-other-scale",
              lambda: scan_model(int8(0.5, 0), int8(0.1, 0), int8(0.1, 0), int8(0.1, 0)), "/graph/node/0/input/0",
              "s_q", "scan", message="carried value 0: input 0 -> body input 0"),
        _fire("QT312", "scan-per-axis-not-moved",
              lambda: scan_model(int8(0.1, 0), int8(0.1, 0), int8([0.1, 0.2], [0, 0], axis=0), int8(0.1, 0)),
              "/graph/node/0/output/1", "ys", "scan", message="axis=1> (the axis moved by the stacking along axis 0)"),
        _miss("QT312", "if-branch-same-type", lambda: if_model(int8(0.2, 0), int8(0.2, 0))),
        # QT314
        _fire("QT314", "call-operand-other-scale", lambda: function_call_model(int8(0.1, 0), int8(0.5, 0), int8(0.1, 0)),
              "/graph/node/0/input/0", "a_q", "call", message="the body of local:QAdd declares 'a'"),
        _fire("QT314", "call-result-other-scale", lambda: function_call_model(int8(0.1, 0), int8(0.1, 0), int8(0.3, 0)),
              "/graph/node/0/output/0", "c_q", "call", message="declares 'c'"),
        _miss("QT314", "call-same-types", lambda: function_call_model(int8(0.1, 0), int8(0.1, 0))),
        _miss("QT314", "call-untyped-body", lambda: function_call_model(int8(0.1, 0), None)),
        # QT313
        _fire("QT313", "matmul-nbits-without-import", lambda: matmul_nbits_model(False), "/graph/node/0", node="mm",
              message="'com.microsoft'"),
        _miss("QT313", "matmul-nbits-with-import", lambda: matmul_nbits_model(True)),
        # the lift reads a com.microsoft QuantizeLinear as the standard one: the import was never looked for
        _fire("QT313", "com-microsoft-quantize-without-import", lambda: _microsoft_qdq(False), "/graph/node/0",
              node="q", message="uses domain 'com.microsoft', which is not in opset_import"),
        _miss("QT313", "com-microsoft-quantize-with-import", lambda: _microsoft_qdq(True)),
        _miss("QT312", "loop-carried-same-type", lambda: loop_model(int8(0.1, 0), int8(0.1, 0))),
        _miss("QT312", "loop-scan-output-same-type", lambda: loop_model(int8(0.1, 0), int8(0.1, 0), scan_out=int8(0.1, 0))),
        _miss("QT312", "scan-per-axis-moved-by-stacking",
              lambda: scan_model(int8(0.1, 0), int8(0.1, 0), int8([0.1, 0.2], [0, 0], axis=0),
                                 int8([0.1, 0.2], [0, 0], axis=1))),
        # QT401
        _fire("QT401", "reshape-new-scale", lambda: mover("Reshape", (1, 4, 2, 2), (1, 16), int8(F32, 0), int8(0.04, 0),
                                                         extra_inputs=[("shape", np.array([1, 16], np.int64))]),
              "/graph/node/0/output/0", "y_q", "reshape"),
        _fire("QT401", "transpose-axis-stays", lambda: _transpose(0), "/graph/node/0/output/0", "y_q", "transpose",
              message="axis=1"),
        _fire("QT401", "reshape-merges-axis", lambda: _reshape((1, 16)), "/graph/node/0/output/0", "y_q", "reshape",
              message="splits or merges axis 1"),
        _fire("QT401", "slice-wrong-scales", lambda: _slice([0.1, 0.2]), "/graph/node/0/output/0", "y_q", "slice"),
        _fire("QT401", "concat-scales", lambda: concat_model([0.1, 0.3], 0.3), "/graph/node/0/input/0", "in0",
              "concat"),
        _miss("QT401", "reshape-same", lambda: mover("Reshape", (1, 4, 2, 2), (1, 16), int8(F32, 0), int8(F32, 0),
                                                     extra_inputs=[("shape", np.array([1, 16], np.int64))])),
        _miss("QT401", "transpose-axis-moves", lambda: _transpose(1)),
        _miss("QT401", "reshape-keeps-axis", lambda: _reshape((1, 4, 4))),
        _miss("QT401", "slice-selected-scales", lambda: _slice([0.2, 0.3])),
        _miss("QT401", "concat-shared", lambda: concat_model([0.3, 0.3], 0.3)),
        # QT402
        _fire("QT402", "conv-input-channels", lambda: conv_model(w_axis=1, bias=None), "/graph/node/1/input/1", "w",
              "conv", message="axis 0"),
        _miss("QT402", "conv-output-channels", lambda: conv_model()),
        # QT403
        _fire("QT403", "int8-bias", lambda: conv_model(bias=_bias(storage="int8", scales=[0.5] * 4)),
              "/graph/node/1/input/2", "b", "conv"),
        _miss("QT403", "int32-bias", lambda: conv_model()),
        # an int8 bias whose every stored value is its zero point adds 0 (AMD Quark's zero biases): the exemption
        _miss("QT403", "int8-bias-all-zero", lambda: conv_model(bias=_bias(storage="int8", scales=[0.5] * 4),
                                                               b_data=np.zeros(4))),
        # QT404
        _fire("QT404", "bias-zero-point-5", lambda: conv_model(bias=_bias(zero_point=5)), "/graph/node/1/input/2", "b",
              "conv"),
        _miss("QT404", "bias-zero-point-0", lambda: conv_model(bias=_bias())),
        # QT405
        _fire("QT405", "bias-scale-off", lambda: conv_model(bias=_bias(
            [X_SCALE * W_SCALES[0], X_SCALE * W_SCALES[1] * 1.5, X_SCALE * W_SCALES[2], X_SCALE * W_SCALES[3]])),
              "/graph/node/1/input/2", "b", "conv", message="scale[1]"),
        # a negative weight scale needs a negative bias scale: x_scale * w_scale[c] keeps its sign
        _fire("QT405", "negative-weight-positive-bias", lambda: _negative_weight_conv(bias_sign=1),
              "/graph/node/1/input/2", "b", "conv", message="scale[1]"),
        _miss("QT405", "float32-product", lambda: conv_model(bias=_bias())),
        _miss("QT405", "negative-weight-negative-bias", lambda: _negative_weight_conv(bias_sign=-1), quiet=False),
        _miss("QT405", "double-product", lambda: conv_model(bias=_bias([X_SCALE * s for s in W_SCALES])),
              quiet=False),  # the double product is not a float32 value: QT102 warns
        # a constant bias whose every stored value is its zero point adds 0 at any scale (AMD Quark's scale 1)
        _miss("QT405", "zero-bias-scale-1", lambda: conv_model(bias=_bias([1.0] * 4), b_data=np.zeros(4))),
        _fire("QT405", "one-nonzero-bias-scale-1", lambda: conv_model(bias=_bias([1.0] * 4), b_data=[0, 0, 1, 0]),
              "/graph/node/1/input/2", "b", "conv", message="scale[0]"),
        # a dead channel's weight scale puts x_scale * w_scale below 2^-126: the float32 product there is
        # 1.66e-6 off relatively, within one float32 subnormal step (QT102 warns on the subnormal bias scale)
        _miss("QT405", "subnormal-float32-product", lambda: conv_model(**_dead_channel(0)), quiet=False),
        _fire("QT405", "subnormal-product-three-steps-off", lambda: conv_model(**_dead_channel(3)),
              "/graph/node/1/input/2", "b", "conv", message="scale[0]"),
        # QT406
        _fire("QT406", "per-tensor-bias", lambda: conv_model(bias=_bias(per_tensor=True)), "/graph/node/1/input/2", "b",
              "conv"),
        _miss("QT406", "per-axis-bias", lambda: conv_model(bias=_bias())),
        # QT407
        _fire("QT407", "k-70000", lambda: matmul_model(70000), "/graph/node/0", node="matmul",
              message=f"= {70000 * 255 * 127}"),
        _fire("QT407", "narrow-accumulator", lambda: matmul_model(4096), "/graph/node/0", node="matmul",
              profile={"name": "acc24", "description": "24-bit accumulator", "sources": [], "accumulator_bits": 24}),
        _miss("QT407", "k-4096", lambda: matmul_model(4096)),
        _miss("QT407", "one-large-weight-per-column-k-70000", lambda: one_large_weight_model(70000)),
        _miss("QT407", "uint16-activations-k-4096", lambda: matmul16_model(4096)),
        _fire("QT407", "uint16-activations-32-bit-wide-kernels", lambda: matmul16_model(4096), "/graph/node/0",
              node="matmul", profile={"name": "acc32", "description": "16-bit kernels accumulating in 32 bits",
                                      "sources": [], "wide_accumulator_bits": 32},
              message=f"= {65535 * 4096 * 127} reaches 2^31"),
        _miss("QT407", "float8e5m2-k-4096", lambda: float8_matmul_model(4096)),
        # a float bias counts in steps of x_scale * w_scale (its float value cast to int64 read 1e38 as -2^63)
        _fire("QT407", "float-bias-1e38", lambda: float_bias_conv([1e38, 0, 0, 0]), "/graph/node/1", node="conv",
              message="+ max|bias| 1000000"),  # float32(1e38) / (x_scale * 0.005) = 1.0000000127e42
        # near the limit, on the channel whose step is the smallest (x_scale * 0.005 = 1e-4): 2.15e5 is about
        # 2,150,000,000 steps and reaches 2^31 with the products; 2.145e5, about 2,145,000,000, does not (read as the
        # integers 215000 and 214500, neither fired)
        _fire("QT407", "float-bias-215000", lambda: float_bias_conv([0, 0, 0, 2.15e5]), "/graph/node/1", node="conv",
              message="reaches 2^31"),
        _miss("QT407", "float-bias-214500", lambda: float_bias_conv([0, -1.0, 0.5, 2.145e5])),
        # QT408
        _fire("QT408", "output-scale-1e12", lambda: conv_model(y_q=int8(1e12, 0)), "/graph/node/1", node="conv",
              message="2^-32 <= M < 2^29"),
        _fire("QT408", "output-scale-tiny", lambda: conv_model(y_q=int8(1e-20, 0)), "/graph/node/1", node="conv"),
        _miss("QT408", "output-scale-0.05", lambda: conv_model(y_q=int8(0.05, 0))),
        _miss("QT408", "negative-weight-scales", lambda: _negative_weight("MatMul", y_q=int8(0.05, 0)), quiet=False),
        # QT409
        _fire("QT409", "maxpool", lambda: _negative_weight("MaxPool"), "/graph/node/1/input/0", "w4", "maxpool",
              message="MaxPool is not indifferent"),
        _fire("QT409", "relu", lambda: _negative_weight("Relu"), "/graph/node/1/input/0", "w4", "relu"),
        _fire("QT409", "reducemax", lambda: _negative_weight("ReduceMax"), "/graph/node/1/input/0", "w4", "reducemax",
              message="ReduceMax is not indifferent"),
        _miss("QT409", "matmul", lambda: _negative_weight("MatMul")),
        _miss("QT409", "transpose-gemm", lambda: _negative_weight("Transpose")),
        # QT410
        _fire("QT410", "graph-input", lambda: _negative_activation(True), f"{QF}/scale/0", "x_q",
              message="fed to the graph at run time"),
        _fire("QT410", "quantized-activation", lambda: _negative_activation(False),
              "/graph/value_info/0/type/tensor_type/quantization/scale/0", "x_q",
              message="computed by QuantizeLinear"),
        _fire("QT410", "per-axis-input-first-negative", lambda: one_tensor(_per_axis([0.5, -0.25, -2.0])),
              f"{QF}/scale/1", "q", message="scale[1] = -0.25 (2 of 3 negative)"),
        _miss("QT410", "weight-and-its-transpose", lambda: _negative_weight("Transpose")),
        # QT411
        _fire("QT411", "quantized-output", lambda: _negative_weight("MatMul", y_q=int8(0.05, 0)), "/graph/node/0/input/1",
              "w", "matmul", message="requantization multiplier"),
        _miss("QT411", "float-output", lambda: _negative_weight("MatMul")),
        # QT412
        _fire("QT412", "per-axis-dequantize-at-opset-11", lambda: _per_axis_dequantize(11), "/graph/node/0/attribute/0",
              node="dq", message="per-axis parameters need DequantizeLinear-13 (opset 13)"),
        _fire("QT412", "int4-quantize-at-opset-19", lambda: _int4_quantize(19), "/graph/node/0/input/2", "z", "q",
              message="needs QuantizeLinear-21 (opset 21)"),
        _miss("QT412", "per-axis-dequantize-at-opset-13", lambda: _per_axis_dequantize(13)),
        _miss("QT412", "int4-quantize-at-opset-21", lambda: _int4_quantize(21)),
        _fire("QT412", "quantize-with-four-inputs", lambda: _quantize_with_inputs(4), "/graph/node/0", node="q",
              message="QuantizeLinear-21 (the version at opset 21) takes 2 to 3 input(s); the node has 4"),
        _miss("QT412", "quantize-with-three-inputs", lambda: _quantize_with_inputs(3)),
        _fire("QT412", "quantize-with-one-input", lambda: _quantize_with_inputs(1), "/graph/node/0", node="q",
              message="takes 2 to 3 input(s); the node has 1"),
        _fire("QT412", "dequantize-with-two-outputs", lambda: _quantize_with_inputs(3, 2), "/graph/node/1", node="dq",
              message="DequantizeLinear-21 (the version at opset 21) takes 1 output(s); the node has 2"),
        # QT413
        _fire("QT413", "scan-2^62-inputs", lambda: _absurd_scan(2**62), "/graph/node/0/attribute/1", node="scan",
              message="num_scan_inputs = 4611686018427387904, but the node has 2 input(s)"),
        _fire("QT413", "loop-2^40-iterations-no-condition", lambda: _long_loop(2**40), "/graph/node/0/input/0", "n",
              "repeat", message="beyond 2^40"),
        _miss("QT413", "scan-one-input", lambda: _absurd_scan(1)),
        _miss("QT413", "loop-2^40-iterations-with-condition", lambda: _long_loop(2**40, condition=True)),
        # QT501
        _fire("QT501", "uint8-activation", lambda: one_tensor(QType("uint8", 0.1, 128)), f"{QF}/storage_type", "q",
              profile="tflite-int8"),
        _fire("QT501", "weight-holds-minus-128", _weight_data(-128), "/graph/initializer/2", "w",
              profile="tflite-int8", message="[-128, "),
        _miss("QT501", "weight-full-range-unused", _weight_data(-127), profile="tflite-int8"),
        _miss("QT501", "int8-activation", lambda: one_tensor(int8()), profile="tflite-int8"),
        # QT502
        _fire("QT502", "asymmetric-weight", lambda: conv_model(w_q=int8(W_SCALES, [0] * 4, axis=0)), f"{wf}/schema", "w",
              profile=USER_SCHEMA_PROFILE),
        _miss("QT502", "symmetric-weight", lambda: conv_model(), profile=USER_SCHEMA_PROFILE),
        # QT503
        _fire("QT503", "per-axis-activation", lambda: one_tensor(int8([0.1] * 3, [0] * 3, axis=1)), f"{QF}/axis", "q",
              profile="tflite-int8"),
        _fire("QT503", "dynamic-activation", lambda: one_tensor(QType("int8")), f"{QF}/scale", "q",
              profile="tflite-int8"),
        _miss("QT503", "per-channel-weights", lambda: conv_model(), profile="tflite-int8"),
        # QT504
        _fire("QT504", "activation-zero-point", lambda: one_tensor(int8(F32, -10)), f"{QF}/zero_point/0", "q",
              profile="symmetric-int8"),
        _miss("QT504", "activation-zero-point-0", lambda: one_tensor(int8(F32, 0)), profile="symmetric-int8"),
        # QT505
        _fire("QT505", "scale-0.02", lambda: one_tensor(int8(F32, 0)), f"{QF}/scale/0", "q", profile="pow2-int8"),
        _miss("QT505", "scale-2^-6", lambda: one_tensor(int8(2.0**-6, 0)), profile="pow2-int8"),
        # QT506
        _fire("QT506", "concat-scales", lambda: concat_model([0.1, 0.3], 0.3), "/graph/node/0/input/0", "in0", "concat",
              profile="tflite-int8"),
        _miss("QT506", "concat-shared", lambda: concat_model([0.3, 0.3], 0.3), profile="tflite-int8"),
        # QT507
        _fire("QT507", "softmax-0.004", lambda: unary_model("Softmax", int8(0.004, -128)), "/graph/node/0/output/0", "y_q",
              "softmax", profile="tflite-int8"),
        _miss("QT507", "softmax-1/256", lambda: unary_model("Softmax", int8(1 / 256, -128)), profile="tflite-int8"),
        # QT508
        _fire("QT508", "sigmoid", _sigmoid, "/graph/node/0", node="sigmoid", profile=USER_OPS_PROFILE),
        _miss("QT508", "sigmoid-listed", _sigmoid, profile={**USER_OPS_PROFILE, "supported_ops": [
            *USER_OPS_PROFILE["supported_ops"], "Sigmoid"]}),
        *checker_models_llm.cases(),  # QT140-QT142, the LLM weight formats
    ]


import checker_models_llm  # noqa: E402 (QT140-QT142's cases build on this module's Graph and Case)
