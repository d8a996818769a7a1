"""QONNX corpus: small models quantized the way Brevitas exports them for FINN and hls4ml.

Each model is a float network whose activations and weights pass through
``Quant`` nodes of the ``qonnx.custom_op.general`` domain (inputs x, scale,
zero_point, bit_width; attributes signed, narrow, rounding_mode), built with
onnx.helper in that domain: the ``qonnx`` package executes them
(``qonnx.core.onnx_exec.execute_onnx``) but has no builder for single nodes.

- ``qonnx_models() -> dict[str, onnx.ModelProto]``: the models lift reads as
  quantized types (fresh copies on each call).
- ``refused_models() -> dict[str, tuple[onnx.ModelProto, str, str]]``: models
  with one Quant-family node lift must leave as it was: (model, node name, a
  word the warning must say).
- ``qonnx_feeds(model, seed) -> dict[str, np.ndarray]``: a deterministic input.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DOMAIN = "qonnx.custom_op.general"
IR_VERSION, OPSET = 10, 21


def _const(name: str, value, dtype=np.float32) -> TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []

    def quant(self, x: str, name: str, scale, zero_point, bits, *, signed=1, narrow=0, rounding_mode="ROUND",
              op: str = "Quant") -> str:
        self.inits += [_const(f"{name}_scale", scale), _const(f"{name}_zp", zero_point), _const(f"{name}_bits", bits)]
        self.nodes.append(helper.make_node(op, [x, f"{name}_scale", f"{name}_zp", f"{name}_bits"], [f"{name}_out"],
                                           name=name, domain=DOMAIN, signed=signed, narrow=narrow,
                                           rounding_mode=rounding_mode))
        return f"{name}_out"

    def weight(self, name: str, shape: list[int], std: float = 0.3) -> str:
        self.inits.append(_const(name, self.rng.normal(0, std, shape)))
        return name

    def op(self, op_type: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def model(self, name: str, inputs: dict[str, list[int]], output: str) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in inputs.items()],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], self.inits)
        model = helper.make_model(graph, ir_version=IR_VERSION,
                                  opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(DOMAIN, 1)])
        stand_in = onnx.ModelProto()  # Quant-family nodes keep their input's shape: Identity stands in
        stand_in.CopyFrom(model)
        for node in stand_in.graph.node:
            if node.domain == DOMAIN:
                del node.input[1:], node.attribute[:]
                node.op_type, node.domain = "Identity", ""
        inferred = onnx.shape_inference.infer_shapes(stand_in, strict_mode=True)
        del model.graph.output[:]  # declared with its shape, as Brevitas' export writes it
        model.graph.output.extend(inferred.graph.output)
        return model


def _mlp() -> onnx.ModelProto:
    """INT4 narrow input, per-column INT3 weights, UINT5 output: FINN's usual low-bit MLP."""
    b = _Builder(1)
    x = b.quant("x", "quant_in", 0.125, 0, 4, narrow=1)
    w = b.quant(b.weight("w", [16, 8]), "quant_w", np.linspace(0.05, 0.2, 8).reshape(1, 8), 0, 3, narrow=1)
    h = b.op("Relu", [b.op("Add", [b.op("MatMul", [x, w], "mm"), b.weight("bias", [8], 0.1)], "add")], "relu")
    y = b.quant(h, "quant_out", 0.0625, 0, 5, signed=0)
    return b.model("qonnx_mlp", {"x": [2, 16]}, y)


def _cnn() -> onnx.ModelProto:
    """Unsigned 6-bit input with zero point 3, per-channel INT5 conv weights, INT8 narrow activation, pooled."""
    b = _Builder(2)
    x = b.quant("x", "quant_in", 0.05, 3, 6, signed=0)
    w = b.quant(b.weight("w", [4, 3, 3, 3]), "quant_w", np.array([0.02, 0.04, 0.03, 0.05]).reshape(4, 1, 1, 1), 0, 5)
    c = b.op("Conv", [x, w], "conv", pads=[1, 1, 1, 1])
    r = b.quant(b.op("Relu", [c], "relu"), "quant_act", 0.03, 0, 8, narrow=1, op="IntQuant")
    y = b.op("GlobalAveragePool", [r], "pool")
    return b.model("qonnx_cnn", {"x": [1, 3, 6, 6]}, y)


def _wide() -> onnx.ModelProto:
    """12-bit signed (int16 storage) then 16-bit unsigned (uint16), per-tensor."""
    b = _Builder(3)
    x = b.quant("x", "quant_12", 0.001, 0, 12)
    s = b.op("Sigmoid", [x], "sigmoid")
    y = b.quant(s, "quant_u16", 1 / 65536, 0, 16, signed=0, rounding_mode="HALF_EVEN")
    return b.model("qonnx_wide", {"x": [3, 5]}, y)


def qonnx_models() -> dict[str, onnx.ModelProto]:
    return {"mlp": _mlp(), "cnn": _cnn(), "wide": _wide()}


def _one(name: str, **quant) -> onnx.ModelProto:
    b = _Builder(4)
    op = quant.pop("op", "Quant")
    scale, zp, bits = quant.pop("scale", 0.1), quant.pop("zero_point", 0), quant.pop("bits", 4)
    y = b.quant("x", name, scale, zp, bits, op=op, **quant)
    return b.model(name, {"x": [2, 4]}, b.op("Relu", [y], "relu"))


def _dynamic_scale() -> onnx.ModelProto:
    b = _Builder(5)
    b.nodes.append(helper.make_node("ReduceMax", ["x"], ["x_max"], name="x_max", keepdims=0))
    b.inits += [_const("dq_zp", 0), _const("dq_bits", 8)]
    b.nodes.append(helper.make_node("Quant", ["x", "x_max", "dq_zp", "dq_bits"], ["dq_out"], name="dynamic",
                                    domain=DOMAIN, signed=1, narrow=0, rounding_mode="ROUND"))
    return b.model("dynamic", {"x": [2, 4]}, b.op("Relu", ["dq_out"], "relu"))


def _bipolar() -> onnx.ModelProto:
    b = _Builder(6)
    b.inits.append(_const("bp_scale", 0.5))
    b.nodes.append(helper.make_node("BipolarQuant", ["x", "bp_scale"], ["bp_out"], name="bipolar", domain=DOMAIN))
    return b.model("bipolar", {"x": [2, 4]}, b.op("Relu", ["bp_out"], "relu"))


def _trunc() -> onnx.ModelProto:
    b = _Builder(7)
    x = b.quant("x", "quant_in", 0.125, 0, 8)
    b.inits += [_const(n, v) for n, v in (("t_scale", 0.125), ("t_zp", 0), ("t_in_bits", 8), ("t_out_bits", 4))]
    b.nodes.append(helper.make_node("Trunc", [x, "t_scale", "t_zp", "t_in_bits", "t_out_bits"], ["t_out"],
                                    name="trunc", domain=DOMAIN, rounding_mode="FLOOR"))
    return b.model("trunc", {"x": [2, 4]}, b.op("Relu", ["t_out"], "relu"))


def refused_models() -> dict[str, tuple[onnx.ModelProto, str, str]]:
    return {
        "floor": (_one("floor", rounding_mode="FLOOR"), "floor", "rounding_mode"),
        "ceil": (_one("ceil", rounding_mode="CEIL"), "ceil", "rounding_mode"),
        "bits40": (_one("bits40", bits=40), "bits40", "bit width"),
        "bits1": (_one("bits1", bits=1), "bits1", "bit width"),
        "fractional_zp": (_one("fractional_zp", zero_point=0.5), "fractional_zp", "zero point"),
        "zp_outside": (_one("zp_outside", zero_point=20, bits=4), "zp_outside", "zero point"),
        "two_axes": (_one("two_axes", scale=np.full((2, 4), 0.1)), "two_axes", "one axis"),
        "dynamic_scale": (_dynamic_scale(), "dynamic", "not a constant"),
        "bipolar": (_bipolar(), "bipolar", "BipolarQuant"),
        "trunc": (_trunc(), "trunc", "Trunc"),
    }


def qonnx_feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs spread over a few quantization ranges, with exact ties (k + 0.5 steps) among them."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        values = rng.normal(0, 1.5, shape).astype(np.float32)
        values.flat[::3] = (np.round(values.flat[::3] * 8) + 0.5) / 8  # ties for the 1/8 scales
        feeds[vi.name] = values
    return feeds
