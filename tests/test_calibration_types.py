"""Calibrated typed models: they pass the checker under generic and the chosen profile, follow the bias rule,
and their lowered QDQ form runs on onnxruntime close to the float model."""

from __future__ import annotations

import numpy as np
import pytest
from corpus import FLOAT_MODELS, calibration_samples, corpus_feeds, run_onnxruntime

from onnx_qtypes import get_qtype, lower, quantized_tensors
from onnx_qtypes.calibration import calibrate_model
from onnx_qtypes.checker import check_model
from onnx_qtypes.proto.schema import Schema


def _sqnr(reference: np.ndarray, approx: np.ndarray) -> float:
    noise = np.sum((reference.astype(np.float64) - approx) ** 2)
    return float(10 * np.log10(np.sum(reference.astype(np.float64) ** 2) / max(noise, 1e-30)))


def _samples(name: str, count: int = 32, seed: int = 11) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in FLOAT_MODELS[name]().graph.input}
    return [{n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()} for _ in range(count)]


def _lowered_output(typed, name: str) -> np.ndarray:
    qdq = lower(typed)
    qdq.ir_version = 10
    return run_onnxruntime(qdq, corpus_feeds(name), optimize=False)["y"]


@pytest.mark.parametrize("profile", ["generic", "tflite-int8", "symmetric-int8", "pow2-int8"])
@pytest.mark.parametrize("name", sorted(FLOAT_MODELS))
def test_typed_output_passes_generic_and_its_profile(name, profile):
    result = calibrate_model(FLOAT_MODELS[name](), _samples(name), per_channel=True,
                             profile=None if profile == "generic" else profile)
    assert result.typed
    check_model(result.model)  # raises ValidationError on any error
    check_model(result.model, profile=profile)
    reference = run_onnxruntime(FLOAT_MODELS[name](), corpus_feeds(name), optimize=False)["y"]
    assert _sqnr(reference, _lowered_output(result.model, name)) > 20.0


@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy", "mse"])
@pytest.mark.parametrize("schema", [s.name.lower() for s in Schema])
def test_every_schema_and_method_gives_a_valid_typed_model(method, schema):
    result = calibrate_model(FLOAT_MODELS["cnn"](), calibration_samples("cnn"), method=method, schema=schema)
    check_model(result.model)
    act = get_qtype(result.model, "r1")
    assert act.schema == Schema.parse(schema)
    assert act.statistics is not None and act.statistics.method == method


def test_biases_are_int32_with_input_times_weight_scale_and_zero_point_zero():
    result = calibrate_model(FLOAT_MODELS["cnn"](), calibration_samples("cnn"), per_channel=True)
    types = quantized_tensors(result.model)
    bias, weight, x = types["b2_quantized"], types["w2_quantized"], types["r1"]
    assert bias.storage == "int32" and set(bias.zero_point) == {0}
    assert weight.axis == 0 and len(weight.scale) == 4
    expected = np.float32(x.scale[0]) * np.asarray(weight.scale, np.float32)
    assert np.allclose(bias.scale, expected, rtol=1e-6)


def test_per_channel_weights_are_closer_than_per_tensor():
    name = "cnn"
    reference = run_onnxruntime(FLOAT_MODELS[name](), corpus_feeds(name), optimize=False)["y"]
    sqnr = {pc: _sqnr(reference, _lowered_output(calibrate_model(FLOAT_MODELS[name](), calibration_samples(name),
                                                                 per_channel=pc, activation="int16").model, name))
            for pc in (False, True)}
    assert sqnr[True] >= sqnr[False] - 0.5


@pytest.mark.parametrize("activation, weight", [("int8", "int4"), ("int16", "int8"), ("uint8", "int8"), ("uint8", "uint8")])
def test_storage_choices(activation, weight):
    result = calibrate_model(FLOAT_MODELS["mlp"](), calibration_samples("mlp"), activation=activation, weight=weight,
                             schema="symmetric" if activation == "int16" else "asymmetric")
    check_model(result.model)
    types = quantized_tensors(result.model)
    assert types["hr"].storage == activation
    assert types["w1_quantized"].storage == weight
    w = types["w1_quantized"]
    if weight.startswith("int"):  # symmetric signed weights use the narrow range
        lo = -(2 ** (int(weight[3:]) - 1)) + 1
        assert (w.storage_min, w.storage_max) == (lo, -lo)
    reference = run_onnxruntime(FLOAT_MODELS["mlp"](), corpus_feeds("mlp"), optimize=False)["y"]
    assert _sqnr(reference, _lowered_output(result.model, "mlp")) > (5.0 if weight == "int4" else 10.0)


def test_tflite_profile_fixes_softmax_output_and_shares_data_movement_parameters():
    result = calibrate_model(FLOAT_MODELS["attention"](), calibration_samples("attention"), profile="tflite-int8")
    probs = get_qtype(result.model, "probs")
    assert (probs.scale, probs.zero_point) == ((1 / 256,), (-128,))
    q, q4 = get_qtype(result.model, "q"), get_qtype(result.model, "q4")
    assert (q.scale, q.zero_point) == (q4.scale, q4.zero_point)


def test_float16_tensors_get_statistics_but_stay_float():
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "half", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    rng = np.random.default_rng(3)
    result = calibrate_model(model, [{"x": rng.normal(size=(2, 3)).astype(np.float32)} for _ in range(4)])
    check_model(result.model)
    types = quantized_tensors(result.model)
    assert "h" not in types and "r" not in types and result.statistics["h"].tensor.count == 24


def _data_movement_model(op: str):
    """a -> Mul 3 -> x -> op -> Sigmoid per output: the op moves a computed activation into a computing one."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name, values, dtype=np.int64):
        return numpy_helper.from_array(np.asarray(values, dtype), name)

    inits = [numpy_helper.from_array(np.array(3.0, np.float32), "three")]
    node_inputs, attrs, outputs = ["x"], {}, ["z"]
    extra = {
        "Reshape": (["x", "shape"], {}, [const("shape", [1, 16, 4])]),
        "Squeeze": (["x", "axes"], {}, [const("axes", [0])]),
        "Unsqueeze": (["x", "axes"], {}, [const("axes", [0])]),
        "Transpose": (["x"], {"perm": [0, 2, 3, 1]}, []),
        "Slice": (["x", "starts", "ends", "axes"], {}, [const("starts", [0]), const("ends", [2]), const("axes", [1])]),
        "Expand": (["x", "shape"], {}, [const("shape", [2, 4, 4, 4])]),
        "Tile": (["x", "repeats"], {}, [const("repeats", [1, 1, 1, 2])]),
        "DepthToSpace": (["x"], {"blocksize": 2}, []),
        "SpaceToDepth": (["x"], {"blocksize": 2}, []),
        "Gather": (["x", "idx"], {"axis": 1}, [const("idx", [0, 2])]),
        "GatherElements": (["x", "idx"], {"axis": 1}, [const("idx", np.zeros((1, 2, 4, 4)))]),
        "GatherND": (["x", "idx"], {}, [const("idx", [[0]])]),
        "MaxPool": (["x"], {"kernel_shape": [2, 2]}, []),
        "ReduceMax": (["x", "axes"], {}, [const("axes", [1])]),
        "ReduceMin": (["x", "axes"], {}, [const("axes", [1])]),
        "Resize": (["x", "", "scales"], {"mode": "nearest"}, [const("scales", [1, 1, 2, 2], np.float32)]),
        "Pad": (["x", "pads"], {}, [const("pads", [0, 0, 1, 1, 0, 0, 1, 1])]),
        "Split": (["x"], {"axis": 1, "num_outputs": 2}, []),
        "Concat": (["x", "s"], {"axis": 1}, []),
    }
    if op in extra:
        node_inputs, attrs, more = extra[op]
        inits += more
    if op == "Split":
        outputs = ["z", "z2"]
    nodes = [helper.make_node("Mul", ["a", "three"], ["x"]), helper.make_node("Sigmoid", ["a"], ["s"]),
             helper.make_node(op, node_inputs, outputs, **attrs)]
    nodes += [helper.make_node("Sigmoid", [o], [f"y{i}"]) for i, o in enumerate(outputs)]
    graph = helper.make_graph(nodes, op, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4, 4, 4])],
                              [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None)
                               for i in range(len(outputs))], inits)
    model = onnx.helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return onnx.shape_inference.infer_shapes(model, strict_mode=True), outputs  # the outputs' shapes


@pytest.mark.parametrize("op", sorted(__import__("onnx_qtypes.proto.data_movement", fromlist=["x"]).DATA_MOVEMENT))
def test_every_data_movement_operator_ties_its_tensors_so_qt401_holds(op):
    model, outputs = _data_movement_model(op)
    rng = np.random.default_rng(1)
    samples = [{"a": rng.normal(size=(1, 4, 4, 4)).astype(np.float32)} for _ in range(4)]
    result = calibrate_model(model, samples)
    assert [d for d in check_model(result.model) if d.rule == "QT401"] == []
    tied = ["x", *outputs] + (["s"] if op == "Concat" else [])
    types = {get_qtype(result.model, t) for t in tied}
    assert len(types) == 1 and None not in types, types
