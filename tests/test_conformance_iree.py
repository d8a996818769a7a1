"""The iree backend on a smoke subset of committed cases (IREE compiles every case, 5 minutes for the whole suite:
the full run is recorded by conformance_tests/publish_status.py, not here). What our harness guarantees: feeds
handed over, outputs returned by name with the cases' shapes and dtypes (IREE's signless integers viewed as the
graph's uint8), compile failures as one-line messages without temporary paths, every case ending in one of the four
outcomes. Never what IREE's kernels compute."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from builders import committed_cases

from onnx_qtypes.cli import main
from onnx_qtypes.conformance import load_backend, run_suite
from onnx_qtypes.conformance.backend_iree import IreeBackend, condense_diagnostics
from onnx_qtypes.conformance.judging import ERROR, FAIL, OUTCOMES, PASS

RUNS = (
    "relu-uint8-float32-per-tensor",  # a uint8 output: IREE returns it as int8 bits
    "dequantize_linear-int8-float16-per-tensor",  # a float16 output
    "quantize_linear-binds-dynamic-int8-float32",  # three inputs (two of them rank 0), two outputs
)
REFUSED = ("relu-int2-float32-per-tensor",)  # refused by IREE's ONNX importer


@pytest.fixture(scope="module")
def backend() -> IreeBackend:
    return IreeBackend()


@pytest.fixture(scope="module")
def cases() -> dict:
    return committed_cases(*(*RUNS, *REFUSED))


@pytest.fixture(scope="module")
def results(backend, cases) -> dict:
    return {r.id: r for r in run_suite(backend, cases=cases.values(), jobs=2)}


def test_load_backend_names_iree_with_its_version():
    from importlib.metadata import version

    backend = load_backend("iree")
    assert isinstance(backend, IreeBackend) and backend.name == "iree" and backend.form == "qdq"
    assert backend.version == version("iree-base-runtime")


def test_smoke_cases_end_in_an_outcome_and_the_compiled_ones_ran(results, cases):
    assert sorted(results) == sorted(cases)
    assert all(r.outcome in OUTCOMES and r.backend == "iree" for r in results.values())
    for case_id in RUNS:
        assert results[case_id].outcome in (PASS, FAIL), results[case_id].message
    refused = results["relu-int2-float32-per-tensor"]
    assert refused.outcome == ERROR and refused.message.startswith("IreeCompileError: import: "), refused.message


@pytest.mark.parametrize("case_id", RUNS)
def test_outputs_come_back_by_name_with_the_cases_shapes_and_dtypes(backend, cases, case_id):
    case = cases[case_id]
    actual = backend.run(backend.prepare(case), case.feeds())
    assert list(actual) == list(case.outputs)
    for name, value in case.expected().items():
        assert isinstance(actual[name], np.ndarray)
        assert (actual[name].shape, actual[name].dtype) == (value.shape, value.dtype), name


# what iree-compile printed for quantize_linear-int8-float16-per-axis (3.13.0), temporary names and all
LINK_FAILURE = """Error invoking IREE compiler tool iree-compile
Error code: 1
Diagnostics:
iree-lld: error: undefined symbol: fmaxf
>>> referenced by <stdin>:6
>>>               /tmp/single_QuantizeLinear_async_dispatch_0-ea8bb5.o:(single_QuantizeLinear$async_dispatch_0)
iree-lld: error: undefined symbol: fminf
<stdin>:6:10: error: failed to link executable and generate target dylib (check above for more specific errors)
<stdin>:6:10: error: failed to link executable and generate target dylib (check above for more specific errors)
<stdin>:9:3: error: failed to legalize operation 'torch.operator' that was explicitly marked illegal: %5 = \
"torch.operator"(%arg0, %1, %3) <{name = "onnx.QuantizeLinear"}> {torch.onnx.axis = 2 : si64} : \
(!torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[2,3,4],ui16> loc("<stdin>":9:3)

Invoked with:
 iree-compile /x/iree-compile - --iree-input-type=onnx
"""


def test_compiler_diagnostics_condense_to_their_distinct_error_lines():
    text = condense_diagnostics(LINK_FAILURE)
    assert text == ("iree-lld: error: undefined symbol: fmaxf; iree-lld: error: undefined symbol: fminf; "
                    "error: failed to link executable and generate target dylib (check above for more specific "
                    "errors); error: failed to legalize onnx.QuantizeLinear {torch.onnx.axis = 2 : si64} : "
                    "(!torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[2,3,4],ui16>")


def test_a_missing_iree_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "iree.runtime", None)  # `import iree.runtime` raises ImportError
    assert main(["conformance", "--backend", "iree", "--id", "relu-int8-float32-per-tensor"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'onnx-qtypes[iree]'" in err and len(err.strip().splitlines()) == 1
