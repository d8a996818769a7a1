"""Float operators: the reference evaluator (and stock onnx.reference) against onnxruntime's unoptimized path.

Run: python proposal/experiments/float_op_differential.py [--seeds N] [--ops Op,Op] [--stock]

Every operator that the suite's models, the test corpus and the examples use,
and the other common operators of quantized CNN / transformer / OCR models,
run as one-node float models on seeded random shapes, attributes and values
(negative axes, asymmetric pads, ceil_mode, broadcasting, int32 and int64
indices, negative indices, empty tensors, every Resize / Pad mode, ...). The
same model and feeds go to

- ``onnx_qtypes.reference_ops.ReferenceEvaluator`` (the definition's
  evaluator: onnx.reference plus the project's override kernels), and, with
  ``--stock``, to stock ``onnx.reference.ReferenceEvaluator``;
- onnxruntime's CPU provider with every graph optimization disabled
  (``ORT_DISABLE_ALL``: each node runs the kernel it names).

A trial agrees when both produce outputs of one shape and dtype with equal
integers / booleans and floats within 1e-4 relative + 1e-4 absolute (accumulation
order), or when both refuse. A trial onnxruntime refuses and the reference runs
is counted apart ("ort refuses"): it is not a reference bug unless ONNX's text
forbids the input. ``tests/test_reference_differential.py`` runs two seeds of
every generator in CI; this script is the wider sweep (default 25 seeds).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stock_tools as st  # noqa: E402

F32, I64, I32, BOOL = np.float32, np.int64, np.int32, np.bool_
RTOL = ATOL = 1e-4


@dataclasses.dataclass
class Trial:
    """One single-node model: its inputs (name -> value; None = omitted optional input), attributes, outputs."""

    op: str
    inputs: list[tuple[str, np.ndarray | None]]
    attrs: dict = dataclasses.field(default_factory=dict)
    outputs: int = 1
    opset: int = st.OPSET
    domain: str = ""
    label: str = ""

    def model(self) -> onnx.ModelProto:
        names = [name if value is not None else "" for name, value in self.inputs]
        while names and not names[-1]:  # trailing optional inputs are left out, as exporters write them
            names.pop()
        outs = [f"y{i}" for i in range(self.outputs)]
        node = helper.make_node(self.op, names, outs, domain=self.domain, **self.attrs)
        inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
                  for name, value in self.inputs if value is not None]
        bare = st.model([node], inputs, [onnx.ValueInfoProto(name=o) for o in outs], opset=self.opset)
        try:  # onnxruntime needs every output's element type: onnx's inference gives it
            inferred = {v.name: v.type for v in onnx.shape_inference.infer_shapes(bare).graph.value_info}
        except Exception:  # noqa: BLE001 - an input inference refuses: the runs will say why
            inferred = {}
        elem = {o: inferred[o].tensor_type.elem_type if o in inferred else TensorProto.FLOAT for o in outs}
        outputs = [helper.make_tensor_value_info(o, elem[o], None) for o in outs]
        return st.model([node], inputs, outputs, opset=self.opset)

    @property
    def feeds(self) -> dict[str, np.ndarray]:
        return {name: value for name, value in self.inputs if value is not None}

    def describe(self) -> str:
        shapes = ", ".join(f"{n}:{v.dtype}{list(v.shape)}" for n, v in self.inputs if v is not None)
        return f"{self.op}-{self.opset} {self.label} ({shapes}) {self.attrs}"


# --- value and shape helpers ---------------------------------------------------------------


def shape(rng: np.random.Generator, rank: int, lo: int = 1, hi: int = 5) -> list[int]:
    return [int(d) for d in rng.integers(lo, hi + 1, rank)]


def f32(rng: np.random.Generator, dims, scale: float = 1.0) -> np.ndarray:
    return np.asarray(rng.standard_normal(dims) * scale, F32)


def positive(rng: np.random.Generator, dims) -> np.ndarray:
    return np.asarray(rng.uniform(0.1, 3.0, dims), F32)


def distinct(rng: np.random.Generator, dims) -> np.ndarray:
    """Values without ties (TopK, ArgMax, Round, ...)."""
    n = int(np.prod(dims))
    return np.asarray((rng.permutation(n).astype(F32) * 0.37 - n * 0.1).reshape(dims) if n else np.zeros(dims, F32), F32)


def broadcastable(rng: np.random.Generator, dims: list[int]) -> list[int]:
    """A shape that broadcasts against ``dims``: a suffix, with some dimensions set to 1."""
    cut = int(rng.integers(0, len(dims) + 1))
    return [1 if rng.random() < 0.3 else d for d in dims[cut:]]


def index_dtype(rng: np.random.Generator) -> type:
    return I32 if rng.random() < 0.5 else I64


def axis_of(rng: np.random.Generator, rank: int) -> int:
    """An axis in [-rank, rank): negative half the time."""
    a = int(rng.integers(0, rank))
    return a - rank if rng.random() < 0.5 else a


def maybe_empty(rng: np.random.Generator, dims: list[int], p: float = 0.1) -> list[int]:
    if dims and rng.random() < p:
        dims = list(dims)
        dims[int(rng.integers(0, len(dims)))] = 0
    return dims


# --- generators: rng -> Trial ------------------------------------------------------------------

Generator = Callable[[np.random.Generator], Trial]
GENERATORS: dict[str, Generator] = {}


def generator(*ops: str) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        for op in ops:
            GENERATORS[op] = (lambda rng, _op=op: fn(rng, _op)) if fn.__code__.co_argcount == 2 else fn
        return fn
    return register


@generator("Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Exp", "Erf", "Floor", "Ceil", "Sign", "Softplus", "Softsign",
           "HardSwish", "Mish", "Sin", "Cos", "Identity", "Atan", "Sinh", "Asinh", "Round")
def _unary(rng, op):
    x = distinct(rng, maybe_empty(rng, shape(rng, int(rng.integers(0, 4))))) * 0.25 if op == "Round" else \
        f32(rng, maybe_empty(rng, shape(rng, int(rng.integers(0, 4)))), 2.0)
    return Trial(op, [("x", x)])


@generator("Log", "Sqrt", "Reciprocal")
def _positive_unary(rng, op):
    return Trial(op, [("x", positive(rng, shape(rng, int(rng.integers(1, 4)))))])


@generator("LeakyRelu", "Elu", "Celu", "ThresholdedRelu")
def _alpha_unary(rng, op):
    attrs = {} if rng.random() < 0.3 else {"alpha": float(rng.uniform(0.01, 2.0))}
    return Trial(op, [("x", f32(rng, shape(rng, 3), 2.0))], attrs)


@generator("HardSigmoid")
def _hard_sigmoid(rng):
    attrs = {} if rng.random() < 0.3 else {"alpha": float(rng.uniform(0.05, 0.5)), "beta": float(rng.uniform(0, 1))}
    return Trial("HardSigmoid", [("x", f32(rng, shape(rng, 3), 3.0))], attrs)


@generator("Selu")
def _selu(rng):
    return Trial("Selu", [("x", f32(rng, shape(rng, 3), 2.0))], {"alpha": 1.5, "gamma": 1.1} if rng.random() < .5 else {})


@generator("Gelu")
def _gelu(rng):
    attrs = {"approximate": str(rng.choice(["none", "tanh"]))} if rng.random() < 0.7 else {}
    return Trial("Gelu", [("x", f32(rng, shape(rng, 3), 3.0))], attrs, opset=21)


@generator("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "PRelu")
def _binary(rng, op):
    dims = maybe_empty(rng, shape(rng, int(rng.integers(1, 5))))
    a, b = dims, broadcastable(rng, dims)
    if rng.random() < 0.3:
        a, b = b, a
    if op == "PRelu":  # slope broadcasts unidirectionally to x
        a, b = dims, broadcastable(rng, dims)
    x, y = f32(rng, a), f32(rng, b)
    if op == "Div":
        y = np.where(np.abs(y) < 0.1, 0.5, y).astype(F32)
    if op == "Pow":
        x = positive(rng, a)
    if op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual") and rng.random() < 0.5:
        x, y = np.asarray(np.rint(x), I64), np.asarray(np.rint(y), I64)
    return Trial(op, [("a", x), ("b", y)])


@generator("Max", "Min", "Sum", "Mean")
def _variadic(rng, op):
    dims = shape(rng, int(rng.integers(1, 4)))
    n = int(rng.integers(1, 4))
    return Trial(op, [(f"x{i}", f32(rng, dims if i == 0 else broadcastable(rng, dims))) for i in range(n)])


@generator("Mod")
def _mod(rng):
    fmod = int(rng.integers(0, 2))
    dims = shape(rng, 2)
    if fmod:
        a, b = f32(rng, dims, 5), f32(rng, dims, 3)
        b = np.where(np.abs(b) < 0.5, 1.5, b).astype(F32)
    else:
        a, b = rng.integers(-20, 20, dims).astype(I64), rng.integers(1, 7, dims).astype(I64) * rng.choice([-1, 1], dims)
    return Trial("Mod", [("a", a), ("b", b)], {"fmod": fmod})


@generator("And", "Or", "Xor")
def _logical(rng, op):
    dims = shape(rng, 2)
    return Trial(op, [("a", rng.random(dims) < 0.5), ("b", np.asarray(rng.random(broadcastable(rng, dims)) < 0.5))])


@generator("Not")
def _not(rng):
    return Trial("Not", [("a", rng.random(shape(rng, 2)) < 0.5)])


@generator("Where")
def _where(rng):
    dims = maybe_empty(rng, shape(rng, int(rng.integers(1, 4))))
    return Trial("Where", [("c", np.asarray(rng.random(broadcastable(rng, dims)) < 0.5)), ("a", f32(rng, dims)),
                           ("b", f32(rng, broadcastable(rng, dims)))])


@generator("Clip")
def _clip(rng):
    lo = np.array(rng.uniform(-1, 0), F32) if rng.random() < 0.7 else None
    hi = np.array(rng.uniform(0, 1), F32) if rng.random() < 0.7 else None
    return Trial("Clip", [("x", f32(rng, shape(rng, 3))), ("lo", lo), ("hi", hi)])


@generator("Cast")
def _cast(rng):
    src, to = rng.choice(["f32", "i64", "i32", "bool"]), rng.choice([TensorProto.FLOAT, TensorProto.INT64,
                                                                         TensorProto.INT32, TensorProto.BOOL,
                                                                         TensorProto.FLOAT16, TensorProto.UINT8])
    dims = shape(rng, 2)
    x = {"f32": f32(rng, dims, 10), "i64": rng.integers(-300, 300, dims).astype(I64),
         "i32": rng.integers(-300, 300, dims).astype(I32), "bool": rng.random(dims) < 0.5}[src]
    if to == TensorProto.UINT8 and x.dtype != BOOL:
        x = np.abs(x).clip(0, 255).astype(x.dtype)  # out-of-range casts are implementation-defined
    return Trial("Cast", [("x", x)], {"to": int(to)})


@generator("Conv")
def _conv(rng):
    spatial = int(rng.integers(1, 3))
    groups = int(rng.choice([1, 2]))
    cin, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    kernel = shape(rng, spatial, 1, 3)
    dil = shape(rng, spatial, 1, 2)
    size = [int(k) * int(d) + int(rng.integers(0, 4)) for k, d in zip(kernel, dil)]
    attrs = {"group": groups, "strides": shape(rng, spatial, 1, 2), "dilations": dil}
    pad_kind = rng.choice(["pads", "SAME_UPPER", "SAME_LOWER", "VALID", "none"])
    if pad_kind == "pads":
        attrs["pads"] = [int(p) for p in rng.integers(0, 3, 2 * spatial)]
    elif pad_kind != "none":
        attrs["auto_pad"] = str(pad_kind)
    if rng.random() < 0.5:
        attrs["kernel_shape"] = kernel
    bias = f32(rng, [cout]) if rng.random() < 0.6 else None
    return Trial("Conv", [("x", f32(rng, [int(rng.integers(1, 3)), cin, *size])),
                          ("w", f32(rng, [cout, cin // groups, *kernel])), ("b", bias)], attrs)


@generator("ConvTranspose")
def _conv_transpose(rng):
    spatial = int(rng.integers(1, 3))
    groups = int(rng.choice([1, 2]))
    cin, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
    kernel, strides = shape(rng, spatial, 1, 3), shape(rng, spatial, 1, 3)
    attrs = {"group": groups, "strides": strides}
    kind = rng.choice(["pads", "output_padding", "output_shape", "auto_pad", "dilations"])
    size = shape(rng, spatial, 1, 4)
    if kind == "pads":
        attrs["pads"] = [int(p) for p in rng.integers(0, 2, 2 * spatial)]
    elif kind == "output_padding":
        attrs["output_padding"] = [int(rng.integers(0, s)) for s in strides]
    elif kind == "output_shape":
        attrs["output_shape"] = [(n - 1) * s + k - int(rng.integers(0, k)) for n, s, k in zip(size, strides, kernel)]
    elif kind == "auto_pad":
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    else:
        attrs["dilations"] = shape(rng, spatial, 1, 2)
    bias = f32(rng, [cout]) if rng.random() < 0.5 else None
    return Trial("ConvTranspose", [("x", f32(rng, [1, cin, *size])), ("w", f32(rng, [cin, cout // groups, *kernel])),
                                   ("b", bias)], attrs)


def _pool_attrs(rng, spatial: int, size: list[int]) -> dict:
    kernel = [int(rng.integers(1, min(s, 3) + 1)) for s in size]
    attrs = {"kernel_shape": kernel, "strides": shape(rng, spatial, 1, 3)}
    kind = rng.choice(["pads", "auto_pad", "none"])
    if kind == "pads":
        attrs["pads"] = [int(rng.integers(0, k)) for k in kernel * 2]  # pads smaller than the kernel
    elif kind == "auto_pad":
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    if rng.random() < 0.4:
        attrs["ceil_mode"] = 1
    return attrs


@generator("MaxPool")
def _max_pool(rng):
    spatial = int(rng.integers(1, 3))
    size = shape(rng, spatial, 2, 6)
    attrs = _pool_attrs(rng, spatial, size)
    if rng.random() < 0.3:
        attrs["dilations"] = shape(rng, spatial, 1, 2)
        attrs.pop("auto_pad", None)
        attrs["kernel_shape"] = [min(k, (s + 1) // 2) for k, s in zip(attrs["kernel_shape"], size)]
        attrs["pads"] = [0] * (2 * spatial)
    outputs = 2 if rng.random() < 0.4 else 1
    if outputs == 2 and rng.random() < 0.5:
        attrs["storage_order"] = 1
    return Trial("MaxPool", [("x", distinct(rng, [int(rng.integers(1, 3)), 2, *size]))], attrs, outputs=outputs)


@generator("AveragePool")
def _average_pool(rng):
    spatial = int(rng.integers(1, 3))
    size = shape(rng, spatial, 2, 6)
    attrs = _pool_attrs(rng, spatial, size)
    if rng.random() < 0.5:
        attrs["count_include_pad"] = 1
    return Trial("AveragePool", [("x", f32(rng, [1, 2, *size]))], attrs)


@generator("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(rng, op):
    return Trial(op, [("x", f32(rng, [int(rng.integers(1, 3)), 3, *shape(rng, int(rng.integers(1, 3)))]))])


@generator("Gemm")
def _gemm(rng):
    m, k, n = (int(d) for d in rng.integers(1, 5, 3))
    ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    attrs = {"transA": ta, "transB": tb}
    if rng.random() < 0.5:
        attrs.update(alpha=float(rng.uniform(0.2, 2)), beta=float(rng.uniform(0.2, 2)))
    c = f32(rng, [[m, n], [n], [1, n], [m, 1], []][int(rng.integers(0, 5))]) if rng.random() < 0.7 else None
    return Trial("Gemm", [("a", f32(rng, [k, m] if ta else [m, k])), ("b", f32(rng, [n, k] if tb else [k, n])),
                          ("c", c)], attrs)


@generator("MatMul")
def _matmul(rng):
    k = int(rng.integers(1, 5))
    batch = shape(rng, int(rng.integers(0, 3)))
    a = [*batch, int(rng.integers(1, 4)), k] if rng.random() < 0.85 else [k]
    b = [*broadcastable(rng, batch), k, int(rng.integers(1, 4))] if rng.random() < 0.85 else [k]
    return Trial("MatMul", [("a", f32(rng, a)), ("b", f32(rng, b))])


@generator("Einsum")
def _einsum(rng):
    eq, dims = [("ij,jk->ik", ([2, 3], [3, 4])), ("bij,bjk->bik", ([2, 2, 3], [2, 3, 2])),
                ("bhqd,bhkd->bhqk", ([1, 2, 3, 4], [1, 2, 5, 4])), ("ii->i", ([3, 3],)), ("ij->ji", ([2, 3],)),
                ("ij->", ([2, 3],)), ("i,j->ij", ([3], [2])), ("...ij,...jk->...ik", ([2, 2, 3], [3, 2]))][
        int(rng.integers(0, 8))]
    return Trial("Einsum", [(f"x{i}", f32(rng, d)) for i, d in enumerate(dims)], {"equation": eq})


@generator("Softmax", "LogSoftmax", "Hardmax")
def _softmax(rng, op):
    dims = maybe_empty(rng, shape(rng, int(rng.integers(1, 4))))
    attrs = {"axis": axis_of(rng, len(dims))} if rng.random() < 0.8 else {}
    return Trial(op, [("x", distinct(rng, dims) if op == "Hardmax" else f32(rng, dims, 3))], attrs)


@generator("LayerNormalization")
def _layer_norm(rng):
    dims = shape(rng, int(rng.integers(2, 4)), 2, 5)
    axis = axis_of(rng, len(dims)) if rng.random() < 0.7 else -1
    norm = dims[axis:] if axis < 0 else dims[axis:]
    scale_shape = norm if rng.random() < 0.7 else [norm[-1]] if len(norm) == 1 else norm
    bias = f32(rng, scale_shape) if rng.random() < 0.7 else None
    attrs = {"axis": axis}
    if rng.random() < 0.5:
        attrs["epsilon"] = float(rng.choice([1e-12, 1e-6, 1e-3]))
    return Trial("LayerNormalization", [("x", f32(rng, dims, 2) + 1), ("scale", f32(rng, scale_shape)), ("bias", bias)],
                 attrs, outputs=int(rng.choice([1, 3])))


@generator("BatchNormalization")
def _batch_norm(rng):
    opset = int(rng.choice([7, 9, 14, 15]))
    c = int(rng.integers(1, 4))
    x = f32(rng, [int(rng.integers(1, 3)), c, *shape(rng, int(rng.integers(0, 3)))], 2) + 1
    attrs = {}
    if rng.random() < 0.6:
        attrs["momentum"] = float(rng.choice([0.9, 0.99, 0.5]))
    if rng.random() < 0.5:
        attrs["epsilon"] = float(rng.choice([1e-5, 1e-3]))
    outputs = 1
    if opset >= 14 and rng.random() < 0.3:
        attrs["training_mode"], outputs = 1, 3
    elif opset >= 14 and rng.random() < 0.3:
        attrs["training_mode"] = 0
    return Trial("BatchNormalization", [("x", x), ("s", positive(rng, [c])), ("b", f32(rng, [c])),
                                        ("mean", f32(rng, [c])), ("var", positive(rng, [c]))],
                 attrs, outputs=outputs, opset=opset)


@generator("InstanceNormalization")
def _instance_norm(rng):
    c = int(rng.integers(1, 4))
    return Trial("InstanceNormalization", [("x", f32(rng, [2, c, *shape(rng, int(rng.integers(1, 3)), 2, 4)])),
                                           ("s", f32(rng, [c])), ("b", f32(rng, [c]))])


@generator("GroupNormalization")
def _group_norm(rng):
    groups = int(rng.choice([1, 2]))
    c = groups * int(rng.integers(1, 3))
    return Trial("GroupNormalization", [("x", f32(rng, [2, c, *shape(rng, 2, 2, 4)])), ("s", f32(rng, [c])),
                                        ("b", f32(rng, [c]))], {"num_groups": groups}, opset=21)


@generator("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum")
def _reduce(rng, op):
    dims = shape(rng, int(rng.integers(1, 4)))
    if rng.random() < 0.1 and op not in ("ReduceMax", "ReduceMin"):
        dims = maybe_empty(rng, dims, 1.0)
    x = positive(rng, dims) if op == "ReduceLogSum" else f32(rng, dims)
    attrs = {}
    if rng.random() < 0.5:
        attrs["keepdims"] = int(rng.integers(0, 2))
    axes = None
    choice = rng.random()
    if choice < 0.6:
        axes = np.array(sorted({axis_of(rng, len(dims)) for _ in range(int(rng.integers(1, len(dims) + 1)))},
                               key=lambda a: a % len(dims)), I64)
        if len({a % len(dims) for a in axes}) != len(axes):
            axes = axes[:1]
    elif choice < 0.75:
        axes = np.array([], I64)
        if rng.random() < 0.5:
            attrs["noop_with_empty_axes"] = 1
    return Trial(op, [("x", x), ("axes", axes)], attrs)


@generator("ArgMax", "ArgMin")
def _arg(rng, op):
    dims = shape(rng, int(rng.integers(1, 4)))
    x = np.rint(f32(rng, dims)) if rng.random() < 0.5 else distinct(rng, dims)  # ties half the time
    attrs = {"axis": axis_of(rng, len(dims))}
    if rng.random() < 0.5:
        attrs["keepdims"] = int(rng.integers(0, 2))
    if rng.random() < 0.5:
        attrs["select_last_index"] = int(rng.integers(0, 2))
    return Trial(op, [("x", x.astype(F32))], attrs)


@generator("Reshape")
def _reshape(rng):
    dims = maybe_empty(rng, shape(rng, int(rng.integers(1, 4))))
    target = list(dims)
    rng.shuffle(target)
    if len(target) > 1 and rng.random() < 0.5:
        target = [int(np.prod(target[:2])), *target[2:]]
    if target and rng.random() < 0.5 and 0 not in dims:
        target[int(rng.integers(0, len(target)))] = -1
    attrs = {}
    if target and dims and rng.random() < 0.3 and len(target) <= len(dims) and target[0] == dims[0] \
            and target[0] != -1 and dims[0] != 0:
        target[0] = 0  # copy the input's dimension
    elif 0 in target and 0 in dims:
        attrs["allowzero"] = 1
    return Trial("Reshape", [("x", f32(rng, dims)), ("shape", np.array(target, I64))], attrs)


@generator("Transpose")
def _transpose(rng):
    dims = shape(rng, int(rng.integers(1, 5)))
    attrs = {"perm": [int(p) for p in rng.permutation(len(dims))]} if rng.random() < 0.8 else {}
    return Trial("Transpose", [("x", f32(rng, maybe_empty(rng, dims)))], attrs)


@generator("Flatten")
def _flatten(rng):
    dims = shape(rng, int(rng.integers(1, 4)))
    return Trial("Flatten", [("x", f32(rng, dims))], {"axis": int(rng.integers(-len(dims), len(dims) + 1))})


@generator("Squeeze", "Unsqueeze")
def _squeeze(rng, op):
    dims = [1 if rng.random() < 0.4 else d for d in shape(rng, int(rng.integers(1, 4)))]
    if op == "Squeeze":
        ones = [i for i, d in enumerate(dims) if d == 1]
        axes = None if not ones or rng.random() < 0.3 else np.array(
            [i - len(dims) if rng.random() < 0.5 else i for i in ones[: int(rng.integers(1, len(ones) + 1))]], I64)
    else:
        out_rank = len(dims) + int(rng.integers(1, 3))
        picks = rng.choice(out_rank, out_rank - len(dims), replace=False)
        axes = np.array([int(p) - out_rank if rng.random() < 0.5 else int(p) for p in picks], I64)
    return Trial(op, [("x", f32(rng, dims)), ("axes", axes)])


@generator("Concat")
def _concat(rng):
    dims = shape(rng, int(rng.integers(1, 4)))
    axis = axis_of(rng, len(dims))
    parts = []
    for i in range(int(rng.integers(1, 4))):
        d = list(dims)
        d[axis] = int(rng.integers(0, 4))
        parts.append((f"x{i}", f32(rng, d)))
    return Trial("Concat", parts, {"axis": axis})


@generator("Split")
def _split(rng):
    dims = shape(rng, int(rng.integers(1, 4)), 2, 6)
    axis = axis_of(rng, len(dims))
    size = dims[axis]
    kind = rng.choice(["sizes", "num_outputs", "sizes_with_zero"])
    if kind == "num_outputs":
        n = int(rng.integers(1, size + 1))
        return Trial("Split", [("x", f32(rng, dims))], {"axis": axis, "num_outputs": n}, outputs=n, opset=18)
    cuts = sorted(rng.choice(np.arange(0 if kind == "sizes_with_zero" else 1, size + 1), int(rng.integers(0, 3))))
    sizes = np.diff([0, *cuts, size]).astype(I64)
    return Trial("Split", [("x", f32(rng, dims)), ("split", sizes)], {"axis": axis}, outputs=len(sizes))


@generator("Slice")
def _slice(rng):
    dims = shape(rng, int(rng.integers(1, 4)), 1, 6)
    n = int(rng.integers(1, len(dims) + 1))
    axes = rng.choice(len(dims), n, replace=False)
    starts, ends, steps = [], [], []
    for a in axes:
        step = int(rng.choice([1, 1, 2, -1, -2]))
        lo, hi = -dims[a] - 2, dims[a] + 2
        s, e = int(rng.integers(lo, hi)), int(rng.integers(lo, hi))
        starts.append(s), ends.append(e), steps.append(step)
    dtype = index_dtype(rng)
    if rng.random() < 0.15:  # "to the end": the index type's extreme
        ends[0] = int(np.iinfo(dtype).max if steps[0] > 0 else np.iinfo(dtype).min)
    signed_axes = [int(a) - len(dims) if rng.random() < 0.5 else int(a) for a in axes]
    with_axes = rng.random() < 0.8 or list(axes) != list(range(n))
    return Trial("Slice", [("x", f32(rng, dims)), ("starts", np.array(starts, dtype)), ("ends", np.array(ends, dtype)),
                           ("axes", np.array(signed_axes, dtype) if with_axes else None),
                           ("steps", np.array(steps, dtype) if rng.random() < 0.8 or any(s != 1 for s in steps)
                            else None)])


@generator("Gather")
def _gather(rng):
    dims = shape(rng, int(rng.integers(1, 4)))
    axis = axis_of(rng, len(dims))
    size = dims[axis]
    idx_shape = maybe_empty(rng, shape(rng, int(rng.integers(0, 3))))
    indices = rng.integers(-size, size, idx_shape).astype(index_dtype(rng))
    return Trial("Gather", [("x", f32(rng, dims)), ("i", indices)], {"axis": axis})


@generator("GatherElements")
def _gather_elements(rng):
    rank = int(rng.integers(1, 4))
    dims = shape(rng, rank)
    axis = axis_of(rng, rank)
    if rng.random() < 0.3:
        dims[axis] = int(rng.integers(65, 600))  # more than numpy.choose's 32/64 choices (token_type_ids: 512)
    idx = [int(rng.integers(1, d + 1)) for d in dims]  # ONNX: any size along each axis (torch.gather: <= data)
    idx[axis] = int(rng.integers(0, 5))
    size = dims[axis]
    indices = rng.integers(-size if rng.random() < 0.5 else 0, size, idx).astype(index_dtype(rng))
    return Trial("GatherElements", [("x", f32(rng, dims)), ("i", indices)], {"axis": axis})


@generator("GatherND")
def _gather_nd(rng):
    batch = int(rng.integers(0, 2))
    dims = shape(rng, int(rng.integers(batch + 1, 4)), 1, 4)
    depth = int(rng.integers(1, len(dims) - batch + 1))
    outer = shape(rng, int(rng.integers(0, 2)))
    idx_shape = [*dims[:batch], *outer, depth]
    indices = np.stack([rng.integers(-dims[batch + k], dims[batch + k], [*dims[:batch], *outer])
                        for k in range(depth)], axis=-1).astype(I64)
    return Trial("GatherND", [("x", f32(rng, dims)), ("i", indices.reshape(idx_shape))], {"batch_dims": batch})


@generator("ScatterElements")
def _scatter_elements(rng):
    dims = shape(rng, int(rng.integers(1, 4)), 2, 5)
    axis = axis_of(rng, len(dims))
    size = dims[axis]
    idx_shape = [int(rng.integers(1, d + 1)) for d in dims]
    idx_shape[axis] = 1  # one update per position: no duplicates
    indices = rng.integers(-size, size, idx_shape).astype(index_dtype(rng))
    attrs = {"reduction": str(rng.choice(["none", "add", "mul", "max", "min"]))} if rng.random() < 0.5 else {}
    return Trial("ScatterElements", [("x", f32(rng, dims)), ("i", indices), ("u", f32(rng, idx_shape))], attrs)


@generator("ScatterND")
def _scatter_nd(rng):
    dims = shape(rng, int(rng.integers(1, 4)), 2, 5)
    depth = int(rng.integers(1, len(dims) + 1))
    coords = rng.permutation(np.stack(np.meshgrid(*[np.arange(d) for d in dims[:depth]], indexing="ij"), -1)
                             .reshape(-1, depth))[: int(rng.integers(1, 4))]
    attrs = {"reduction": str(rng.choice(["none", "add", "mul", "max", "min"]))} if rng.random() < 0.5 else {}
    return Trial("ScatterND", [("x", f32(rng, dims)), ("i", coords.astype(I64)),
                               ("u", f32(rng, [len(coords), *dims[depth:]]))], attrs)


@generator("Expand")
def _expand(rng):
    dims = shape(rng, int(rng.integers(1, 4)))
    x = broadcastable(rng, dims)
    target = [1 if rng.random() < 0.3 else d for d in dims]  # 1 keeps the input's dimension
    if rng.random() < 0.3:
        target = [int(rng.integers(1, 3)), *target]
    return Trial("Expand", [("x", f32(rng, x)), ("shape", np.array(target, I64))])


@generator("Tile")
def _tile(rng):
    dims = maybe_empty(rng, shape(rng, int(rng.integers(1, 4))))
    return Trial("Tile", [("x", f32(rng, dims)), ("r", rng.integers(0 if rng.random() < .2 else 1, 4,
                                                                     len(dims)).astype(I64))])


@generator("Pad")
def _pad(rng):
    dims = shape(rng, int(rng.integers(1, 4)), 2, 5)
    mode = str(rng.choice(["constant", "reflect", "edge", "wrap"]))
    axes = None
    if rng.random() < 0.4:
        picks = rng.choice(len(dims), int(rng.integers(1, len(dims) + 1)), replace=False)
        axes = np.array([int(p) - len(dims) if rng.random() < 0.5 else int(p) for p in picks], I64)
    chosen = [int(a) % len(dims) for a in axes] if axes is not None else list(range(len(dims)))
    limit = [dims[a] - 1 if mode == "reflect" else dims[a] for a in chosen]
    low = min(limit) if mode in ("reflect", "wrap") else 3
    pads = rng.integers(-1, max(low, 0) + 1, 2 * len(chosen)).astype(I64)  # negative: remove
    value = np.array(rng.uniform(-2, 2), F32) if mode == "constant" and rng.random() < 0.5 else None
    return Trial("Pad", [("x", f32(rng, dims)), ("pads", pads), ("value", value), ("axes", axes)], {"mode": mode})


@generator("DepthToSpace", "SpaceToDepth")
def _depth_space(rng, op):
    b = int(rng.integers(1, 4))
    if op == "DepthToSpace":
        attrs = {"blocksize": b, "mode": str(rng.choice(["DCR", "CRD"]))}
        x = f32(rng, [1, b * b * int(rng.integers(1, 3)), *shape(rng, 2, 1, 3)])
    else:
        attrs = {"blocksize": b}
        x = f32(rng, [1, int(rng.integers(1, 3)), *(b * d for d in shape(rng, 2, 1, 3))])
    return Trial(op, [("x", x)], attrs)


@generator("Resize")
def _resize(rng):
    spatial = int(rng.integers(1, 3))
    size = shape(rng, spatial, 1, 5)
    x = f32(rng, [1, 2, *size])
    mode = str(rng.choice(["nearest", "linear", "cubic"]))
    ctm = str(rng.choice(["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
                          "half_pixel_symmetric"]))
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    if mode == "cubic" and rng.random() < 0.5:
        attrs["cubic_coeff_a"] = -0.5
    if mode != "nearest" and rng.random() < 0.2:
        attrs["exclude_outside"] = 1
    if mode != "nearest" and rng.random() < 0.2:
        attrs["antialias"] = 1
    roi = None
    if ctm == "tf_crop_and_resize":
        roi = np.array([0, 0, *rng.uniform(0, 0.4, spatial), 1, 1, *rng.uniform(0.6, 1, spatial)], F32)
        attrs["extrapolation_value"] = float(rng.uniform(-1, 1))
    if rng.random() < 0.5:
        scales = np.array([1, 1, *rng.choice([0.5, 0.6, 1.0, 1.5, 2.0, 3.0], spatial)], F32)
        sizes = None
    else:
        scales = None
        sizes = np.array([1, 2, *rng.integers(1, 8, spatial)], I64)
        if rng.random() < 0.2:
            attrs["keep_aspect_ratio_policy"] = str(rng.choice(["not_larger", "not_smaller"]))
    return Trial("Resize", [("x", x), ("roi", roi), ("scales", scales), ("sizes", sizes)], attrs)


@generator("Shape")
def _shape(rng):
    dims = shape(rng, int(rng.integers(0, 4)))
    attrs = {}
    if rng.random() < 0.5:
        attrs["start"] = int(rng.integers(-len(dims) - 1, len(dims) + 2))
    if rng.random() < 0.5:
        attrs["end"] = int(rng.integers(-len(dims) - 1, len(dims) + 2))
    return Trial("Shape", [("x", f32(rng, dims))], attrs)


@generator("Size")
def _size(rng):
    return Trial("Size", [("x", f32(rng, maybe_empty(rng, shape(rng, int(rng.integers(0, 4))))))])


@generator("ConstantOfShape")
def _constant_of_shape(rng):
    value = {} if rng.random() < 0.3 else {"value": helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5])}
    return Trial("ConstantOfShape", [("s", rng.integers(0, 4, int(rng.integers(0, 3))).astype(I64))], value)


@generator("Range")
def _range(rng):
    if rng.random() < 0.5:
        start, limit, delta = (np.array(v, I64) for v in (rng.integers(-5, 5), rng.integers(-10, 10),
                                                          rng.choice([-3, -1, 1, 2])))
    else:
        start, limit = (np.array(v, F32) for v in rng.uniform(-5, 5, 2))
        delta = np.array(rng.choice([-1.5, -0.5, 0.25, 1.0]), F32)
    return Trial("Range", [("start", start), ("limit", limit), ("delta", delta)])


@generator("CumSum")
def _cumsum(rng):
    dims = shape(rng, int(rng.integers(1, 4)))
    attrs = {k: 1 for k in ("exclusive", "reverse") if rng.random() < 0.5}
    axis = np.array(axis_of(rng, len(dims)), index_dtype(rng))
    return Trial("CumSum", [("x", f32(rng, dims)), ("axis", axis)], attrs)


@generator("TopK")
def _topk(rng):
    dims = shape(rng, int(rng.integers(1, 4)))
    axis = axis_of(rng, len(dims))
    attrs = {"axis": axis}
    if rng.random() < 0.5:
        attrs["largest"] = int(rng.integers(0, 2))
    x = distinct(rng, dims)
    return Trial("TopK", [("x", x), ("k", np.array([int(rng.integers(0, dims[axis] + 1))], I64))], attrs, outputs=2)


@generator("NonZero")
def _non_zero(rng):
    dims = maybe_empty(rng, shape(rng, int(rng.integers(1, 4))))
    return Trial("NonZero", [("x", (rng.random(dims) < 0.5).astype(F32))])


@generator("Trilu")
def _trilu(rng):
    k = np.array(int(rng.integers(-3, 4)), I64) if rng.random() < 0.6 else None
    return Trial("Trilu", [("x", f32(rng, shape(rng, int(rng.integers(2, 4))))), ("k", k)],
                 {"upper": int(rng.integers(0, 2))})


@generator("OneHot")
def _one_hot(rng):
    depth = int(rng.integers(1, 6))
    idx = rng.integers(-depth, depth, shape(rng, int(rng.integers(1, 3)))).astype(I64)
    return Trial("OneHot", [("i", idx), ("depth", np.array(depth, I64)), ("v", np.array([0.0, 1.0], F32))],
                 {"axis": int(rng.integers(-idx.ndim - 1, idx.ndim + 1))})


@generator("LSTM", "GRU", "RNN")
def _recurrent(rng, op):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    seq, batch, inp, hidden = (int(v) for v in rng.integers(1, 4, 4))
    direction = str(rng.choice(["forward", "reverse", "bidirectional"]))
    dirs = 2 if direction == "bidirectional" else 1
    attrs = {"hidden_size": hidden, "direction": direction}
    if op == "GRU" and rng.random() < 0.5:
        attrs["linear_before_reset"] = 1
    layout = int(rng.integers(0, 2)) if rng.random() < 0.3 else 0
    if layout:
        attrs["layout"] = 1
    x = f32(rng, [batch, seq, inp] if layout else [seq, batch, inp])
    inputs = [("x", x), ("w", f32(rng, [dirs, gates * hidden, inp], 0.5)),
              ("r", f32(rng, [dirs, gates * hidden, hidden], 0.5)),
              ("b", f32(rng, [dirs, 2 * gates * hidden], 0.5) if rng.random() < 0.7 else None),
              ("seq", None),
              ("h0", f32(rng, [batch, dirs, hidden] if layout else [dirs, batch, hidden]) if rng.random() < 0.5
               else None)]
    if op == "LSTM":
        inputs.append(("c0", f32(rng, [batch, dirs, hidden] if layout else [dirs, batch, hidden])
                       if rng.random() < 0.5 else None))
    return Trial(op, inputs, attrs, outputs=3 if op == "LSTM" else 2)


@generator("Dropout")
def _dropout(rng):
    return Trial("Dropout", [("x", f32(rng, shape(rng, 2)))], outputs=int(rng.integers(1, 3)))


@generator("Compress")
def _compress(rng):
    dims = shape(rng, int(rng.integers(1, 3)))
    attrs = {"axis": axis_of(rng, len(dims))} if rng.random() < 0.7 else {}
    n = dims[attrs["axis"]] if attrs else int(np.prod(dims))
    return Trial("Compress", [("x", f32(rng, dims)), ("c", rng.random(int(rng.integers(0, n + 1))) < 0.5)], attrs)


@generator("ReverseSequence")
def _reverse_sequence(rng):
    seq, batch = (int(v) for v in rng.integers(1, 5, 2))
    time_axis = int(rng.integers(0, 2))
    dims = [seq, batch, 2] if time_axis == 0 else [batch, seq, 2]
    return Trial("ReverseSequence", [("x", f32(rng, dims)), ("l", rng.integers(1, seq + 1, batch).astype(I64))],
                 {"time_axis": time_axis, "batch_axis": 1 - time_axis})


@generator("DynamicQuantizeLinear")
def _dynamic_quantize(rng):
    x = f32(rng, shape(rng, int(rng.integers(1, 4))), float(rng.choice([0.01, 1.0, 100.0])))
    if rng.random() < 0.2:
        x = np.abs(x)  # the range then starts at 0
    return Trial("DynamicQuantizeLinear", [("x", x)], outputs=3)


@generator("DequantizeLinear", "QuantizeLinear")
def _qdq(rng, op):
    dims = shape(rng, int(rng.integers(1, 4)))
    axis = axis_of(rng, len(dims)) if rng.random() < 0.5 else None
    n = dims[axis] if axis is not None else 1
    scale = rng.uniform(0.01, 0.2, [n] if axis is not None else []).astype(F32)
    zp = rng.integers(-20, 20, scale.shape).astype(np.int8)
    x = rng.integers(-128, 128, dims).astype(np.int8) if op == "DequantizeLinear" else f32(rng, dims, 5)
    return Trial(op, [("x", x), ("s", scale), ("z", zp if rng.random() < 0.8 else None)],
                 {} if axis is None else {"axis": axis})


# --- inputs where ONNX's text and onnxruntime part, or ONNX defines nothing ---------------------------


def _resize_deviations(trial: Trial) -> str | None:
    """onnxruntime 1.32 computes floor(input * scale) with a float32 product (5 x 1.4f: 7, not 6), and ignores
    tf_crop_and_resize's roi on an axis whose length does not change."""
    attrs, feeds = trial.attrs, trial.feeds
    if "scales" in feeds:
        shape, scales = np.array(feeds["x"].shape), feeds["scales"]
        if np.any(np.floor(shape * scales.astype(np.float64)) != np.floor((shape.astype(F32) * scales).astype(F32))):
            return "onnxruntime multiplies input * scale in float32"
    if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        return None
    x, roi = feeds["x"], feeds["roi"]
    out = (np.floor(np.array(x.shape) * feeds["scales"]).astype(int) if "scales" in feeds else feeds["sizes"])
    if attrs.get("keep_aspect_ratio_policy"):
        return "keep_aspect_ratio_policy with tf_crop_and_resize (the kept-axis roi: see above)"
    rank = x.ndim
    kept = [a for a in range(rank) if out[a] == x.shape[a] and (roi[a], roi[rank + a]) != (0, 1)]
    return "onnxruntime ignores the roi of an axis whose length does not change" if kept else None


def _empty_mean(trial: Trial) -> str | None:
    return "ONNX: reduction over an empty set of values yields undefined" if trial.feeds["x"].size == 0 else None


# op -> what tells a trial of it apart (a reason, or None): the reference follows ONNX's text there
KNOWN_ONNXRUNTIME_DEVIATIONS: dict[str, Callable[[Trial], str | None]] = {"Resize": _resize_deviations}
UNDEFINED_BY_ONNX: dict[str, Callable[[Trial], str | None]] = {"ReduceMean": _empty_mean}


# --- running ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    values: list[np.ndarray] | None = None
    error: str | None = None
    undefined: bool = False  # the reference refused an input ONNX does not define (corrected.Refused)


def _refused(exc: BaseException | None) -> bool:
    from onnx_qtypes.reference_ops.corrected import Refused  # noqa: PLC0415

    while exc is not None:
        if isinstance(exc, Refused):
            return True
        exc = exc.__cause__
    return False


def _quiet(fn: Callable[[], list]) -> Outcome:
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return Outcome([np.asarray(v) for v in fn()])
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return Outcome(error=st.short_error(exc, 160), undefined=_refused(exc))


def run_project_reference(trial: Trial) -> Outcome:
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415

    return _quiet(lambda: ReferenceEvaluator(trial.model()).run(None, trial.feeds))


def run_stock_reference(trial: Trial) -> Outcome:
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415

    return _quiet(lambda: ReferenceEvaluator(trial.model()).run(None, trial.feeds))


def run_onnxruntime(trial: Trial) -> Outcome:
    return _quiet(lambda: st.ort_session(trial.model()).run(None, trial.feeds))


def difference(ours: Outcome, theirs: Outcome) -> str | None:
    """None when the two agree (see the module text), else what differs."""
    if ours.error or theirs.error:
        if ours.error and theirs.error:
            return None
        return f"reference: {ours.error}" if ours.error else f"onnxruntime: {theirs.error}"
    if len(ours.values) != len(theirs.values):
        return f"{len(ours.values)} outputs against {len(theirs.values)}"
    for k, (a, b) in enumerate(zip(ours.values, theirs.values)):
        if a.shape != b.shape:
            return f"output {k}: shape {list(a.shape)} against {list(b.shape)}"
        if a.dtype != b.dtype:
            return f"output {k}: dtype {a.dtype} against {b.dtype}"
        if a.dtype.kind == "f":
            x, y = a.astype(np.float64), b.astype(np.float64)
            same = np.isclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            same = a == b
        if not np.all(same):
            flat = int(np.flatnonzero(~same)[0])
            return (f"output {k}: {int(np.count_nonzero(~same))} of {a.size} elements differ, first at "
                    f"{list(np.unravel_index(flat, a.shape))}: {a.reshape(-1)[flat]!r} against {b.reshape(-1)[flat]!r}")
    return None


@dataclasses.dataclass
class Verdict:
    trial: Trial
    onnxruntime: Outcome
    reference: Outcome
    problem: str | None  # None: agrees (or both refuse)

    @property
    def ort_refuses(self) -> bool:
        return self.onnxruntime.error is not None and self.reference.error is None

    deviation: str | None = None  # a known onnxruntime deviation from ONNX's text

    @property
    def undefined(self) -> bool:
        """The reference refused, saying ONNX does not define the result, where onnxruntime ran; or ONNX
        leaves the result undefined (UNDEFINED_BY_ONNX)."""
        predicate = UNDEFINED_BY_ONNX.get(self.trial.op)
        return (self.reference.undefined and self.onnxruntime.error is None) or bool(predicate and predicate(self.trial))


def judge(trial: Trial, runner: Callable[[Trial], Outcome] = run_project_reference) -> Verdict:
    theirs, ours = run_onnxruntime(trial), runner(trial)
    verdict = Verdict(trial, theirs, ours, difference(ours, theirs))
    known = KNOWN_ONNXRUNTIME_DEVIATIONS.get(trial.op)
    if verdict.problem and known is not None:
        verdict.deviation = known(trial)
    if verdict.ort_refuses or verdict.undefined or verdict.deviation:
        verdict.problem = None  # counted apart
    return verdict


def trials(op: str, seeds: range) -> list[Trial]:
    out = []
    for seed in seeds:
        trial = GENERATORS[op](np.random.default_rng([seed, *op.encode()]))
        trial.label = trial.label or f"seed {seed}"
        out.append(trial)
    return out


def sweep(ops: list[str], seeds: range, runner: Callable[[Trial], Outcome]) -> dict[str, list[Verdict]]:
    return {op: [judge(t, runner) for t in trials(op, seeds)] for op in ops}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=25)
    parser.add_argument("--ops", default="", help="comma-separated operators (default: every generator)")
    parser.add_argument("--stock", action="store_true", help="also run stock onnx.reference")
    parser.add_argument("--show", type=int, default=2, help="disagreements printed per operator")
    args = parser.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o] or sorted(GENERATORS)
    print(st.versions())
    print(f"command: python proposal/experiments/float_op_differential.py --seeds {args.seeds}"
          f"{' --stock' if args.stock else ''}{' --ops ' + args.ops if args.ops else ''}\n")
    runners = {"reference_ops": run_project_reference}
    if args.stock:
        runners["onnx.reference"] = run_stock_reference
    results = {name: sweep(ops, range(args.seeds), runner) for name, runner in runners.items()}
    header = ("| operator | trials | " + " | ".join(f"{n} differs" for n in runners)
              + " | onnxruntime refuses | ONNX undefined (reference refuses) | known onnxruntime deviation |")
    print(header + "\n|" + "---|" * (header.count("|") - 1))
    failing = collections.Counter()
    for op in ops:
        cells = []
        for name in runners:
            bad = [v for v in results[name][op] if v.problem]
            failing[name] += bool(bad)
            cells.append(str(len(bad)))
        refused = sum(v.ort_refuses for v in results["reference_ops"][op])
        undefined = sum(v.undefined for v in results["reference_ops"][op])
        deviations = sum(bool(v.deviation) for v in results["reference_ops"][op])
        print(f"| {op} | {args.seeds} | {' | '.join(cells)} | {refused} | {undefined} | {deviations} |")
    for name in runners:
        print(f"\n{name}: {failing[name]} of {len(ops)} operators differ from onnxruntime (ORT_DISABLE_ALL)")
        for op in ops:
            for v in [v for v in results[name][op] if v.problem][: args.show]:
                print(f"  {v.trial.describe()}\n     {v.problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
