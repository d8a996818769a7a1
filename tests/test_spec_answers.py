"""The answers proposal/spec/semantics.md and types.md give to the review's questions hold in the reference.

Each test names the anchor whose statement it holds the reference to; the conformance cases hold other runtimes
to the same statements.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from checker_models import Graph, _function_body_reference, _quantized_with_float
from onnx import TensorProto, numpy_helper

import onnx_qtypes
from onnx_qtypes import QType
from onnx_qtypes.proto.model import read_view, write_view
from onnx_qtypes.reference_ops import ReferenceEvaluator, quant
from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.reference_ops.errors import FeedError


def _identity(x: QType, y: QType, shape=(4,)):
    return Graph("g").input("x", shape, x).node("Identity", ["x"], ["y"], name="id").output("y", shape, y).build()


# --- semantics.md#calling-convention ------------------------------------------------------------------------


def test_a_dynamic_input_fed_as_storage_is_read_with_its_companions():
    model = _identity(QType("int8"), QType("int8", 0.25, 0))
    out = ReferenceEvaluator(model).run(None, {"x": np.array([4, -8, 0, 127], np.int8),
                                                "x.scale": np.array([0.5], np.float32),
                                                "x.zero_point": np.array([2], np.int8)})[0]
    # reals 1, -5, -1, 62.5 requantized to scale 0.25: 4, -20, -4, 127 (saturated)
    assert out.tolist() == [4, -20, -4, 127]


def test_a_dynamic_input_fed_as_reals_is_quantized_by_its_schema():
    model = _identity(QType("int8", schema="symmetric"), QType("int8", 0.25, 0))
    x = np.array([1.0, -2.54, 0.5, 0.0], np.float32)
    out = ReferenceEvaluator(model).run(None, {"x": x})[0]
    resolved = quant.dynamic_parameters(x, QType("int8", schema="symmetric"))
    want = quant.quantize(quant.dequantize(quant.quantize(x, resolved), resolved), QType("int8", 0.25, 0))
    assert out.tolist() == want.tolist() and resolved.zero_point == (0,)


def test_a_dynamic_output_carries_its_parameters():
    model = _identity(QType("int8", 0.5, 0), QType("uint8"))
    out = ReferenceEvaluator(model).run(None, {"x": np.array([-4, 0, 2, 10], np.int8)})[0]
    # reals -2 .. 5: scale 7/255, zero point round(2 / (7/255)) = 73
    assert out.qtype.scale == (float(np.float32(7) / np.float32(255)),) and out.qtype.zero_point == (73,)
    assert out.tolist() == [0, 73, 109, 255]


@pytest.mark.parametrize(("scale", "zero_point", "message"), [
    (np.array([-0.5], np.float32), None, "negative scale"),
    (np.array([0.5], np.float32), np.array([1], np.int8), "schema symmetric"),  # a zero point the schema forbids
    (np.array([0.5, 0.5], np.float32), None, "one value"),
])
def test_companions_that_form_no_valid_type_are_refused(scale, zero_point, message):
    model = _identity(QType("int8", schema="symmetric"), QType("int8", 0.25, 0))
    feeds = {"x": np.array([1, 2, 3, 4], np.int8), "x.scale": scale}
    if zero_point is not None:
        feeds["x.zero_point"] = zero_point
    with pytest.raises(FeedError, match=message):
        ReferenceEvaluator(model).run(None, feeds)


# --- types.md#dynamic: scale_tensor with an empty scale is static -------------------------------------------


def test_a_type_with_scale_tensor_and_no_listed_scale_is_static():
    g = Graph("g").init("w", np.arange(12, dtype=np.int8).reshape(4, 3), QType("int8", [0.5] * 4, [1] * 4, axis=0))
    model = g.node("Identity", ["w"], ["y"], name="id").output("y", (4, 3)).build()
    for vi in model.graph.value_info:
        if vi.name == "w":  # scales by reference, zero points still listed
            view = read_view(vi.type.tensor_type)
            del view.quantization.scale[:]
            view.quantization.scale_tensor, view.quantization.version = "w_scale", 2
            write_view(vi.type.tensor_type, view)
    model.graph.initializer.append(numpy_helper.from_array(np.full(4, 0.5, np.float32), "w_scale"))
    assert not onnx_qtypes.diagnose(model).diagnostics  # no QT113: zero points on a static type
    qtype = onnx_qtypes.get_qtype(model, "w")
    assert not qtype.is_dynamic and qtype.scale == (0.5,) * 4
    real = ReferenceEvaluator(model).run(None, {})[0]
    assert real[0].tolist() == [-0.5, 0.0, 0.5]


# --- semantics.md#mixed-expressed (QT305) -----------------------------------------------------------------


@pytest.mark.parametrize(("b_type", "c_type", "fires"), [
    (TensorProto.FLOAT, TensorProto.FLOAT16, True),
    (TensorProto.FLOAT16, TensorProto.FLOAT, True),
    (TensorProto.FLOAT16, TensorProto.FLOAT16, False),
])
def test_a_quantized_operand_stands_for_its_expressed_type(b_type, c_type, fires):
    found = [d.rule for d in onnx_qtypes.diagnose(_quantized_with_float(b_type, c_type)).diagnostics]
    assert ("QT305" in found) == fires


# --- types.md#references: a function body lists its parameters (QT117) ------------------------------------


def test_a_function_body_cannot_name_the_callers_initializers():
    assert "QT117" in [d.rule for d in onnx_qtypes.diagnose(_function_body_reference(True)).diagnostics]
    assert not onnx_qtypes.diagnose(_function_body_reference(False)).diagnostics


# --- semantics.md#nan and #saturate -----------------------------------------------------------------------


def test_nan_is_stored_as_the_zero_point_and_infinities_saturate():
    q = quant.quantize(np.array([np.nan, np.inf, -np.inf, 1.0]), QType("int8", 0.5, -3))
    assert q.tolist() == [-3, 127, -128, -1]
    negative = quant.quantize(np.array([np.inf, -np.inf]), QType("int8", -0.5, 0))
    assert negative.tolist() == [-128, 127]  # a negative scale reverses the order


def test_float8_storage_keeps_nan_and_saturate_0_overflows():
    t = QType("float8e4m3fn", 1.0, 0)
    assert np.isnan(quant.quantize(np.array([np.nan]), t).astype(np.float64)).all()
    assert quant.quantize(np.array([1e6]), t).astype(np.float64).tolist() == [448.0]
    assert np.isnan(quant.quantize(np.array([1e6]), t, saturate=False).astype(np.float64)).all()
    e5m2 = quant.quantize(np.array([-1e6]), QType("float8e5m2", 1.0, 0), saturate=False)
    assert e5m2.astype(np.float64).tolist() == [-np.inf]
    assert e5m2.dtype == ml_dtypes.float8_e5m2


# --- semantics.md#all-zero --------------------------------------------------------------------------------


def test_an_all_zero_group_stores_the_zero_point_whatever_the_scale():
    resolved = quant.dynamic_parameters(np.zeros(5), QType("uint8"))
    assert quant.quantize(np.zeros(5), resolved).tolist() == [0] * 5
    other = resolved.replace(scale=(1.0,))  # onnxruntime's choice: the stored values are the same
    assert quant.quantize(np.zeros(5), other).tolist() == [0] * 5


# --- types.md#versioning: a field of a later version than the type declares is refused -----------------------


@pytest.mark.parametrize("version", [None, 2])
def test_a_field_of_a_later_version_than_declared_is_refused(version):
    """Version 2 added scale_tensor, version 3 offset: a type declaring an earlier version (absent: 1) that uses one
    is refused by the checker (QT115, naming the field) and by lower, in both directions alike."""
    g = Graph("g").init("w", np.arange(12, dtype=np.int8).reshape(4, 3), QType("int8", [0.5] * 4, [1] * 4, axis=0))
    model = g.node("Identity", ["w"], ["y"], name="id").output("y", (4, 3)).build()
    field = "scale_tensor" if version is None else "offset"
    for vi in model.graph.value_info:
        if vi.name == "w":
            view = read_view(vi.type.tensor_type)
            if version is None:
                del view.quantization.scale[:]
                view.quantization.scale_tensor = "w_scale"
                view.quantization.ClearField("version")
            else:
                view.quantization.offset[:] = [0.25] * 4
                view.quantization.version = version
            write_view(vi.type.tensor_type, view)
    model.graph.initializer.append(numpy_helper.from_array(np.full(4, 0.5, np.float32), "w_scale"))
    found = [d for d in onnx_qtypes.diagnose(model).diagnostics if d.rule == "QT115"]
    assert found and field in found[0].message and "belongs to extension version" in found[0].message
    with pytest.raises(LowerError, match=field):
        onnx_qtypes.lower(model)
