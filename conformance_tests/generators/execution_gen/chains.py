"""Requantizing chains of depth 2 to 8 (issue 19, Deliver 5), each output judged by the chain rule.

A chain is a path of operators on a [1, 4, 4, 4] activation: Conv (3x3, padded), MatMul (on the last axis),
residual Add of the chain's input, Relu, LeakyRelu, Sigmoid, Tanh, HardSwish, AveragePool and MaxPool (3x3,
stride 1, padded), Transpose (exact, or into another type), Softmax. Every operator that computes a new value
writes a type of its own, fitted to what it computes (a few percent saturate); exact ones keep their input's
type. The tolerance of the output is not chosen here: onnx_qtypes.conformance.tolerance applies each operator's
class and carries the error along the path (t_y = e + floor(sum L_i t_i s_i / s_y) + 1, semantics.md#chains).
"""

from __future__ import annotations

import numpy as np

from .common import Spec, _storage_array

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


def _chains(rm):
    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.reference_ops.quant import dequantize  # noqa: PLC0415

    T = rm.T

    def chain(stages):
        def build(g, v):
            x = g.q()
            data = g.data(x, SHAPE)
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
                        shape = (4, 4, 3, 3) if op == "Conv" else (4, 4)
                        w = g.weight(shape, 0 if op == "Conv" else 1)
                        wname = f"w{k}"
                        inputs.append(T(wname, shape, w, value=g.data(w, shape)))
                        reals[wname] = dequantize(inputs[-1].value, w)
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
                        features=("chain", f"depth-{len(stages)}"), anchor="one-step",
                        note=" -> ".join(n[0] for n in nodes) + f" (depth {len(stages)}), judged by the chain rule")
        return build

    out = []
    for name, stages in RECIPES.items():
        for storage, expressed in STORAGES:
            out.append((f"chain-{name}-{storage}-{expressed}", storage, expressed, "chain", chain(stages)))
    return out
