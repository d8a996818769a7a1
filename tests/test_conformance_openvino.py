"""The openvino backend on committed execution cases: what our harness guarantees (feeds handed
over, 4-bit tensors packed the way OpenVINO packs them, outputs returned widened by the case's
names, every case ending in one of the four outcomes), never what OpenVINO's kernels compute."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13 as ops

from onnx_qtypes.conformance import load_cases, run_suite
from onnx_qtypes.conformance.backends import BackendError, OpenVinoBackend, pack_sub_byte, unpack_sub_byte
from onnx_qtypes.conformance.judging import ERROR, OUTCOMES

# int8 cases, and 4-bit graph inputs: int4 in and out (Transpose), int4 in / float out
# (DequantizeLinear), uint4 in and out through an element-wise node (Relu)
CASE_IDS = (
    "relu-int8-float32-per-tensor",
    "transpose-int8-float32-per-tensor",
    "dequantize_linear-int8-float32-per-tensor",
    "transpose-int4-float32-per-tensor",
    "dequantize_linear-int4-float32-per-axis",
    "relu-uint4-float32-per-tensor",
)
FOUR_BIT = [i for i in CASE_IDS if "int4" in i]
PLUGIN_ERROR = "RuntimeError: Exception from src/"  # how an exception from OpenVINO's C++ code reads


@pytest.fixture(scope="module")
def backend() -> OpenVinoBackend:
    return OpenVinoBackend()


@pytest.fixture(scope="module")
def cases() -> dict:
    by_id = {c.id: c for c in load_cases()}
    missing = [i for i in CASE_IDS if i not in by_id]
    assert not missing, f"committed cases renamed or removed: {missing}"
    return {i: by_id[i] for i in CASE_IDS}


def test_committed_cases_end_in_an_outcome_and_4_bit_inputs_reach_openvino(backend, cases):
    results = {r.id: r for r in run_suite(backend, cases=cases.values(), jobs=2)}
    assert sorted(results) == sorted(CASE_IDS)
    assert all(r.outcome in OUTCOMES and r.backend == "openvino" for r in results.values())
    for case_id in FOUR_BIT:  # an error may only be OpenVINO's own (e.g. "unsupported src_prc: u4")
        r = results[case_id]
        assert r.outcome != ERROR or r.message.startswith(PLUGIN_ERROR), r.message


@pytest.mark.parametrize("case_id", [i for i in CASE_IDS if i != "relu-uint4-float32-per-tensor"])
def test_outputs_come_back_by_name_widened_with_the_expected_shapes(backend, cases, case_id):
    case = cases[case_id]
    try:
        actual = backend.run(backend.prepare(case), case.feeds())
    except RuntimeError as exc:  # the plugin may refuse a 4-bit graph; our harness raises nothing else
        assert str(exc).startswith("Exception from src/"), exc
        pytest.skip(f"OpenVINO's CPU plugin: {str(exc).splitlines()[-1]}")
    expected = case.expected()
    assert list(actual) == list(case.outputs)
    for name, value in expected.items():
        assert isinstance(actual[name], np.ndarray)
        assert (actual[name].shape, actual[name].dtype) == (value.shape, value.dtype), name


@pytest.mark.parametrize("type_name, bits, signed", [("i4", 4, True), ("u4", 4, False), ("u2", 2, False)])
def test_sub_byte_packing_round_trips_through_an_ov_tensor_in_openvinos_order(backend, type_name, bits, signed):
    element_type = getattr(ov.Type, type_name)
    low = -(1 << (bits - 1)) if signed else 0
    values = np.arange(low, low + (1 << bits), dtype=np.int8 if signed else np.uint8)
    values = np.concatenate([values, values[::-1], values[:3]])  # every value, an odd count: 35 or 11
    values = values.reshape(5, 7) if bits == 4 else values
    port = ops.parameter(list(values.shape), element_type).output(0)
    tensor = backend._to_ov("x", port, values)
    assert (tensor.get_element_type(), list(tensor.get_shape())) == (element_type, list(values.shape))
    assert tensor.get_byte_size() == -(-values.size * bits // 8)
    # the bytes OpenVINO itself makes of these values (its Constant packs them)
    own = np.asarray(ops.constant(values.reshape(-1), dtype=element_type).data).view(np.uint8)
    ours = np.asarray(tensor.data).reshape(-1).view(np.uint8)
    assert ours.tobytes() == own.tobytes()
    back = backend._from_ov("x", tensor)
    assert back.dtype == values.dtype and np.array_equal(back, values)


def test_packing_puts_element_0_in_the_low_bits():
    assert pack_sub_byte(np.array([1, 2, -1], np.int8), 4, True).tolist() == [0x21, 0x0F]
    assert pack_sub_byte(np.array([1, 2, 3, 0, 2], np.uint8), 2, False).tolist() == [0x39, 0x02]
    assert unpack_sub_byte(np.array([0x21, 0x0F], np.uint8), 4, True, (3,)).tolist() == [1, 2, -1]


def test_packing_refuses_values_the_bits_cannot_carry():
    with pytest.raises(BackendError, match="outside"):
        pack_sub_byte(np.array([8], np.int8), 4, True, "x")
    with pytest.raises(BackendError, match="outside"):
        pack_sub_byte(np.array([16], np.uint8), 4, False, "x")
