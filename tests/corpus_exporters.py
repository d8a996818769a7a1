"""Models with the exact patterns PyTorch and Brevitas exporters write (neither is in the test extras).

Each builder reproduces a pattern observed in a real export (benchmarks/producer_corpus.py writes those files):

- ``torch_fx_qat(per_channel)``: PyTorch 2.13 ``prepare_qat_fx`` (FakeQuantize, observers disabled) exported by
  ``torch.onnx.export(..., dynamo=False, opset_version=17)``: zero points shared through ``Identity`` nodes of one
  int8 initializer, float weights quantized at run time by QuantizeLinear -> DequantizeLinear.
- ``brevitas_qcdq(bits)``: Brevitas 0.13.4 ``export_onnx_qcdq(..., dynamo=False)``: QuantizeLinear -> Clip(lo, hi) ->
  DequantizeLinear on activations (narrow or < 8-bit ranges), DequantizeLinear(Clip(int8 weight constant)) on
  weights, an int32 bias with its own DequantizeLinear.
- ``brevitas_qonnx()``: Brevitas 0.13.4 ``export_qonnx`` (torch's dynamo exporter): every Quant parameter an
  initializer that is also a graph input, and the bias quantized by a 32-bit ``Quant``.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG_SEED = 77


def _t(name: str, value, dtype) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _io(shape_in: list[int], shape_out: list[int]) -> tuple[list, list]:
    return ([helper.make_tensor_value_info("x", TensorProto.FLOAT, shape_in)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape_out)])


def torch_fx_qat(per_channel: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(RNG_SEED)
    w = rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)
    w_scale = (np.abs(w).reshape(4, -1).max(1) / 127).astype(np.float32) if per_channel else np.float32(np.abs(w).max() / 127)
    inits = [_t("act0.scale", 0.03, np.float32), _t("onnx::QuantizeLinear_96", 128, np.uint8),
             _t("c1.weight", w, np.float32), _t("c1.bias", rng.normal(0, 0.1, 4), np.float32),
             _t("c1.weight_fake_quant.scale", w_scale, np.float32),
             _t("onnx::QuantizeLinear_97", np.zeros(4 if per_channel else (), np.int8), np.int8),
             _t("act1.scale", 0.02, np.float32), _t("onnx::QuantizeLinear_101", 128, np.uint8)]
    axis = {"axis": 0} if per_channel else {}
    nodes = [
        helper.make_node("Identity", ["onnx::QuantizeLinear_97"], ["onnx::QuantizeLinear_99"]),
        helper.make_node("Identity", ["onnx::QuantizeLinear_101"], ["onnx::QuantizeLinear_102"]),
        helper.make_node("QuantizeLinear", ["x", "act0.scale", "onnx::QuantizeLinear_96"], ["xq"], name="/act0/QuantizeLinear"),
        helper.make_node("DequantizeLinear", ["xq", "act0.scale", "onnx::QuantizeLinear_96"], ["xd"], name="/act0/DequantizeLinear"),
        helper.make_node("QuantizeLinear", ["c1.weight", "c1.weight_fake_quant.scale", "onnx::QuantizeLinear_99"], ["wq"],
                         name="/c1/weight_fake_quant/QuantizeLinear", **axis),
        helper.make_node("DequantizeLinear", ["wq", "c1.weight_fake_quant.scale", "onnx::QuantizeLinear_99"], ["wd"],
                         name="/c1/weight_fake_quant/DequantizeLinear", **axis),
        helper.make_node("Conv", ["xd", "wd", "c1.bias"], ["c"], name="/c1/Conv", pads=[1] * 4),
        helper.make_node("QuantizeLinear", ["c", "act1.scale", "onnx::QuantizeLinear_102"], ["cq"], name="/act1/QuantizeLinear"),
        helper.make_node("DequantizeLinear", ["cq", "act1.scale", "onnx::QuantizeLinear_102"], ["y"], name="/act1/DequantizeLinear"),
    ]
    graph = helper.make_graph(nodes, "torch_jit", *_io([1, 3, 6, 6], [1, 4, 6, 6]), inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def brevitas_qcdq(bits: int) -> onnx.ModelProto:
    rng = np.random.default_rng(RNG_SEED + bits)
    lo, hi = -(2 ** (bits - 1)) + 1, 2 ** (bits - 1) - 1  # narrow signed weights; activations [0, 2^bits - 1] unsigned
    w = rng.integers(lo, hi + 1, (4, 3, 3, 3)).astype(np.int8)
    x_scale, w_scale = np.float32(0.05), np.float32(0.02)
    inits = [_t("x_scale", x_scale, np.float32), _t("zero_i8", 0, np.int8), _t("act_lo", -(2 ** (bits - 1)), np.int8),
             _t("act_hi", 2 ** (bits - 1) - 1, np.int8), _t("w_int", w, np.int8), _t("w_scale", w_scale, np.float32),
             _t("w_lo", lo, np.int8), _t("w_hi", hi, np.int8),
             _t("b_int", rng.integers(-500, 500, 4), np.int32), _t("b_scale", x_scale * w_scale, np.float32),
             _t("zero_i32", 0, np.int32), _t("r_scale", 0.04, np.float32), _t("zero_u8", 0, np.uint8),
             _t("r_lo", 0, np.uint8), _t("r_hi", 2 ** bits - 1, np.uint8)]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "zero_i8"], ["xq"], name="/inp/act_quant/export_handler/QuantizeLinear"),
        helper.make_node("Clip", ["xq", "act_lo", "act_hi"], ["xc"], name="/inp/act_quant/export_handler/Clip"),
        helper.make_node("DequantizeLinear", ["xc", "x_scale", "zero_i8"], ["xd"], name="/inp/act_quant/export_handler/DequantizeLinear"),
        helper.make_node("Clip", ["w_int", "w_lo", "w_hi"], ["wc"], name="/c1/weight_quant/export_handler/Clip"),
        helper.make_node("DequantizeLinear", ["wc", "w_scale", "zero_i8"], ["wd"], name="/c1/weight_quant/export_handler/DequantizeLinear"),
        helper.make_node("DequantizeLinear", ["b_int", "b_scale", "zero_i32"], ["bd"], name="/c1/bias_quant/export_handler/DequantizeLinear"),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], name="/c1/Conv", pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"], name="/r/act_quant/activation_impl/Relu"),
        helper.make_node("QuantizeLinear", ["r", "r_scale", "zero_u8"], ["rq"], name="/r/act_quant/export_handler/QuantizeLinear"),
        helper.make_node("Clip", ["rq", "r_lo", "r_hi"], ["rc"], name="/r/act_quant/export_handler/Clip"),
        helper.make_node("DequantizeLinear", ["rc", "r_scale", "zero_u8"], ["y"], name="/r/act_quant/export_handler/DequantizeLinear"),
    ]
    graph = helper.make_graph(nodes, "main_graph", *_io([1, 3, 6, 6], [1, 4, 6, 6]), inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def brevitas_qonnx() -> onnx.ModelProto:
    rng = np.random.default_rng(RNG_SEED + 100)
    x_scale, w_scale = np.float32(0.05), np.float32(0.02)
    inits = [_t("lifted_tensor_0", x_scale, np.float32), _t("lifted_tensor_1", 0.0, np.float32),
             _t("lifted_tensor_2", 8.0, np.float32), _t("slice_1", rng.normal(0, 0.3, (4, 3, 3, 3)), np.float32),
             _t("lifted_tensor_3", w_scale, np.float32), _t("c1.bias", rng.normal(0, 0.1, 4), np.float32),
             _t("lifted_tensor_6", x_scale * w_scale, np.float32), _t("lifted_tensor_8", 32.0, np.float32),
             _t("lifted_tensor_9", 0.04, np.float32)]
    quant = dict(domain="qonnx.custom_op.general", rounding_mode="ROUND")
    nodes = [
        helper.make_node("Quant", ["x", "lifted_tensor_0", "lifted_tensor_1", "lifted_tensor_2"], ["xq"], name="n0",
                         signed=1, narrow=0, **quant),
        helper.make_node("Quant", ["slice_1", "lifted_tensor_3", "lifted_tensor_1", "lifted_tensor_2"], ["wq"], name="n1",
                         signed=1, narrow=1, **quant),
        helper.make_node("Quant", ["c1.bias", "lifted_tensor_6", "lifted_tensor_1", "lifted_tensor_8"], ["bq"], name="n2",
                         signed=1, narrow=0, **quant),
        helper.make_node("Conv", ["xq", "wq", "bq"], ["c"], name="conv", pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Quant", ["r", "lifted_tensor_9", "lifted_tensor_1", "lifted_tensor_2"], ["y"], name="n3",
                         signed=0, narrow=0, **quant),
    ]
    inputs, outputs = _io([1, 3, 6, 6], [1, 4, 6, 6])
    inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in inits]  # dynamo lists them
    graph = helper.make_graph(nodes, "main_graph", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20),
                                                   helper.make_opsetid("qonnx.custom_op.general", 2)], ir_version=10)


def feeds(seed: int = 0) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).normal(0, 1.5, (1, 3, 6, 6)).astype(np.float32)}
