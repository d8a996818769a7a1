"""The chain cases test the composition (issue 19, Deliver 5): every chain's expected output varies well beyond its
tolerance and follows its input, so an implementation that composes wrongly cannot pass on a constant output.

Read from the committed cases (conformance_tests/cases/execution/chain-*), independent of the generator.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from builders import ROOT
from onnx import numpy_helper

import onnx_qtypes
from onnx_qtypes.reference_ops import ReferenceEvaluator

CASES = sorted((ROOT / "conformance_tests" / "cases" / "execution").glob("chain-*"))


def _tensor(path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def test_there_are_chains_of_every_depth_from_2_to_8():
    depths = {json.loads((c / "case.json").read_text())["description"].count(" -> ") + 1 for c in CASES}
    assert depths == set(range(2, 9))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_chain_output_varies_well_beyond_its_tolerance_and_follows_its_input(case):
    doc = json.loads((case / "case.json").read_text())
    tolerance = doc["tolerance"]["y"]
    y = _tensor(case / "test_data_set_0" / "output_0.pb").astype(np.int64)
    assert len(np.unique(y)) >= 10, "the output takes too few values to test the composition"
    assert y.max() - y.min() >= 3 * tolerance, f"output range {y.max() - y.min()} steps against tolerance {tolerance}"
    # the input's columns reversed (a shift would not do: Softmax ignores one along its axis) move some output
    # element by more than the tolerance
    x = _tensor(case / "test_data_set_0" / "input_0.pb")
    model = onnx_qtypes.load(case / "model.onnx")
    moved = ReferenceEvaluator(model).run(None, {"x": np.ascontiguousarray(x[..., ::-1])})[0].astype(np.int64)
    assert np.abs(moved - y).max() > tolerance
