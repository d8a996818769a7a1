"""Integer kernels against the definition, as properties: for random shapes,
attributes, storage types, granularities and parameters, every integer
kernel runs (no silent fallback) and is identical to the definitional path
(data movement with equal parameters, lookup tables, boundary ops) or at
most one storage step away (requantizing ops)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from reference_cases import CASES, REQUANTIZE_CASES, Case
from reference_models import compare, steps_apart

from onnx_qtypes.reference_ops.ops import KERNELS

SETTINGS = settings(max_examples=int(__import__("os").environ.get("QT_EXAMPLES", 40)), deadline=None, suppress_health_check=list(HealthCheck), database=None)


def check(case: Case) -> None:
    definitional, integer, log = compare(case.model, case.feeds)
    # onnx.reference's MaxPool returns a wrong shape for some ceil_mode cases (e.g. 2x2 input, kernel 2,
    # stride 1, pads 1, ceil_mode 1 gives 5x5 instead of 3x3); the definition inherits it, so skip those.
    assume(case.op != "MaxPool" or definitional[0].shape == case.shapes["y"])
    assert log == {"node": "integer"}, log  # the integer kernel really ran
    for a, b in zip(definitional, integer):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert steps_apart(a, b) <= case.tolerance


def test_every_listed_kernel_has_a_property_case():
    assert set(CASES) == set(KERNELS)


def run_property(strategy) -> None:
    @SETTINGS
    @given(strategy)
    def prop(case: Case) -> None:
        check(case)

    prop()


@pytest.mark.parametrize("op", sorted(CASES))
def test_integer_kernel_agrees_with_the_definition(op):
    run_property(CASES[op])


@pytest.mark.parametrize("name", sorted(REQUANTIZE_CASES))
def test_requantizing_boundary_op(name):
    run_property(REQUANTIZE_CASES[name])


@pytest.mark.parametrize(("opset", "axes"), [(11, False), (13, False), (18, False), (18, True), (21, True)])
def test_pad_runs_on_its_integer_kernel_at_every_opset_it_takes(opset, axes):
    """onnxruntime's quantizer writes Pad-13 (data and pads only). The integer kernel handed onnx.reference's
    Pad-11 / Pad-13 a fourth operand (axes, None), which they refuse: `run --kernels integer` and compare's
    reference-integer backend failed on the lifted files with a TypeError."""
    import numpy as np
    from onnx import TensorProto
    from reference_models import T, typed_model

    from onnx_qtypes import QType

    qtype = QType("uint8", 0.25, 10)
    inputs = [T("x", (2, 3), qtype), T("pads", (2 if axes else 4,), dtype=TensorProto.INT64,
                                      value=np.array([1, 2] if axes else [0, 1, 0, 2], np.int64))]
    if axes:
        inputs += [None, T("axes", (1,), dtype=TensorProto.INT64, value=np.array([1], np.int64))]
    model = typed_model("Pad", inputs, [T("y", (2, 6), qtype)], opset=opset)
    feeds = {"x": np.arange(6, dtype=np.uint8).reshape(2, 3) * 7}
    definitional, integer, log = compare(model, feeds)
    assert log == {"node": "integer"}, log
    assert integer[0].tolist() == definitional[0].tolist()
    assert integer[0][:, -2:].tolist() == [[10, 10], [10, 10]]  # padded with the zero point (real 0)
    # onnxruntime's unoptimized path on the same node between DequantizeLinear and QuantizeLinear, at that opset
    from reference_models import lower_to_qdq, run_onnxruntime

    (theirs,) = run_onnxruntime(lower_to_qdq(model, {"x": (2, 3), "y": (2, 6)}), feeds, optimize=False)
    assert integer[0].tolist() == theirs.tolist()
