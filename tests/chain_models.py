"""Typed chains for the chain rule's bounds beyond a constant weight (proposal/spec/semantics.md#chains).

Each chain is written as a float graph, run once in onnx.reference to see each tensor's range, and then typed:
every activation int8 (symmetric, scale fitted to its range with headroom, so little saturates; a Softmax output
uint8 in steps of 1/255), every weight int8 symmetric, LayerNormalization's scale and bias plain float32. Feeds are
the storage of random normal inputs.

- ``attention``: q, k, v projections, MatMul(q, kᵀ) and MatMul(softmax, v) (two activations each), Mul by the
  score scale, LayerNormalization of the context;
- ``convolutions``: ConvTranspose (a constant weight, two groups), Relu into a new type, Conv whose weight is
  an activation (a Relu of a graph input, requantized), HardSwish;
- ``gemm_concat_pad``: Gemm of two activations (transB, alpha, K larger than N), Concat of two tensors of other
  types, Pad into another type, Div by a constant.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from onnx_qtypes import QType, set_qtype
from onnx_qtypes.reference_ops.corrected import CORRECTED_OPS  # onnx.reference's grouped ConvTranspose is wrong

IR_VERSION, OPSET = 10, 21


def _fitted(values: np.ndarray, storage: str = "int8") -> QType:
    top = float(np.max(np.abs(values))) or 1.0
    if storage == "uint8":  # [0, 1): a Softmax output
        return QType("uint8", float(np.float32(1 / 255)), 0)
    return QType("int8", float(np.float32(top / 110)), 0, schema="symmetric")


def typed_chain(name: str, nodes: list[onnx.NodeProto], inputs: dict[str, tuple[int, ...]],
                weights: dict[str, np.ndarray], plain: dict[str, np.ndarray], outputs: list[str],
                storages: dict[str, str] | None = None, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """(typed model, feeds of storage integers) for a chain of ``nodes``."""
    rng = np.random.default_rng(seed)
    reals = {n: rng.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
    constants = {**{n: w.astype(np.float32) for n, w in weights.items()}, **plain}
    float_graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in constants.items()])
    float_model = helper.make_model(float_graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                    ir_version=IR_VERSION)
    values = ReferenceEvaluator(float_model, new_ops=CORRECTED_OPS).run(None, reals, intermediate=True)
    storages = storages or {}
    types = {n: _fitted(v, storages.get(n, "int8")) for n, v in values.items() if n not in plain and v is not None}
    inits = []
    for n, w in weights.items():
        qt = types[n]
        inits.append(numpy_helper.from_array(np.clip(np.rint(w / qt.scale[0]), -127, 127).astype(np.int8), n))
    inits += [numpy_helper.from_array(v, n) for n, v in plain.items()]
    produced = [o for node in nodes for o in node.output if o not in outputs]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, 0, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, 0, values[n].shape) for n in outputs], inits,
        value_info=[helper.make_tensor_value_info(n, 0, values[n].shape) for n in produced])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    for n, qt in types.items():
        set_qtype(model, n, qt)
    feeds = {n: np.clip(np.rint(v / types[n].scale[0]), -127, 127).astype(np.int8) for n, v in reals.items()}
    return model, feeds


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32) * 0.4


def attention(seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    rng = np.random.default_rng(100 + seed)
    dim = 8
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="proj_q"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="proj_k"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="proj_v"),
        helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"),
        helper.make_node("Mul", ["scores", "inv_sqrt_d"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["ctx"], name="context"),
        helper.make_node("LayerNormalization", ["ctx", "gamma", "beta"], ["y"], name="norm", axis=-1),
    ]
    model, feeds = typed_chain("attention", nodes, {"x": (1, 6, dim)},
                               {"wq": _w(rng, dim, dim), "wk": _w(rng, dim, dim), "wv": _w(rng, dim, dim),
                                "inv_sqrt_d": np.array(1 / np.sqrt(dim), np.float32)},
                               {"gamma": (1 + 0.2 * rng.standard_normal(dim)).astype(np.float32),
                                "beta": (0.1 * rng.standard_normal(dim)).astype(np.float32)},
                               ["y"], {"probs": "uint8"}, seed)
    set_qtype(model, "kt", _type_of(model, "k"))  # a transpose keeps its input's type: an exact copy
    return model, feeds


def convolutions(seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    rng = np.random.default_rng(200 + seed)
    nodes = [
        helper.make_node("ConvTranspose", ["x", "wt", "bt"], ["up"], name="up", group=2, strides=[2, 2]),
        helper.make_node("Relu", ["up"], ["r"], name="relu"),
        helper.make_node("Relu", ["w_in"], ["w_act"], name="weight_relu"),
        helper.make_node("Conv", ["r", "w_act"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["c"], ["y"], name="hswish"),
    ]
    return typed_chain("convolutions", nodes, {"x": (1, 4, 3, 3), "w_in": (3, 4, 3, 3)},
                       {"wt": _w(rng, 4, 2, 3, 3), "bt": _w(rng, 4)}, {}, ["y"], seed=seed)


def gemm_concat_pad(seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    rng = np.random.default_rng(300 + seed)
    nodes = [
        helper.make_node("Relu", ["a"], ["a1"], name="relu_a"),
        helper.make_node("Tanh", ["b"], ["b1"], name="tanh_b"),
        helper.make_node("Gemm", ["a1", "b1", "c"], ["g"], name="gemm", transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Sigmoid", ["g"], ["h"], name="sigmoid"),
        helper.make_node("Concat", ["g", "h"], ["cat"], name="concat", axis=0),
        helper.make_node("Pad", ["cat", "pads"], ["padded"], name="pad"),
        helper.make_node("Div", ["padded", "divisor"], ["y"], name="div"),
    ]
    model, feeds = typed_chain("gemm_concat_pad", nodes, {"a": (3, 16), "b": (4, 16)},
                               {"c": _w(rng, 4)},
                               {"pads": np.array([1, 0, 0, 1], np.int64), "divisor": np.array(1.5, np.float32)},
                               ["y"], seed=seed)
    return model, feeds


def _type_of(model: onnx.ModelProto, name: str) -> QType:
    from onnx_qtypes.proto import quantized_tensors

    return quantized_tensors(model)[name]


CHAINS = {"attention": attention, "convolutions": convolutions, "gemm_concat_pad": gemm_concat_pad}
