"""The tract backend on committed cases: what our harness guarantees (feeds handed over with their rank, outputs
returned by name with the cases' shapes and dtypes, tract's refusals as one-line messages without Rust's stack
trace, every case ending in one of the four outcomes), never what tract's kernels compute (that is recorded per
version in conformance_tests/results/, with each deviation's standalone reproduction)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import tract

from builders import committed_cases

from onnx_qtypes.cli import main
from onnx_qtypes.conformance import load_backend, run_suite
from onnx_qtypes.conformance.backend_tract import TractBackend, _tract_errors
from onnx_qtypes.conformance.judging import ERROR, FAIL, OUTCOMES, PASS

RUNS = (  # models tract loads: int8 / uint8 storage, float32 scales
    "relu-int8-float32-per-tensor",
    "transpose-uint8-float32-per-tensor",
    "dequantize_linear-int8-float32-per-axis",
    "if-int8-float32-then",  # a rank-0 bool graph input (the If condition)
)
REFUSED = ("relu-int4-float32-per-tensor",)  # tract has no int4 datum type: refused at load
REJECT = ("reject-unknown-version",)


@pytest.fixture(scope="module")
def backend() -> TractBackend:
    return TractBackend()


@pytest.fixture(scope="module")
def cases() -> dict:
    return committed_cases(*(*RUNS, *REFUSED, *REJECT))


def test_load_backend_names_tract_with_its_version():
    backend = load_backend("tract")
    assert isinstance(backend, TractBackend) and backend.name == "tract" and backend.form == "qdq"
    assert backend.version == tract.version() and backend.version[0].isdigit()


def test_cases_end_in_an_outcome_and_refusals_are_tracts_own_one_line_messages(backend, cases):
    results = {r.id: r for r in run_suite(backend, cases=cases.values(), jobs=2)}
    assert sorted(results) == sorted(cases)
    assert all(r.outcome in OUTCOMES and r.backend == "tract" for r in results.values())
    for case_id in RUNS:  # the harness handed every feed over (a rank-0 feed as rank 0): tract ran the model
        assert results[case_id].outcome in (PASS, FAIL), results[case_id].message
    for case_id in REFUSED:
        r = results[case_id]
        assert r.outcome == ERROR and r.message.startswith("TractError: Unknown DatumType Int4"), r.message
        assert "Stack backtrace" not in r.message and "\n" not in r.message


@pytest.mark.parametrize("case_id", RUNS)
def test_outputs_come_back_by_name_with_the_cases_shapes_and_dtypes(backend, cases, case_id):
    case = cases[case_id]
    actual = backend.run(backend.prepare(case), case.feeds())
    assert list(actual) == list(case.outputs)
    for name, value in case.expected().items():
        assert isinstance(actual[name], np.ndarray)
        assert (actual[name].shape, actual[name].dtype) == (value.shape, value.dtype), name


def test_a_rank_0_feed_reaches_tract_as_rank_0(backend, cases):
    case = cases["if-int8-float32-then"]
    feeds = case.feeds()
    assert any(np.asarray(v).ndim == 0 for v in feeds.values()), "the If case no longer has a scalar input"
    backend.run(backend.prepare(case), feeds)  # tract checks each input against its fact: a 1-D feed raises


def test_tract_errors_drop_the_stack_trace_rust_appends():
    with pytest.raises(tract.TractError) as info, _tract_errors(tract):
        raise tract.TractError("Unknown DatumType Int4\n\nStack backtrace:\n   0: anyhow::Error::msg\n   1: main")
    assert str(info.value) == "Unknown DatumType Int4"


def test_a_missing_tract_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tract", None)  # `import tract` raises ImportError
    assert main(["conformance", "--backend", "tract", "--id", "relu-int8-float32-per-tensor"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'onnx-qtypes[tract]'" in err and len(err.strip().splitlines()) == 1


def test_a_feed_tract_has_no_tensor_for_is_named(backend, cases):
    import ml_dtypes

    case = cases["relu-int8-float32-per-tensor"]
    prepared = backend.prepare(case)
    (name,) = case.inputs
    with pytest.raises(Exception, match=rf"graph input '{name}' is float8_e4m3fn: tract's Python API"):
        backend.run(prepared, {name: case.feeds()[name].astype(ml_dtypes.float8_e4m3fn)})
