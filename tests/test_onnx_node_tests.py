"""ONNX's own backend node tests for QuantizeLinear / DequantizeLinear, lifted to typed form and run by our
reference: every one (integer and float storage: float8, float4e2m1) must lift to a typed tensor and give
exactly the output ONNX ships with the test.

The tests come from the installed onnx package (``onnx.backend.test.case.node``, the code that writes
onnx/backend/test/data/node/test_*quantizelinear*): each is a one-node model with the quantization
parameters as graph inputs, which we make initializers (a typed model needs constant parameters)."""

from __future__ import annotations

import importlib

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from onnx_qtypes import get_qtype, lift
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.reference_ops import ReferenceEvaluator

OPS = ("QuantizeLinear", "DequantizeLinear")
FLOAT_STORAGE = {st.data_type for st in STORAGE_TYPES.values() if st.is_float}


def _node_tests() -> list:
    """onnx's node test cases of the two operators (their modules run ``expect`` on import)."""
    registry = importlib.import_module("onnx.backend.test.case.node")
    for module in ("quantizelinear", "dequantizelinear"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    found = [c for c in registry._NodeTestCases if c.model.graph.node[0].op_type in OPS]  # noqa: SLF001
    if not found:  # another test collected them already under an operator filter: collect afresh
        found = [c for op in OPS for c in registry.collect_testcases(op) if c.model.graph.node[0].op_type == op]
    return found


CASES = {c.name: c for c in _node_tests()}


def _with_constant_parameters(case) -> tuple[onnx.ModelProto, dict[str, np.ndarray], np.ndarray, str]:
    """The case's model with scale and zero point as initializers; (model, feeds, expected output, the
    quantized tensor's name)."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    (inputs, outputs), = case.data_sets
    graph, node = model.graph, model.graph.node[0]
    values = dict(zip([i.name for i in graph.input], map(_array, inputs)))
    parameters = [n for n in node.input[1:] if n]
    graph.initializer.extend(numpy_helper.from_array(np.asarray(values[n]), n) for n in parameters)
    kept = [i for i in graph.input if i.name not in parameters]
    del graph.input[:]
    graph.input.extend(kept)
    quantized = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
    return model, {i.name: values[i.name] for i in kept}, _array(outputs[0]), quantized


def _array(value) -> np.ndarray:
    """A data-set value: float8 / float4 ones are stored as TensorProtos."""
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)


def _same(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Equal values, NaN where NaN, of the same dtype (float8 / float4 compared as float64)."""
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    return bool(np.all((a == e) | (np.isnan(a) & np.isnan(e))))


def test_the_float_node_tests_are_there():
    floats = [n for n, c in CASES.items() if _storage_of(c) in FLOAT_STORAGE]
    assert {"test_quantizelinear_e4m3fn", "test_dequantizelinear_e5m2", "test_quantizelinear_float4e2m1",
            "test_dequantizelinear_float4e2m1"} <= set(floats)


def _storage_of(case) -> int:
    node = case.model.graph.node[0]
    source = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
    declared = {vi.name: vi.type.tensor_type.elem_type for vi in (*case.model.graph.input, *case.model.graph.output)}
    return declared[source]


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_test_lifts_to_typed_and_our_reference_agrees(name):
    model, feeds, expected, quantized = _with_constant_parameters(CASES[name])
    typed = lift(model)
    qtype = get_qtype(typed, quantized)
    assert qtype is not None, f"{name}: {quantized!r} stays untyped"
    assert qtype.storage_type.data_type == _storage_of(CASES[name])
    (actual,) = ReferenceEvaluator(typed).run(None, feeds)
    assert _same(np.asarray(actual), expected), f"{name}: got {actual!r}, onnx expects {expected!r}"
