"""ConvInteger / MatMulInteger with static zero points and a standalone DynamicQuantizeLinear lift to typed tensors,
checked on ONNX's own node tests (``onnx.backend.test.case.node``): the lifted model runs in our reference and gives
ONNX's expected output, and the same as onnxruntime's unoptimized path on the original."""

from __future__ import annotations

import importlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, get_qtype
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.interop import lift_model
from onnx_qtypes.reference_ops import ReferenceEvaluator
from tests.corpus import run_onnxruntime

INTEGER_OPS = ("ConvInteger", "MatMulInteger")


def _cases(ops: tuple[str, ...], modules: tuple[str, ...]) -> dict:
    registry = importlib.import_module("onnx.backend.test.case.node")
    for module in modules:
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    found = [c for c in registry._NodeTestCases if c.model.graph.node[0].op_type in ops]  # noqa: SLF001
    if not found:  # collected already under another filter
        found = [c for op in ops for c in registry.collect_testcases(op) if c.model.graph.node[0].op_type == op]
    return {c.name: c for c in found}


INTEGER_CASES = _cases(INTEGER_OPS, ("convinteger", "matmulinteger"))
DQL_CASES = _cases(("DynamicQuantizeLinear",), ("dynamicquantizelinear",))


def _static(case, constant: tuple[str, ...]) -> tuple[onnx.ModelProto, dict[str, np.ndarray], np.ndarray]:
    """The node test with its zero points (and, with "weight", its B / W input) as initializers."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    (inputs, outputs), = case.data_sets
    values = dict(zip([i.name for i in model.graph.input], inputs))
    node = model.graph.node[0]
    names = [n for n in node.input[2:] if n] + ([node.input[1]] if "weight" in constant else [])
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(values[n]), n) for n in names)
    kept = [i for i in model.graph.input if i.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model, {i.name: np.asarray(values[i.name]) for i in kept}, np.asarray(outputs[0])


def test_the_node_tests_are_there():
    assert set(INTEGER_CASES) == {"test_convinteger_with_padding", "test_convinteger_without_padding",
                                  "test_matmulinteger"}
    assert len(DQL_CASES) == 3


@pytest.mark.parametrize("constant", [("zero_point",), ("zero_point", "weight")], ids=["zp", "zp+weight"])
@pytest.mark.parametrize("name", sorted(INTEGER_CASES))
def test_integer_node_test_lifts_to_the_float_operator_and_gives_onnx_s_output(name, constant):
    model, feeds, expected = _static(INTEGER_CASES[name], constant)
    result = lift_model(model)
    assert not result.warnings, result.warnings
    node = INTEGER_CASES[name].model.graph.node[0]
    assert [n.op_type for n in result.model.graph.node] == [node.op_type.replace("Integer", "")]
    assert get_qtype(result.model, node.output[0]) == QType("int32", 1.0, 0)
    zp = np.asarray(INTEGER_CASES[name].data_sets[0][0][2]).reshape(-1)  # A's zero point
    assert get_qtype(result.model, node.input[0]).zero_point == tuple(int(z) for z in zp)
    assert not [d for d in iter_diagnostics(result.model) if d.severity.name == "ERROR"]
    (actual,) = ReferenceEvaluator(result.model).run(None, feeds)
    assert np.asarray(actual).dtype == np.int32 and np.array_equal(np.asarray(actual), expected)
    if name != "test_convinteger_with_padding":  # onnxruntime 1.32's ConvInteger refuses per-channel zero points
        assert np.array_equal(run_onnxruntime(model, feeds, optimize=False)[node.output[0]], expected)


def _matmul_integer(*, b_zp_input: bool = False, also_cast_a: bool = False, add_after: bool = False,
                    cast_mul: bool = False) -> onnx.ModelProto:
    """y = MatMulInteger(a, B, 3, B_zp) on uint8 a [2, 4], B int8 [4, 3] constant; options break one condition."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.integers(-100, 100, (4, 3)).astype(np.int8), "B"),
             numpy_helper.from_array(np.asarray(3, np.uint8), "a_zp")]
    inputs = [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 4])]
    if b_zp_input:
        inputs.append(helper.make_tensor_value_info("b_zp", TensorProto.INT8, [3]))
    else:
        inits.append(numpy_helper.from_array(np.asarray([1, -2, 0], np.int8), "b_zp"))
    nodes = [helper.make_node("MatMulInteger", ["a", "B", "a_zp", "b_zp"], ["acc"], name="mmi")]
    outputs = [helper.make_tensor_value_info("acc", TensorProto.INT32, [2, 3])]
    if also_cast_a:
        nodes.append(helper.make_node("Cast", ["a"], ["af"], name="cast_a", to=TensorProto.FLOAT))
        outputs.append(helper.make_tensor_value_info("af", TensorProto.FLOAT, [2, 4]))
    if add_after:
        inits.append(numpy_helper.from_array(np.asarray([5, 6, 7], np.int32), "bias"))
        nodes.append(helper.make_node("Add", ["acc", "bias"], ["sum"], name="add_bias"))
        outputs = [helper.make_tensor_value_info("sum", TensorProto.INT32, [2, 3])] + outputs[1:]
    if cast_mul:  # the glue of dynamic quantization, with a static scale
        inits.append(numpy_helper.from_array(np.asarray(0.0625, np.float32), "s"))
        nodes += [helper.make_node("Cast", ["acc"], ["accf"], name="cast", to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["accf", "s"], ["y"], name="scale")]
        outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]
    graph = helper.make_graph(nodes, "mmi", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _a(seed: int = 0) -> dict[str, np.ndarray]:
    return {"a": np.random.default_rng(seed).integers(0, 256, (2, 4)).astype(np.uint8)}


def test_per_column_zero_points_and_the_cast_mul_glue_lift_and_run_as_onnxruntime():
    model = _matmul_integer(cast_mul=True)
    result = lift_model(model)
    assert not result.warnings
    assert [n.op_type for n in result.model.graph.node] == ["MatMul", "Cast", "Mul"]
    assert get_qtype(result.model, "B") == QType("int8", [1.0] * 3, [1, -2, 0], axis=1)
    for seed in range(3):
        (actual,) = ReferenceEvaluator(result.model).run(None, _a(seed))
        assert np.array_equal(actual, run_onnxruntime(model, _a(seed), optimize=False)["y"])


@pytest.mark.parametrize("kwargs, reason", [
    (dict(b_zp_input=True), "zero point 'b_zp' of B is not a constant (a graph input, or computed at run time)"),
    (dict(also_cast_a=True), "'a' is also read by Cast 'cast_a' (/graph/node/1) as plain integers"),
    (dict(add_after=True), "its int32 result 'acc' is read by Add 'add_bias' (/graph/node/1) as plain integers"),
], ids=["zero-point-input", "operand-read-as-integers", "result-read-as-integers"])
def test_an_integer_node_without_an_exact_typed_form_is_left_and_named_with_its_reason(kwargs, reason):
    result = lift_model(_matmul_integer(**kwargs))
    assert "MatMulInteger" in [n.op_type for n in result.model.graph.node]
    assert result.warnings == [f"MatMulInteger 'mmi' (/graph/node/0): {reason}; left as it was"]
    assert not result.typed_tensors


def _near_tie(x: np.ndarray, scale: np.float32) -> np.ndarray:
    """The semantics.md#quantize-precision near-tie elements of a float32 quotient x / scale."""
    q = x.astype(np.float64) / np.float64(scale)
    return np.abs(q - (np.floor(q) + 0.5)) <= np.abs(q) * 2.0 ** -24


@pytest.mark.parametrize("name", sorted(DQL_CASES))
def test_a_standalone_dynamic_quantize_linear_lifts_to_a_dynamic_type_and_runs(name):
    case = DQL_CASES[name]
    result = lift_model(case.model)
    assert not result.warnings
    assert get_qtype(result.model, "y") == QType("uint8")  # dynamic: parameters computed at run time
    (inputs, outputs), = case.data_sets
    y, scale, zero_point = ReferenceEvaluator(result.model).run(None, {"x": inputs[0]})
    assert scale == outputs[1] and zero_point == outputs[2]
    steps = np.abs(np.asarray(y).astype(np.int64) - outputs[0].astype(np.int64))
    assert steps.max() <= 1 and np.all(_near_tie(inputs[0], outputs[1])[steps == 1])  # one step on near-ties only
    ort = run_onnxruntime(case.model, {"x": inputs[0]}, optimize=False)["y"].astype(np.int64)
    ours = np.asarray(y).astype(np.int64)
    assert np.all((ours == ort) | (_near_tie(inputs[0], outputs[1]) & (np.abs(ours - ort) == 1)))


def test_a_dynamic_quantize_linear_whose_output_is_also_read_as_integers_stays():
    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], name="dql"),
         helper.make_node("Cast", ["y"], ["yf"], name="cast", to=TensorProto.FLOAT)],
        "dql", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in
         (("y", TensorProto.UINT8, [4]), ("yf", TensorProto.FLOAT, [4]), ("s", TensorProto.FLOAT, []),
          ("z", TensorProto.UINT8, []))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    result = lift_model(model)
    assert get_qtype(result.model, "y") is None and not result.typed_tensors
