"""Gather from a quantized tensor into a float output (an embedding lookup): the integer kernel moves the codes with
their parameter indices and dequantizes only what it gathered (reference_ops/ops/gather.py ``rows``). It must give
the definition's values element for element: per-tensor, per-axis along and across the gathered axis, blocked,
4-bit, float16 expressed, constant and fed weights, negative indices; and onnxruntime's unoptimized session on the
lowered model (DequantizeLinear -> Gather, IR 10 / opset 21) must give them too."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto
from onnx_qtypes.reference_ops import ReferenceEvaluator
from reference_models import IR_VERSION, OPSET, T, run_onnxruntime, typed_model

from onnx_qtypes import QType, lower

SHAPE = (6, 4)
RNG_SEED = 23


def _scales(count: int) -> list[float]:
    """Distinct float32-exact scales over several binades (and one above 1): each parameter index tells."""
    return [2.0 ** -(k % 7) * (1 + (k % 3) / 4) for k in range(count)]


# (id, type of the weight, gather axis)
TYPES = [
    ("per-tensor-int8", QType("int8", 0.0625, 3), 0),
    ("per-tensor-uint8-float16", QType("uint8", 0.375, 131, expressed="float16"), 1),
    ("per-axis-along-gather-int8", QType("int8", _scales(6), [1, -2, 0, 3, -4, 5], axis=0), 0),
    ("per-axis-across-gather-int8", QType("int8", _scales(4), [1, -2, 0, 3], axis=1), 0),
    ("per-axis-along-gather-axis1-uint8", QType("uint8", _scales(4), [0, 17, 128, 255], axis=1), 1),
    ("per-axis-int4-float16", QType("int4", _scales(6), [0, -1, 2, -3, 4, -8], axis=0, expressed="float16"), 0),
    ("blocked-across-gather-int8", QType("int8", _scales(12), [0] * 12, axis=1, block_size=2), 0),
    ("blocked-along-gather-int8", QType("int8", _scales(8), [3] * 8, axis=0, block_size=3), 0),
]
# a fed 4-bit weight is left out: onnxruntime's numpy API has no int4 array to feed the lowered model's input
CASES = [pytest.param(qtype, axis, constant, id=f"{name}-{'initializer' if constant else 'fed'}")
         for name, qtype, axis in TYPES for constant in (True, False) if constant or qtype.storage_type.bits >= 8]


def _indices(axis: int) -> np.ndarray:
    """Every position of the gathered axis, each also by its negative index, and repeats."""
    n = SHAPE[axis]
    return np.array([[0, -1], [n - 1, -n], [1, 1], [-2, n - 2]], np.int64)


def _weight(qtype: QType) -> np.ndarray:
    storage = qtype.storage_type
    rng = np.random.default_rng(RNG_SEED)
    values = rng.integers(storage.min, storage.max + 1, SHAPE)
    values.reshape(-1)[:2] = [storage.min, storage.max]  # both ends of the storage range
    return values.astype(np.int8 if storage.min < 0 else np.uint8)  # sub-byte storage is fed widened


def _model(qtype: QType, axis: int, constant: bool):
    out_shape = list(SHAPE)
    out_shape[axis:axis + 1] = _indices(axis).shape
    weight = _weight(qtype)
    stored = weight.astype(qtype.storage_type.np_dtype)  # an initializer holds the storage type itself
    model = typed_model("Gather", [T("w", SHAPE, qtype, value=stored if constant else None),
                                   T("i", _indices(axis).shape, dtype=TensorProto.INT64)],
                        [T("y", tuple(out_shape), dtype=qtype.expressed_type.data_type)], axis=axis)
    feeds = {"i": _indices(axis)} if constant else {"i": _indices(axis), "w": weight}
    return model, feeds


@pytest.mark.parametrize("qtype, axis, constant", CASES)
def test_integer_rows_equal_the_definition_and_onnxruntime(qtype, axis, constant):
    model, feeds = _model(qtype, axis, constant)
    definitional = ReferenceEvaluator(model).run(None, feeds)[0]
    integer_evaluator = ReferenceEvaluator(model, kernels="integer")
    integer = integer_evaluator.run(None, feeds)[0]
    assert integer_evaluator.kernel_log == {"node": "integer"}  # the rows kernel ran, not a fallback
    assert definitional.dtype == integer.dtype == qtype.expressed_type.np_dtype
    assert definitional.shape == integer.shape
    # element for element, signed zeros included: the same reals rounded once to the expressed type
    assert np.array_equal(definitional.view(np.uint8), integer.view(np.uint8)), (definitional, integer)
    assert np.unique(definitional).size > 4  # a real lookup: rows differ

    lowered = lower(model)
    assert lowered.ir_version == IR_VERSION and {o.domain: o.version for o in lowered.opset_import}[""] == OPSET
    assert [n.op_type for n in lowered.graph.node] == ["DequantizeLinear", "Gather"]
    runtime = run_onnxruntime(lowered, feeds, optimize=False)[0]
    assert runtime.dtype == definitional.dtype and runtime.shape == definitional.shape
    assert np.array_equal(runtime.view(np.uint8), definitional.view(np.uint8)), (runtime, definitional)


def test_an_index_out_of_range_is_a_located_error_in_both_modes():
    from onnx_qtypes.reference_ops.errors import EvaluationError

    model, feeds = _model(QType("int8", _scales(6), [0] * 6, axis=0), 0, True)
    feeds["i"] = feeds["i"].copy()
    feeds["i"][0, 0] = -SHAPE[0] - 1
    for kernels in ("definitional", "integer"):
        with pytest.raises(EvaluationError, match=r"node 'node' \(Gather\)"):
            ReferenceEvaluator(model, kernels=kernels).run(None, feeds)
