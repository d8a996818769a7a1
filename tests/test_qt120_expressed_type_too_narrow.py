"""QT120 expressed-type-too-narrow: the rule against a brute-force reading of its criterion over every stored
integer, the soundness of its bound, and a QDQ file (the rule is not typed-only)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import onnx
import pytest
from checker_models import one_tensor
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, diagnose
from onnx_qtypes.checker import get_rule, iter_diagnostics, select_rules

RULES = select_rules(["QT120"])
DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
PRECISION = {"float32": 24, "float16": 11, "bfloat16": 8}
# scales with few significant bits, so that (q - zero_point) * scale is exact in float64 and rounds once to each type
SCALES = (0.375, 2.0**-7, 2.0, 768.0, 511.75, 511.875)
STORAGES = {"int4": (-8, 7), "uint4": (0, 15), "int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
            "uint16": (0, 65535)}


def _combinations():
    for (storage, (lo, hi)), expressed, scale in itertools.product(STORAGES.items(), DTYPES, SCALES):
        for zero_point in sorted({lo, min(max(0, lo), hi), (lo + hi + 1) // 2, hi}):
            yield storage, lo, hi, expressed, scale, zero_point


def _fires(q: QType) -> bool:
    return any(d.rule == "QT120" for d in iter_diagnostics(one_tensor(q), rules=RULES))


def test_the_rule_is_a_warning_checked_on_qdq_files_too():
    rule = get_rule("QT120")
    assert rule.name == "expressed-type-too-narrow" and rule.severity.value == "warning" and not rule.typed_only


@pytest.mark.parametrize("storage,lo,hi,expressed,scale,zero_point", list(_combinations()),
                         ids=lambda v: str(v))
def test_agrees_with_every_stored_integer(storage, lo, hi, expressed, scale, zero_point):
    """Fires exactly when the criterion holds, computed over every q of the range; when it stays quiet, every
    dequantized value rounded to the expressed type is finite and less than half a step from the exact one."""
    p, dtype = PRECISION[expressed], DTYPES[expressed]
    exact = (np.arange(lo, hi + 1, dtype=np.float64) - zero_point) * scale  # exact: few significant bits
    m = int(np.abs(np.arange(lo, hi + 1) - zero_point).max())
    pow2 = scale in (2.0**-7, 2.0)
    with np.errstate(over="ignore"):
        rounded = exact.astype(np.float32).astype(dtype).astype(np.float64)  # float32 is exact here: one rounding
    too_wide = m > 2 ** (p - 1) and not (pow2 and m <= 2**p)
    overflows = bool(np.isinf(rounded).any())
    fires = _fires(QType(storage, scale, zero_point, expressed=expressed))
    assert fires == (too_wide or overflows), (m, too_wide, overflows)
    if not fires:
        assert np.all(np.abs(rounded - exact) < scale / 2)


@pytest.mark.parametrize("storage,expressed,schema,fires", [
    ("int16", "float16", "asymmetric", True),
    ("int16", "float16", "symmetric_pow2_scale", True),  # m = 32768 > 2^11
    ("int8", "float16", "asymmetric", False),  # m = 255 <= 2^10
    ("int8", "bfloat16", "asymmetric", True),  # the zero point may be -128: m = 255
    ("int8", "bfloat16", "symmetric", False),  # m = 128
    ("uint8", "bfloat16", "symmetric", True),  # zero point 0 on uint8: m = 255
    ("uint8", "bfloat16", "asymmetric", True),  # the zero point may be 0: m = 255
    ("uint8", "bfloat16", "asymmetric_pow2_scale", False),  # m = 255 <= 2^8 with a power-of-two scale
    ("uint16", "float32", "asymmetric", False),
    ("int32", "bfloat16", "asymmetric", False),  # not checked: biases and accumulators
])
def test_dynamic_types(storage, expressed, schema, fires):
    assert _fires(QType(storage, expressed=expressed, schema=schema)) == fires


def _qdq_file(scale_type: type, zero_point_type: type, float_type: int) -> onnx.ModelProto:
    """x -> QuantizeLinear -> Transpose -> DequantizeLinear -> y, as a quantizer writes it (no quantized types)."""
    inits = [numpy_helper.from_array(np.array(0.375, scale_type), "s"),
             numpy_helper.from_array(np.array(0, zero_point_type), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["x_q"], name="q"),
             helper.make_node("Transpose", ["x_q"], ["t_q"], name="t"),
             helper.make_node("DequantizeLinear", ["t_q", "s", "z"], ["y"], name="dq")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", float_type, [2, 3])],
                              [helper.make_tensor_value_info("y", float_type, [3, 2])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_a_qdq_file_with_int16_and_float16_scales_is_warned_at_the_scale_input():
    found = diagnose(_qdq_file(np.float16, np.int16, TensorProto.FLOAT16))
    assert found.form == "qdq"
    mine = [d for d in found.diagnostics if d.rule == "QT120"]
    assert mine and {d.location.tensor for d in mine} == {"s"}
    assert mine[0].location.pointer == "/graph/node/0/input/1" and mine[0].location.node == "q"
    assert "int16:float16" in mine[0].message and "float32 expressed type" in mine[0].message


@pytest.mark.parametrize("scale_type,zero_point_type,float_type", [
    (np.float32, np.int16, TensorProto.FLOAT), (np.float16, np.int8, TensorProto.FLOAT16)])
def test_a_qdq_file_with_float32_scales_or_8_bits_is_not(scale_type, zero_point_type, float_type):
    found = diagnose(_qdq_file(scale_type, zero_point_type, float_type))
    assert found.form == "qdq" and not [d for d in found.diagnostics if d.rule == "QT120"]
