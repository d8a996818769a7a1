"""Build one small typed model per operator page of proposal/spec/ops/ (run: python examples/make_op_examples.py).

Each examples/ops/<page>.onnx is the operator of that page on quantized tensors, as the page describes it:
quantized graph inputs (fed as storage integers), constant weights and biases stored as integers, and quantized
outputs. Scales are powers of two or small dyadic values (exact in float32), so the numbers a reader works out
by hand are the ones the reference computes. tests/test_op_pages.py checks every model with the checker, runs it
with the reference evaluator and fails when a committed file drifts from what this script builds.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, Schema, save, set_qtypes

OUT = pathlib.Path(__file__).resolve().parent / "ops"
IR_VERSION, OPSET = 10, 21  # what onnxruntime accepts

# one activation type and its symmetric weight / int32 bias companions, reused so the pages' numbers agree
X = QType("int8", 0.0625, -3)
Y = QType("int8", 0.125, 2)
F = TensorProto.FLOAT


def _w(scales: list[float], axis: int | None = 0) -> QType:
    if axis is None:
        return QType("int8", scales[0], 0, schema=Schema.SYMMETRIC)
    return QType("int8", scales, [0] * len(scales), axis=axis, schema=Schema.SYMMETRIC)


def _bias(x: QType, w: QType) -> QType:
    """int32, zero point 0, scale x_scale * w_scale per output channel (QT403-QT406)."""
    scales = [x.scale[0] * s for s in w.scale]
    if w.axis is None:
        return QType("int32", scales[0], 0, schema=Schema.SYMMETRIC)
    return QType("int32", scales, [0] * len(scales), axis=0, schema=Schema.SYMMETRIC)


def _ints(seed: int, shape: tuple[int, ...], lo: int = -20, hi: int = 20, dtype=np.int8) -> np.ndarray:
    return np.random.default_rng(seed).integers(lo, hi + 1, size=shape).astype(dtype)


class Model:
    """A graph under construction: nodes, declared tensors, their quantized types."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.values: list[onnx.ValueInfoProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.qtypes: dict[str, QType] = {}

    def _decl(self, name: str, shape, q: QType | None, elem: int) -> onnx.ValueInfoProto:
        if q is not None:
            self.qtypes[name] = q
            elem = q.storage_type.data_type
        return helper.make_tensor_value_info(name, elem, shape)

    def input(self, name: str, shape, q: QType | None = None, elem: int = F) -> Model:
        self.inputs.append(self._decl(name, shape, q, elem))
        return self

    def output(self, name: str, shape, q: QType | None = None, elem: int = F) -> Model:
        self.outputs.append(self._decl(name, shape, q, elem))
        return self

    def value(self, name: str, shape, q: QType) -> Model:
        self.values.append(self._decl(name, shape, q, F))
        return self

    def const(self, name: str, array: np.ndarray, q: QType | None = None) -> Model:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        if q is not None:
            self.qtypes[name] = q
        return self

    def node(self, op: str, inputs: list[str], outputs: list[str], **attrs) -> Model:
        self.nodes.append(helper.make_node(op, inputs, outputs, name=f"{op.lower()}_{len(self.nodes)}", **attrs))
        return self

    def build(self) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits, value_info=self.values)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
        model.producer_name = "onnx-qtypes examples"
        return set_qtypes(model, self.qtypes)


def unary(op: str, shape=(2, 3, 4), out: QType = Y, extra: Callable[[Model], list[str]] | None = None,
          out_shape=None, **attrs) -> onnx.ModelProto:
    """x (X) -> op -> y (``out``); ``extra`` adds and names further inputs."""
    m = Model(op.lower()).input("x", shape, X)
    names = ["x", *(extra(m) if extra else [])]
    return m.node(op, names, ["y"], **attrs).output("y", out_shape or shape, out).build()


def binary(op: str) -> onnx.ModelProto:
    b = QType("int8", 0.25, 0)
    out = QType("int8", 0.5, 0) if op == "Mul" else Y
    return (Model(op.lower()).input("a", (2, 3, 4), X).input("b", (3, 4), b)
            .node(op, ["a", "b"], ["y"]).output("y", (2, 3, 4), out).build())


def conv() -> onnx.ModelProto:
    w = _w([0.03125, 0.0625, 0.125])
    m = Model("conv").input("x", (1, 2, 5, 5), X)
    m.const("w", _ints(1, (3, 2, 3, 3)), w).const("b", np.array([-96, 0, 200], np.int32), _bias(X, w))
    return m.node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]).output(
        "y", (1, 3, 5, 5), QType("int8", 1.0, 0)).build()


def conv_transpose() -> onnx.ModelProto:
    w = _w([0.03125, 0.0625, 0.125], axis=1)
    m = Model("conv_transpose").input("x", (1, 2, 3, 3), X).const("w", _ints(2, (2, 3, 2, 2)), w)
    return m.node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[2, 2], strides=[2, 2]).output(
        "y", (1, 3, 6, 6), QType("int8", 0.25, 0)).build()


def gemm() -> onnx.ModelProto:
    w = _w([0.03125, 0.0625, 0.125, 0.0625, 0.03125])
    m = Model("gemm").input("a", (3, 4), X).const("b", _ints(3, (5, 4)), w)
    m.const("c", np.array([-300, -7, 0, 11, 250], np.int32), _bias(X, w))
    return m.node("Gemm", ["a", "b", "c"], ["y"], transB=1).output("y", (3, 5), QType("int8", 0.25, 0)).build()


def matmul() -> onnx.ModelProto:
    w = _w([0.03125, 0.0625, 0.125, 0.0625, 0.03125], axis=1)
    m = Model("matmul").input("a", (2, 3, 4), X).const("b", _ints(4, (4, 5)), w)
    return m.node("MatMul", ["a", "b"], ["y"]).output("y", (2, 3, 5), QType("int8", 0.25, 0)).build()


def concat() -> onnx.ModelProto:
    return (Model("concat").input("x0", (2, 1, 3), X).input("x1", (2, 2, 3), X)
            .node("Concat", ["x0", "x1"], ["y"], axis=1).output("y", (2, 3, 3), X).build())


def _i64(m: Model, name: str, values: list[int]) -> list[str]:
    m.const(name, np.array(values, np.int64))
    return [name]


def _f32(m: Model, name: str, values) -> list[str]:
    m.const(name, np.array(values, np.float32))
    return [name]


def clip() -> onnx.ModelProto:
    return unary("Clip", out=X, extra=lambda m: _f32(m, "lo", -1.0) + _f32(m, "hi", 2.5))


def data_movement() -> onnx.ModelProto:
    """Transpose -> Reshape -> Slice -> Gather: every tensor keeps X, so the storage integers just move."""
    m = Model("data_movement").input("x", (2, 3, 4), X)
    m.node("Transpose", ["x"], ["t"], perm=[2, 0, 1]).value("t", (4, 2, 3), X)
    m.node("Reshape", ["t", *_i64(m, "shape", [4, 6])], ["r"]).value("r", (4, 6), X)
    m.node("Slice", ["r", *_i64(m, "starts", [1]), *_i64(m, "ends", [4]), *_i64(m, "axes", [0])], ["s"])
    m.value("s", (3, 6), X)
    m.node("Gather", ["s", *_i64(m, "idx", [0, 2, 2])], ["y"], axis=0)
    return m.output("y", (3, 6), X).build()


def quantize_linear() -> onnx.ModelProto:
    y = QType("int8", [0.0625, 0.125, 0.25], [0, -4, 4], axis=1)
    m = Model("quantize_linear").input("x", (2, 3, 4))
    m.const("s", np.array(y.scale, np.float32)).const("z", np.array(y.zero_point, np.int8))
    return m.node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1).output("y", (2, 3, 4), y).build()


def dequantize_linear() -> onnx.ModelProto:
    m = Model("dequantize_linear").input("x", (2, 3, 4), X)
    m.const("s", np.array(X.scale[0], np.float32)).const("z", np.array(X.zero_point[0], np.int8))
    return m.node("DequantizeLinear", ["x", "s", "z"], ["y"]).output("y", (2, 3, 4)).build()


def dynamic_quantize_linear() -> onnx.ModelProto:
    """float x -> DynamicQuantizeLinear -> xq, a dynamic uint8 type bound to the xs / xz it computes -> MatMul with
    a per-column int8 weight -> a float result (dynamic quantization of a linear layer)."""
    w = _w([0.03125, 0.0625, 0.125, 0.0625, 0.03125], axis=1)
    m = Model("dynamic_quantize_linear").input("x", (3, 4)).const("b", _ints(5, (4, 5)), w)
    m.node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]).value("xq", (3, 4), QType("uint8"))
    return m.node("MatMul", ["xq", "b"], ["y"]).output("y", (3, 5)).build()


def if_() -> onnx.ModelProto:
    """If(c): the then branch hands x on as it is, the else branch its Relu; branch outputs and the If output
    carry X (QT312)."""
    def branch(name: str, op: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["x"], [name], name=f"{name}_{op.lower()}")], name, [],
                                 [helper.make_tensor_value_info(name, X.storage_type.data_type, [2, 3])])

    m = Model("if").input("x", (2, 3), X).input("c", (), elem=TensorProto.BOOL)
    m.node("If", ["c"], ["y"], then_branch=branch("t", "Identity"), else_branch=branch("e", "Relu"))
    m.output("y", (2, 3), X)
    m.qtypes.update({"t": X, "e": X})
    return m.build()


def _vi(name: str, qtype: QType | None, shape: list[int], elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, qtype.storage_type.data_type if qtype else elem, shape)


def loop() -> onnx.ModelProto:
    """Loop(3, , x): the body carries x through Relu, typed X on the node input, body input, body output and node
    output alike (QT312)."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["acc_in"], ["acc_out"], name="carry"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")], "body",
        [_vi("i", None, [], TensorProto.INT64), _vi("cond_in", None, [], TensorProto.BOOL), _vi("acc_in", X, [2, 3])],
        [_vi("cond_out", None, [], TensorProto.BOOL), _vi("acc_out", X, [2, 3])])
    m = Model("loop").input("x", (2, 3), X).const("n", np.array(3, np.int64))
    m.node("Loop", ["n", "", "x"], ["y"], body=body)
    m.output("y", (2, 3), X)
    m.qtypes.update({"acc_in": X, "acc_out": X})
    return m.build()


def scan() -> onnx.ModelProto:
    """Scan over the rows of xs with a running maximum (state) and each row as it is (scan output): the state,
    the slices and the stacked output all carry X (QT312)."""
    body = helper.make_graph(
        [helper.make_node("Max", ["s_in", "x_in"], ["s_out"], name="running_max"),
         helper.make_node("Identity", ["x_in"], ["y_out"], name="row")], "body",
        [_vi("s_in", X, [3]), _vi("x_in", X, [3])], [_vi("s_out", X, [3]), _vi("y_out", X, [3])])
    m = Model("scan").input("s", (3,), X).input("xs", (2, 3), X)
    m.node("Scan", ["s", "xs"], ["y", "ys"], body=body, num_scan_inputs=1)
    m.output("y", (3,), X).output("ys", (2, 3), X)
    m.qtypes.update({"s_in": X, "x_in": X, "s_out": X, "y_out": X})
    return m.build()


EXAMPLES: dict[str, Callable[[], onnx.ModelProto]] = {
    "conv": conv,
    "conv_transpose": conv_transpose,
    "gemm": gemm,
    "matmul": matmul,
    "add": lambda: binary("Add"),
    "sub": lambda: binary("Sub"),
    "mul": lambda: binary("Mul"),
    "concat": concat,
    "softmax": lambda: unary("Softmax", (2, 5), QType("int8", 2.0 ** -8, -128), axis=-1),
    "sigmoid": lambda: unary("Sigmoid", out=QType("int8", 2.0 ** -8, -128)),
    "tanh": lambda: unary("Tanh", out=QType("int8", 2.0 ** -7, 0)),
    "hard_swish": lambda: unary("HardSwish"),
    "leaky_relu": lambda: unary("LeakyRelu", alpha=0.125),
    "relu": lambda: unary("Relu", out=X),
    "clip": clip,
    "max_pool": lambda: unary("MaxPool", (1, 2, 5, 5), X, out_shape=(1, 2, 2, 2), kernel_shape=[2, 2],
                              strides=[2, 2]),
    "average_pool": lambda: unary("AveragePool", (1, 2, 4, 4), X, out_shape=(1, 2, 3, 3), kernel_shape=[2, 2]),
    "global_average_pool": lambda: unary("GlobalAveragePool", (1, 3, 2, 2), X, out_shape=(1, 3, 1, 1)),
    "reduce_mean": lambda: unary("ReduceMean", out=Y, extra=lambda m: _i64(m, "axes", [2]), out_shape=(2, 3, 1),
                                 keepdims=1),
    "resize": lambda: unary("Resize", (1, 2, 3, 4), X, out_shape=(1, 2, 6, 6), mode="nearest",
                            extra=lambda m: ["", *_f32(m, "scales", [1, 1, 2, 1.5])]),
    "pad": lambda: unary("Pad", (1, 2, 3, 4), X, out_shape=(1, 2, 6, 7), mode="constant",
                         extra=lambda m: _i64(m, "pads", [0, 0, 1, 2, 0, 0, 2, 1])),
    "data_movement": data_movement,
    "quantize_linear": quantize_linear,
    "dequantize_linear": dequantize_linear,
    "dynamic_quantize_linear": dynamic_quantize_linear,
    "if": if_,
    "loop": loop,
    "scan": scan,
    "default": lambda: unary("Abs", out=X),
}


def main(out_dir: pathlib.Path = OUT) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, build in EXAMPLES.items():
        save(build(), out_dir / f"{name}.onnx")
        print(out_dir / f"{name}.onnx")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
