"""Requantizing chains of depth 2 to 8 (issue 19, Deliver 5), each output judged by the chain rule.

A chain is a path of operators on a [1, 4, 4, 4] activation: Conv (3x3, padded), MatMul (on the last axis),
residual Add of the chain's input, Relu, LeakyRelu, Sigmoid, Tanh, HardSwish, AveragePool and MaxPool (3x3,
stride 1, padded), Transpose (exact, or into another type), Softmax. Every operator that computes a new value
writes a type of its own, fitted to what it computes (a few percent saturate); exact ones keep their input's
type. The tolerance of the output is not chosen here: onnx_qtypes.conformance.tolerance applies each operator's
class and carries the error along the path (t_y = e + floor(sum L_i t_i s_i / s_y) + 1, semantics.md#chains).

So that the output varies and the composition is tested, the data and weights are ones the chain rule's bound is
tight on: the input is smooth (a level per channel, ramps along the rows and columns, a little noise), so that
averaging keeps its range; each weight is a permutation of channels (Conv: the centre tap; MatMul: of the last
axis) with gains 0.6-1.2 of either sign plus a few small taps, so that its L1 norm, the bound's L, is close to how
much it really stretches the values. Each output step is no finer than what one input step moves it (L s_x), and
with such data that is still a step fine enough for the output to take many values: tests/test_chain_cases.py
holds every chain's expected output to that.
"""

from __future__ import annotations

import numpy as np

from .common import Spec, _storage_array, _storage_info

SHAPE = (1, 4, 4, 4)
EXACT = {"relu", "maxpool", "transpose"}  # keep the input's type: exact copy / select
RECIPES = {
    "conv-relu": ["conv", "relu"],
    "matmul-add": ["matmul", "add"],
    "conv-sigmoid-avgpool": ["conv", "sigmoid", "avgpool"],
    "matmul-tanh-transpose-add": ["matmul", "tanh", "transpose", "add"],
    "conv-relu-avgpool-matmul-add": ["conv", "relu", "avgpool", "matmul", "add"],
    "conv-leakyrelu-maxpool-conv-hardswish-transpose": ["conv", "leakyrelu", "maxpool", "conv", "hardswish",
                                                        "transpose"],
    "conv-relu-conv-add-sigmoid-avgpool-requant": ["conv", "relu", "conv", "add", "sigmoid", "avgpool", "requant"],
    "conv-relu-maxpool-matmul-tanh-avgpool-add-softmax": ["conv", "relu", "maxpool", "matmul", "tanh", "avgpool",
                                                          "add", "softmax"],
}
STORAGES = (("int8", "float32"), ("uint8", "float32"), ("int16", "float16"), ("int8", "float16"))

_NODES = {  # stage -> (op, extra inputs besides the activation, attributes)
    "conv": ("Conv", ("w",), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "matmul": ("MatMul", ("w",), {}),
    "add": ("Add", ("x",), {}),
    "relu": ("Relu", (), {}),
    "leakyrelu": ("LeakyRelu", (), {"alpha": 0.125}),
    "sigmoid": ("Sigmoid", (), {}),
    "tanh": ("Tanh", (), {}),
    "hardswish": ("HardSwish", (), {}),
    "avgpool": ("AveragePool", (), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}),
    "maxpool": ("MaxPool", (), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [1, 1]}),
    "transpose": ("Transpose", (), {"perm": [0, 1, 3, 2]}),
    "requant": ("Transpose", (), {"perm": [0, 1, 3, 2]}),
    "softmax": ("Softmax", (), {"axis": -1}),
}


def _float_stage(op: str, inputs: list[np.ndarray], attrs: dict) -> np.ndarray:
    """One operator on float64 reals (onnx.reference)."""
    from onnx import TensorProto, helper  # noqa: PLC0415
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415

    names = [f"i{k}" for k in range(len(inputs))]
    graph = helper.make_graph([helper.make_node(op, names, ["o"], **attrs)], "stage",
                              [helper.make_tensor_value_info(n, TensorProto.DOUBLE, v.shape) for n, v in zip(names, inputs)],
                              [helper.make_tensor_value_info("o", TensorProto.DOUBLE, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return np.asarray(ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0], np.float64)


def _lipschitz(stage: str, weight: np.ndarray | None) -> float:
    """How far one step of the chain's activation can move the stage's output, in reals per real (semantics.md#chains:
    the tolerance module's table; a weight's largest L1 norm over the outputs it feeds)."""
    from onnx_qtypes.conformance.tolerance import LIPSCHITZ  # noqa: PLC0415

    op, _, attrs = _NODES[stage]
    if op == "Conv":
        return float(np.abs(weight).reshape(weight.shape[0], -1).sum(axis=1).max())
    if op == "MatMul":
        return float(np.abs(weight).sum(axis=0).max())
    if op == "LeakyRelu":
        return max(1.0, abs(attrs["alpha"]))
    return float(LIPSCHITZ.get(op, 1))


def _fitted_symmetric(g, w: np.ndarray, axis: int):
    """A per-axis symmetric type for the weight reals ``w`` (scales with 5 significant bits: exact in every
    expressed type) and the stored values."""
    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.reference_ops.quant import quantize  # noqa: PLC0415

    info = _storage_info(g.weight_storage)
    moved = np.moveaxis(np.abs(w), axis, 0).reshape(w.shape[axis], -1).max(axis=1)
    scales = []
    for top in moved:
        target = float(top) / info.max
        exponent = int(np.floor(np.log2(target)))
        scales.append(float(int(np.ceil(target / 2.0 ** (exponent - 4))) * 2.0 ** (exponent - 4)))
    qtype = QType(g.weight_storage, scales, [0] * len(scales), axis=axis, schema="symmetric", expressed=g.expressed)
    return qtype, quantize(w, qtype)


def _weight_reals(g, op: str) -> np.ndarray:
    """A permutation of channels with gains of either sign (0.6-1.2) and three small taps per output; an unsigned
    symmetric weight (zero point 0) holds no negative value, so there gains and taps are positive."""
    n = SHAPE[1]
    signed = _storage_info(g.weight_storage).min < 0
    sign = (lambda k: g.rng.choice([-1.0, 1.0], k)) if signed else (lambda k: np.ones(k))
    perm, gains = g.rng.permutation(n), sign(n) * g.rng.permutation(np.linspace(0.6, 1.2, n))
    if op == "Conv":  # (out, in, 3, 3): the centre tap of one input channel
        w = np.zeros((n, n, 3, 3))
        for o in range(n):
            w[o, perm[o], 1, 1] = gains[o]
            for _ in range(3):
                w[o, g.rng.integers(n), g.rng.integers(3), g.rng.integers(3)] += sign(1)[0] * g.rng.uniform(0.02, 0.06)
        return w
    w = np.zeros((n, n))  # MatMul (K, N) on the last axis: column j reads row perm[j]
    for j in range(n):
        w[perm[j], j] = gains[j]
        for _ in range(2):
            w[g.rng.integers(n), j] += sign(1)[0] * g.rng.uniform(0.02, 0.06)
    return w


def _input_reals(g) -> np.ndarray:
    """A smooth activation in about [-2, 2]: a level per channel, ramps along rows and columns, a little noise."""
    _, c, h, w = SHAPE
    levels = g.rng.permutation(np.linspace(-0.8, 0.8, c))
    return (levels[None, :, None, None] + np.linspace(-0.2, 0.2, h)[None, None, :, None]
            + np.linspace(-1.2, 1.2, w)[None, None, None, :] + g.rng.normal(0, 0.05, SHAPE))


def _chains(rm):
    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.reference_ops.quant import dequantize, quantize  # noqa: PLC0415

    T = rm.T

    def chain(stages):
        def build(g, v):
            x_reals = _input_reals(g)
            x = g.fit(x_reals)
            data = quantize(x_reals, x)
            reals = {"x": dequantize(data, x)}
            types = {"x": x}
            inputs, nodes, hidden = [T("x", SHAPE, x)], [], []
            current = "x"
            for k, stage in enumerate(stages):
                op, extra, attrs = _NODES[stage]
                out = "y" if k == len(stages) - 1 else f"t{k}_{stage}"
                operands = [current]
                for name in extra:
                    if name == "w":  # a per-axis symmetric weight of its own
                        w, stored = _fitted_symmetric(g, _weight_reals(g, op), 0 if op == "Conv" else 1)
                        wname = f"w{k}"
                        inputs.append(T(wname, stored.shape, w, value=stored))
                        reals[wname] = dequantize(stored, w)
                        operands.append(wname)
                    else:
                        operands.append(name)  # the residual: the chain's input
                value = _float_stage(op, [reals[n] for n in operands], attrs)
                # an output step no finer than what one input step moves it (L s_x): the chain rule's bound then
                # grows by a step or two per operator instead of multiplying along the path
                reach = _lipschitz(stage, reals.get(operands[1]) if len(operands) > 1 else None) * max(
                    abs(s) for s in types[current].scale)
                if stage in EXACT:
                    qtype = types[current]
                elif stage == "softmax":  # [0, 1) in steps of 2^-k, no finer than the input's reach
                    step = max(2.0 ** -g.info.bits, 2.0 ** np.ceil(np.log2(reach)))
                    qtype = QType(g.storage, step, g.info.min, expressed=g.expressed)
                else:
                    qtype = g.fit(value, min_scale=reach)
                reals[out], types[out] = value, qtype
                nodes.append((op, operands, [out], dict(attrs)))
                if out != "y":
                    hidden.append(T(out, value.shape, qtype))
                current = out
            outputs = [T("y", reals["y"].shape, types["y"])]
            return Spec(nodes[0][0], inputs, outputs, {}, nodes=nodes, hidden=hidden, feeds={"x": _storage_array(data, x)},
                        features=("chain", f"depth-{len(stages)}"), anchor="chains",
                        note=" -> ".join(n[0] for n in nodes) + f" (depth {len(stages)}), judged by the chain rule")
        return build

    out = []
    for name, stages in RECIPES.items():
        for storage, expressed in STORAGES:
            out.append((f"chain-{name}-{storage}-{expressed}", storage, expressed, "chain", chain(stages)))
    return out
