"""The conformance runner on execution cases built here, in the execution-case format
(case.json, model.onnx, model.qdq.onnx, test_data_set_0/*.pb): the reference passes them,
deliberately wrong backends fail the cases they should, a hand-written results folder is
judged, onnxruntime's definition path (ORT_DISABLE_ALL) passes, and the CLI's report files
are well-formed. What onnxruntime's optimized kernels compute is never asserted."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from reference_models import T, typed_model

import onnx_qtypes
from onnx_qtypes import QType, quantized_tensors
from onnx_qtypes.cli import main
from onnx_qtypes.conformance import (
    CaseError,
    ReferenceBackend,
    ResultsBackend,
    load_cases,
    pytest_cases,
    run_suite,
)
from onnx_qtypes.conformance.judging import judge_output
from onnx_qtypes.reference_ops import ReferenceEvaluator

# --- building cases --------------------------------------------------------------------------


def _write_pb(path: Path, array: np.ndarray, name: str) -> None:
    path.write_bytes(numpy_helper.from_array(np.asarray(array), name).SerializeToString())


def write_case(root: Path, case_id: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray], tolerance: dict) -> Path:
    folder = root / case_id
    (folder / "test_data_set_0").mkdir(parents=True)
    onnx_qtypes.save(model, str(folder / "model.onnx"))
    onnx.save(onnx_qtypes.lower(model), str(folder / "model.qdq.onnx"))
    inputs = [vi.name for vi in model.graph.input]
    outputs = [vi.name for vi in model.graph.output]
    expected = ReferenceEvaluator(model).run(outputs, feeds)
    for k, name in enumerate(inputs):
        _write_pb(folder / "test_data_set_0" / f"input_{k}.pb", feeds[name], name)
    for k, (name, value) in enumerate(zip(outputs, expected)):
        _write_pb(folder / "test_data_set_0" / f"output_{k}.pb", np.asarray(value), name)
    op = model.graph.node[0].op_type
    (folder / "case.json").write_text(json.dumps({
        "id": case_id, "kind": "execution", "operator": op, "spec": "proposal/spec.md#operators",
        "description": f"{op} on quantized inputs", "tags": {"storage": "int8", "granularity": "per-tensor",
                                                          "schema": "affine", "expressed": "float32"},
        "model": "model.onnx", "qdq_model": "model.qdq.onnx", "inputs": inputs, "outputs": outputs,
        "tolerance": tolerance}))
    return folder


def add_case(root: Path) -> Path:
    # scale 0.5 in, 1.0 out: odd sums are exact ties, where half-to-even and half-away differ
    model = typed_model("Add", [T("a", (2, 4), QType("int8", 0.5, 0)), T("b", (2, 4), QType("int8", 0.5, 0))],
                        [T("c", (2, 4), QType("int8", 1.0, 0))])
    a = np.array([[1, 3, 5, -1], [-3, 7, 0, 2]], np.int8)
    b = np.zeros((2, 4), np.int8)
    return write_case(root, "add-int8-ties", model, {"a": a, "b": b}, {"c": 0})


def relu_case(root: Path) -> Path:
    # outputs beyond 127 saturate; zero points that matter
    model = typed_model("Relu", [T("x", (8,), QType("int8", 1.0, 3))], [T("y", (8,), QType("int8", 0.5, -10))])
    x = np.array([-128, -5, 3, 4, 40, 60, 100, 127], np.int8)
    return write_case(root, "relu-int8-saturates", model, {"x": x}, {"y": 0})


def matmul_case(root: Path) -> Path:
    rng = np.random.default_rng(0)
    model = typed_model("MatMul", [T("p", (2, 3), QType("uint8", 0.015625, 128)), T("q", (3, 2), QType("uint8", 0.03125, 120))],
                        [T("r", (2, 2), QType("uint8", 0.0625, 100))])
    p = rng.integers(0, 256, (2, 3)).astype(np.uint8)
    q = rng.integers(0, 256, (3, 2)).astype(np.uint8)
    return write_case(root, "matmul-uint8-zero-points", model, {"p": p, "q": q}, {"r": 1})


@pytest.fixture()
def cases_root(tmp_path: Path) -> Path:
    root = tmp_path / "execution"
    add_case(root)
    relu_case(root)
    matmul_case(root)
    return root


# --- deliberately wrong backends: the definition by hand, with one thing wrong -----------------


def _half_even(v: np.ndarray) -> np.ndarray:
    return np.round(v)


def _half_away(v: np.ndarray) -> np.ndarray:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


class HandBackend:
    """Dequantize, compute Add / Relu / MatMul in float64, quantize: the knobs make it wrong."""

    name = "by-hand"
    round = staticmethod(_half_even)
    use_zero_points = True
    wrap_instead_of_saturate = False

    def supports(self, case):
        return True if case.operator in ("Add", "Relu", "MatMul") else f"{case.operator} not implemented"

    def prepare(self, case):
        model = onnx_qtypes.load(str(case.model_path))
        return model, quantized_tensors(model)

    def run(self, prepared, feeds):
        model, qtypes = prepared
        node = model.graph.node[0]

        def real(name):
            qt = qtypes[name]
            zp = float(np.asarray(qt.zero_point).ravel()[0]) if self.use_zero_points else 0.0
            return float(np.asarray(qt.scale).ravel()[0]) * (feeds[name].astype(np.float64) - zp)

        args = [real(n) for n in node.input]
        value = {"Add": lambda a, b: a + b, "Relu": lambda x: np.maximum(x, 0), "MatMul": np.matmul}[node.op_type](*args)
        out = node.output[0]
        qt = qtypes[out]
        dtype = qt.storage_type.np_dtype
        zp = float(np.asarray(qt.zero_point).ravel()[0]) if self.use_zero_points else 0.0
        q = self.round(value / float(np.asarray(qt.scale).ravel()[0])) + zp
        if self.wrap_instead_of_saturate:
            return {out: q.astype(np.int64).astype(dtype)}
        info = np.iinfo(dtype)
        return {out: np.clip(q, info.min, info.max).astype(dtype)}


class HalfAwayBackend(HandBackend):
    name = "half-away"
    round = staticmethod(_half_away)


class NoZeroPointBackend(HandBackend):
    name = "no-zero-points"
    use_zero_points = False


class WrapBackend(HandBackend):
    name = "wraps"
    wrap_instead_of_saturate = True


class RaisingBackend(ReferenceBackend):
    name = "raises"

    def run(self, prepared, feeds):
        raise RuntimeError("kernel not found\n  for node 'node'")


class PickyBackend(ReferenceBackend):
    name = "picky"

    def supports(self, case):
        return "no MatMul here" if case.operator == "MatMul" else True


def outcomes(results):
    return {r.id: r.outcome for r in results}


# --- the tests -------------------------------------------------------------------------------


def test_loader_reads_the_format(cases_root):
    cases = load_cases(cases_root)
    assert [c.id for c in cases] == ["add-int8-ties", "matmul-uint8-zero-points", "relu-int8-saturates"]
    add = cases[0]
    assert add.operator == "Add" and add.inputs == ("a", "b") and add.outputs == ("c",)
    assert set(add.feeds()) == {"a", "b"} and add.expected()["c"].dtype == np.int8
    assert [c.id for c in load_cases(cases_root, "Relu")] == ["relu-int8-saturates"]


@pytest.mark.parametrize("kernels", ["definitional", "integer"])
def test_reference_passes(cases_root, kernels):
    results = run_suite(ReferenceBackend(kernels), root=cases_root)
    assert set(outcomes(results).values()) == {"pass"}, [r.message for r in results]


def test_the_hand_backend_without_a_fault_passes(cases_root):
    assert set(outcomes(run_suite(HandBackend(), root=cases_root)).values()) == {"pass"}


def test_rounding_half_away_from_zero_fails_the_ties(cases_root):
    results = {r.id: r for r in run_suite(HalfAwayBackend(), root=cases_root)}
    add = results["add-int8-ties"]
    assert add.outcome == "fail" and add.max_steps == 1 and add.elements > 0
    assert "beyond 0 step" in add.message
    assert results["relu-int8-saturates"].outcome == "pass"  # no ties there


def test_ignoring_zero_points_fails(cases_root):
    results = {r.id: r for r in run_suite(NoZeroPointBackend(), root=cases_root)}
    assert results["matmul-uint8-zero-points"].outcome == "fail"
    assert results["matmul-uint8-zero-points"].max_steps > 1
    assert results["relu-int8-saturates"].outcome == "fail"
    assert results["add-int8-ties"].outcome == "pass"  # its zero points are 0


def test_wrong_saturation_fails(cases_root):
    results = {r.id: r for r in run_suite(WrapBackend(), root=cases_root)}
    assert results["relu-int8-saturates"].outcome == "fail"
    assert results["add-int8-ties"].outcome == "pass"


def test_jobs_give_the_same_results(cases_root):
    def untimed(results):
        return [{k: v for k, v in r.to_json().items() if k != "seconds"} for r in results]

    one = untimed(run_suite(HalfAwayBackend(), root=cases_root))
    many = untimed(run_suite(HalfAwayBackend(), root=cases_root, jobs=3))
    assert one == many and one[0]["outcome"] == "fail"


def test_unsupported_and_errors_are_reported_not_raised(cases_root):
    results = {r.id: r for r in run_suite(PickyBackend(), root=cases_root)}
    assert results["matmul-uint8-zero-points"].outcome == "unsupported"
    assert results["matmul-uint8-zero-points"].message == "no MatMul here"
    errors = run_suite(RaisingBackend(), root=cases_root)
    assert {r.outcome for r in errors} == {"error"}
    assert errors[0].message == "RuntimeError: kernel not found for node 'node'"


def test_results_folder_written_by_hand_is_judged(cases_root, tmp_path):
    results_dir = tmp_path / "vendor"
    for case in load_cases(cases_root):
        if case.operator == "MatMul":
            continue  # not written: unsupported
        folder = results_dir / case.id / "test_data_set_0"
        folder.mkdir(parents=True)
        for k, (name, value) in enumerate(case.expected().items()):
            if case.operator == "Relu":
                value = value.copy()
                value[2] += 2
            _write_pb(folder / f"output_{k}.pb", value, name)
    results = {r.id: r for r in run_suite(ResultsBackend(results_dir), root=cases_root)}
    assert results["add-int8-ties"].outcome == "pass"
    assert results["relu-int8-saturates"].outcome == "fail"
    assert results["relu-int8-saturates"].max_steps == 2 and results["relu-int8-saturates"].elements == 1
    assert results["matmul-uint8-zero-points"].outcome == "unsupported"


def test_onnxruntime_definition_path_passes(cases_root):
    pytest.importorskip("onnxruntime")
    from onnx_qtypes.conformance import OnnxRuntimeBackend

    results = run_suite(OnnxRuntimeBackend(optimize=False), root=cases_root)
    assert set(outcomes(results).values()) == {"pass"}, [r.message for r in results]


def test_onnxruntime_optimized_runs_without_raising(cases_root):
    pytest.importorskip("onnxruntime")
    from onnx_qtypes.conformance import OnnxRuntimeBackend

    results = run_suite(OnnxRuntimeBackend(), root=cases_root)
    assert len(results) == 3  # what its fused kernels compute is a vendor result, not asserted


def test_shape_and_dtype_mismatches_fail_with_a_reason():
    expected = np.array([1, 2, 3], np.int8)
    shape = judge_output("y", expected, np.array([[1, 2, 3]], np.int8), 0, None)
    assert not shape.ok and "shape [1, 3], expected [3]" in shape.reason
    dtype = judge_output("y", expected, np.array([1, 2, 3], np.int32), 0, None)
    assert not dtype.ok and "element type int32, expected int8" in dtype.reason


def test_float_outputs_in_steps_or_exact():
    e = np.array([0.5, 1.0, np.nan], np.float32)
    a = np.array([0.5, 1.25, np.nan], np.float32)
    assert judge_output("y", e, a, 1, 0.25).ok
    assert not judge_output("y", e, a, 0, 0.25).ok
    exact = judge_output("y", e, a, 0, None)
    assert not exact.ok and exact.elements == 1 and "exact" in exact.reason
    assert judge_output("y", e, e.copy(), 0, None).ok


def test_cli_writes_report_and_junit(cases_root, tmp_path, capsys):
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    code = main(["conformance", "--cases", str(cases_root), "--report", str(report), "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Relu" in out and "total" in out and "\r" not in out  # no progress when not a terminal
    data = json.loads(report.read_text())
    assert data["backend"]["name"] == "reference" and data["backend"]["version"] == onnx_qtypes.__version__
    assert {c["id"] for c in data["cases"]} == {c.id for c in load_cases(cases_root)}
    assert set(data["cases"][0]) >= {"id", "operator", "outcome", "max_steps", "elements", "message", "backend",
                                     "backend_version"}
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and len(suite.findall("testcase")) == 3 and suite.get("failures") == "0"


def test_cli_user_backend_fails_with_exit_1(cases_root, tmp_path, capsys):
    junit = tmp_path / "r.xml"
    code = main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:HalfAwayBackend",
                 "-j", "2", "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL add-int8-ties" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1"
    assert suite.find("testcase[@name='add-int8-ties']/failure") is not None


def test_an_empty_results_folder_tests_nothing_and_fails(cases_root, tmp_path, capsys):
    empty = tmp_path / "nothing"
    empty.mkdir()
    assert main(["conformance", "--cases", str(cases_root), "--backend", f"results:{empty}"]) == 1
    captured = capsys.readouterr()
    assert "3 unsupported (3 declined by the runtime" in captured.out
    assert captured.err.strip().splitlines() == [
        "onnx-qtypes: conformance: no case ran: all 3 selected execution case(s) were unsupported by "
        "results:nothing; a run that tests nothing fails"]


@pytest.mark.parametrize("argv, words", [
    (["--backend", "nope"], "unknown backend"),
    (["--backend", "no_such_module_xyz:Backend"], "cannot import"),
    (["--backend", "results:/no/such/dir"], "no such folder"),
    (["-j", "0"], "-j must be at least 1"),
    (["-k", "no-case-has-this"], "no cases in"),
])
def test_cli_bad_arguments_exit_2(cases_root, capsys, argv, words):
    assert main(["conformance", "--cases", str(cases_root), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_unreadable_case_folder_exits_2(cases_root, tmp_path, capsys):
    (cases_root / "relu-int8-saturates" / "case.json").write_text("{not json")
    assert main(["conformance", "--cases", str(cases_root)]) == 2
    assert main(["conformance", "--cases", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "case.json" in err[0] and "Traceback" not in "".join(err)
    with pytest.raises(CaseError):
        load_cases(cases_root)


def test_cli_openvino_missing_says_how_to_install(cases_root, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)  # `import openvino` raises ImportError
    assert main(["conformance", "--cases", str(cases_root), "--backend", "openvino"]) == 2
    err = capsys.readouterr().err
    assert "pip install openvino" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _without_qdq_model(folder: Path, reason: str) -> None:
    data = json.loads((folder / "case.json").read_text())
    data.update(qdq_model=None, qdq_unavailable=reason)
    (folder / "case.json").write_text(json.dumps(data))
    (folder / "model.qdq.onnx").unlink()


@pytest.mark.parametrize("spec", ["openvino", "onnxruntime", "onnxruntime-unoptimized"])
def test_qdq_form_backends_call_a_case_without_qdq_model_unsupported_with_its_reason(cases_root, spec):
    from onnx_qtypes.conformance.backends import load_backend

    reason = "standard ONNX has no 3-bit storage type"
    _without_qdq_model(cases_root / "relu-int8-saturates", reason)
    results = {r.id: r for r in run_suite(load_backend(spec), cases=load_cases(cases_root, "relu"))}
    assert results["relu-int8-saturates"].outcome == "unsupported"
    assert results["relu-int8-saturates"].message == reason


def test_openvino_output_missing_from_the_model_fails_naming_it(cases_root):
    from onnx_qtypes.conformance import OpenVinoBackend

    folder = cases_root / "relu-int8-saturates"
    data = json.loads((folder / "case.json").read_text())
    data["outputs"].append("ghost")
    (folder / "case.json").write_text(json.dumps(data))
    _write_pb(folder / "test_data_set_0" / "output_1.pb", np.zeros(8, np.int8), "ghost")
    [result] = run_suite(OpenVinoBackend(), filter="relu", root=cases_root)
    assert result.outcome == "fail" and result.message == "output 'ghost' missing from the backend's results"


def test_pytest_entry_point(cases_root):
    params = pytest_cases(PickyBackend(), root=cases_root)["argvalues"]
    assert [p.id for p in params] == ["add-int8-ties", "matmul-uint8-zero-points", "relu-int8-saturates"]
    assert [bool(p.marks) for p in params] == [False, True, False]
    from onnx_qtypes.conformance import check_case

    check_case(ReferenceBackend(), params[0].values[0])
    with pytest.raises(pytest.fail.Exception, match="add-int8-ties"):
        check_case(HalfAwayBackend(), params[0].values[0])


def test_onnxruntime_definition_path_runs_4_bit_graph_inputs_and_outputs():
    """No numpy type exists for ORT's packed 4-bit tensors: the backend packs feeds into OrtValues and unpacks
    outputs from bound buffers. The unoptimized path must then agree with the reference on every 4-bit case."""
    from onnx_qtypes.conformance import OnnxRuntimeBackend, ReferenceBackend, load_cases, run_case, run_suite

    cases = [c for c in load_cases(filter="int4") if c.qdq_model_path is not None]
    assert len(cases) >= 50
    results = run_suite(OnnxRuntimeBackend(optimize=False), cases=cases)
    assert [r.outcome for r in results] == ["pass"] * len(cases), [r.message for r in results if r.outcome != "pass"][:3]
    case = next(c for c in cases if c.id == "transpose-int4-float32-per-tensor")  # a 4-bit input and output
    backend = OnnxRuntimeBackend(optimize=False)
    out = backend.run(backend.prepare(case), case.feeds())["y"]
    assert out.dtype == np.int8 and out.shape == case.expected()["y"].shape
    np.testing.assert_array_equal(out, np.transpose(case.feeds()["x"], (2, 0, 1)))  # same type in and out: moved integers
    assert run_case(ReferenceBackend(), case).outcome == "pass"


def test_float_outputs_of_per_axis_and_blocked_dequantize_are_judged_in_their_own_steps():
    """Each element of a DequantizeLinear output counts in the scale of its own channel or block."""
    from onnx_qtypes import QType
    from onnx_qtypes.conformance.judging import judge_output, step_array

    blocked = QType("int8", [1.0, 0.5, 0.25, 2.0], [0, 0, 0, 0], axis=1, block_size=2)  # a [2, 4] tensor: 2 blocks
    steps = step_array(blocked, (2, 4))
    np.testing.assert_array_equal(steps, [[1.0, 1.0, 0.5, 0.5], [0.25, 0.25, 2.0, 2.0]])
    per_axis = QType("int8", [1.0, 0.25], [0, 0], axis=0)
    np.testing.assert_array_equal(step_array(per_axis, (2, 3)), [[1.0], [0.25]])
    expected = np.zeros((2, 4), np.float32)
    one_step_each = steps.astype(np.float32)
    assert judge_output("y", expected, one_step_each, 1, blocked).ok
    twice = one_step_each.copy()
    twice[1, 2] *= 2  # two of its block's steps (2.0 each): beyond a one-step tolerance
    verdict = judge_output("y", expected, twice, 1, blocked)
    assert not verdict.ok and verdict.max_steps == 2 and verdict.elements == 1
    assert step_array(QType("int8", [1.0, 2.0], [0, 0], axis=3), (2, 4)) is None  # axis beyond the output: exact
