"""The suite as a vendor runs it in CI (issue 21): a first green case from the README and the template, exact
filters, a run that tested nothing fails, per-case timeouts that never stall the run, results folders with
errors, known-deviation files of the vendor's own (drafted from a report), repro bundles, self-describing
reports and a quiet console. Judging on float8 / float4 grids (semantics.md#steps) and outputs not judged by value
(B8) are here too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from builders import ROOT
from test_conformance_runner import PickyBackend, _without_qdq_model, _write_pb, cases_root  # noqa: F401

import onnx_qtypes
from onnx_qtypes.cli import main
from onnx_qtypes.conformance import ReferenceBackend, load_cases, run_suite
from onnx_qtypes.conformance.deviations import (
    StatusError,
    draft_known,
    load_known,
    normalize_message,
    version_matches,
)
from onnx_qtypes.conformance.judging import grid_position, judge_output


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")}
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", "conformance", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env)


# --- a first green case, as the README says -------------------------------------------------------------------


def _readme_blocks(fence: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Conformance"):text.index("## Python")]
    return re.findall(rf"```{fence}\n(.*?)```", section, re.S)


def test_a_vendor_gets_a_first_green_case_by_following_the_readme(tmp_path):
    """Literally: the README's commands in an empty folder, the template filled with the README's two methods,
    no PYTHONPATH (the backend module is found in the current directory)."""
    pytest.importorskip("onnxruntime")
    write, run = _readme_blocks("shell")
    (filled,) = _readme_blocks("py")
    command = write.strip().split()
    assert command[:2] == ["onnx-qtypes", "conformance"]
    made = _cli(*command[2:], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    backend = tmp_path / "my_backend.py"
    template = backend.read_text()
    assert template == (ROOT / "conformance_tests" / "template_backend.py").read_text()
    unfilled = _cli(*run.splitlines()[0].split()[2:], cwd=tmp_path)
    assert unfilled.returncode == 1 and "NotImplementedError" in unfilled.stdout  # the template alone is no pass
    backend.write_text(template[:template.index("    def prepare(")] + filled)
    first = run.splitlines()[0].split()
    green = _cli(*first[2:], cwd=tmp_path)
    assert green.returncode == 0, green.stdout + green.stderr
    assert "1 case(s): 1 pass, 0 fail" in green.stdout
    assert _cli(*first[2:], cwd=tmp_path).returncode == 0
    assert _cli("--write-template", "my_backend.py", cwd=tmp_path).returncode == 2  # never overwritten


def test_a_backend_named_by_file_path(cases_root, tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    source = (ROOT / "tests" / "test_conformance_runner.py").read_text()
    (tmp_path / "sub" / "vendor_file.py").write_text(source)
    assert main(["conformance", "--cases", str(cases_root), "--backend",
                 f"{tmp_path / 'sub' / 'vendor_file.py'}:HalfAwayBackend", "-q"]) == 1
    assert "half-away: 3 case(s): 2 pass, 1 fail" in capsys.readouterr().out


# --- selecting cases ------------------------------------------------------------------------------------------


def test_tags_match_exactly_and_k_by_substring(tmp_path):
    from onnx_qtypes.conformance import load_suite

    exact = load_suite(tags={"storage": "uint8", "expressed": "float32", "granularity": "per-axis"})
    assert exact and all(c.tags["storage"] == "uint8" for c in exact)
    substring = load_suite(filter="uint8-float32")
    assert any(c.tags.get("storage") != "uint8" for c in substring)  # e.g. uint16-wuint8-float32 cases
    assert {c.id for c in exact} < {c.id for c in load_suite(tags={"storage": "uint8"})}
    assert {c.kind for c in load_suite(tags={"kind": "reject"})} == {"reject"}


@pytest.mark.parametrize("argv, words", [
    (["--tags", "storage"], "expected KEY=VALUE"),
    (["--tags", "storag=int8"], "no case in"),
    (["--tags", "storage=int8,storage=uint8"], "storage given twice"),
    (["--id", "no-such-case"], "--id no-such-case: no such case"),
    (["--timeout", "0"], "--timeout must be a positive"),
    (["--by", "colour"], "--by colour: use one of"),
    (["-q", "-v"], "contradict"),
    (["-o", "x.json"], "--draft-known REPORT.json and -o FILE go together"),
])
def test_bad_selections_exit_2_with_one_line(cases_root, capsys, argv, words):
    assert main(["conformance", "--cases", str(cases_root), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


# --- a run that tested nothing fails; --min-pass ------------------------------------------------------------------


def test_min_pass(cases_root, capsys):
    assert main(["conformance", "--cases", str(cases_root), "--min-pass", "3", "-q"]) == 0
    assert main(["conformance", "--cases", str(cases_root), "--min-pass", "4", "-q"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == ("onnx-qtypes: conformance: 3 execution case(s) passed, fewer than --min-pass 4 "
                                    "(must-reject cases do not count)")
    assert main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:PickyBackend",
                 "--id", "matmul-uint8-zero-points"]) == 1
    assert "no case ran: all 1 selected execution case(s) were unsupported" in capsys.readouterr().err


class _RefusesEverything:
    """Declines every execution case and refuses every typed model: it passes every must-reject case."""

    name = "refuses"

    def supports(self, case):
        return True if case.kind == "reject" else "computes nothing"

    def prepare(self, case):
        raise RuntimeError("unknown element type 1003")

    def run(self, prepared, feeds):
        raise AssertionError("never reached")


def test_refusing_must_reject_cases_alone_is_no_passing_run(cases_root, tmp_path, capsys):
    cases = tmp_path / "cases"
    shutil.copytree(cases_root, cases / "execution")
    shutil.copytree(ROOT / "conformance_tests" / "cases" / "reject" / "reject-zero-scale", cases / "reject-zero-scale")
    backend = "test_conformance_vendor:_RefusesEverything"
    assert main(["conformance", "--cases", str(cases), "--backend", backend, "-q"]) == 1
    captured = capsys.readouterr()
    assert "1 pass" in captured.out and ("no case ran: all 3 selected execution case(s) were unsupported by refuses "
                                         "(the 1 must-reject case(s) it refused compute nothing)") in captured.err
    assert main(["conformance", "--cases", str(cases), "--min-pass", "1", "-q"]) == 0  # the reference: 3 + 1 pass
    assert main(["conformance", "--cases", str(cases), "--min-pass", "4", "-q"]) == 1  # the refusal is no pass here
    assert "3 execution case(s) passed, fewer than --min-pass 4" in capsys.readouterr().err


def test_declined_and_not_expressible_are_counted_apart(cases_root, tmp_path):
    pytest.importorskip("onnxruntime")
    from onnx_qtypes.conformance import OnnxRuntimeBackend
    from onnx_qtypes.conformance.reports import junit_xml, report_json

    _without_qdq_model(cases_root / "relu-int8-saturates", "standard ONNX has no 3-bit storage type")
    ort = {r.id: r for r in run_suite(OnnxRuntimeBackend(optimize=False), root=cases_root)}
    assert ort["relu-int8-saturates"].reason_class == "not-expressible"
    picky = run_suite(PickyBackend(), root=cases_root)
    unsupported = {r.id: r.reason_class for r in picky if r.outcome == "unsupported"}
    assert unsupported == {"matmul-uint8-zero-points": "declined"}
    summary = report_json(picky, "picky", "")["summary"]
    assert (summary["unsupported_declined"], summary["unsupported_not_expressible"]) == (1, 0)
    junit = ET.fromstring(junit_xml(list(ort.values()), "onnxruntime", "x"))
    assert junit.find(".//testcase[@name='relu-int8-saturates']/skipped").get("message").startswith("not-expressible:")


# --- timeouts ---------------------------------------------------------------------------------------------------

SLEEPY = '''
import threading
import time


class Sleepy:
    """Never returns from run() on the MatMul case: a hung runtime."""

    name = "sleepy"

    def supports(self, case):
        return True

    def prepare(self, case):
        from onnx_qtypes.conformance import ReferenceBackend
        return case, ReferenceBackend().prepare(case)

    def run(self, prepared, feeds):
        case, inner = prepared
        if case.operator == "MatMul":
            threading.Event().wait()  # forever
        from onnx_qtypes.conformance import ReferenceBackend
        return ReferenceBackend().run(inner, feeds)
'''


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_backend_that_never_returns_times_out_and_the_process_ends(cases_root, tmp_path, jobs):
    (tmp_path / "sleepy_backend.py").write_text(SLEEPY)
    junit = tmp_path / "r.xml"
    done = _cli("--cases", str(cases_root), "--backend", "sleepy_backend:Sleepy", "--timeout", "2", "-j", jobs,
                "--junit", str(junit), cwd=tmp_path, timeout=60)  # the subprocess would hang past 60 s otherwise
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ERROR matmul-uint8-zero-points: timed out after 2 s" in done.stdout
    assert "2 pass, 0 fail, 0 unsupported, 1 error (1 timed out)" in done.stdout
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["matmul-uint8-zero-points"].find("error").get("type") == "timeout"
    assert float(cases["matmul-uint8-zero-points"].get("time")) == 2.0


# --- results folders with errors -------------------------------------------------------------------------------


def test_a_results_folder_records_errors_and_refusals(cases_root, tmp_path):
    from onnx_qtypes.conformance import ResultsBackend, load_suite

    reject = ROOT / "conformance_tests" / "cases" / "reject"
    vendor = tmp_path / "vendor"
    (vendor / "add-int8-ties").mkdir(parents=True)
    (vendor / "add-int8-ties" / "error.txt").write_text("kernel Add(int8) not found\n  at line 3\n")
    (vendor / "reject-zero-scale").mkdir()
    (vendor / "reject-zero-scale" / "error.txt").write_text("scale must be positive")
    folder = vendor / "reject-unknown-version" / "test_data_set_0"  # ran it: outputs instead of a refusal
    folder.mkdir(parents=True)
    _write_pb(folder / "output_0.pb", np.zeros((2, 4), np.int8), "y")
    (vendor / "VERSION").write_text("7.1\n")
    cases = [*load_cases(cases_root), *load_suite(reject, tags={"kind": "reject"})]
    results = {r.id: r for r in run_suite(ResultsBackend(vendor), cases=cases)}
    assert results["add-int8-ties"].outcome == "error"
    assert results["add-int8-ties"].message == "RecordedError: kernel Add(int8) not found at line 3"
    assert results["reject-zero-scale"].outcome == "pass" and results["reject-zero-scale"].reason_class == "refused"
    assert results["reject-unknown-version"].outcome == "fail"
    assert results["relu-int8-saturates"].outcome == "unsupported"
    assert results["add-int8-ties"].backend_version == "7.1"


# --- known deviations of one's own ---------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, version, ok", [
    ("0.23.9", "0.23.9", True), ("0.23.9", "0.23.10", False), ("2026.4.1", "2026.4.1-22982-e213a1", True),
    ("0.23.*", "0.23.10", True), (">=0.23,<0.24", "0.23.10", True), (">=0.23,<0.24", "0.24.0", False),
    (">=1.9", "1.10", True), ("<1.10", "1.9.3", True), ("*", "anything", True), ("!=1.2", "1.2.0", False),
    ("~=0.23", "0.24.1", True), ("~=0.23", "1.0", False), ("~=0.23.1", "0.23.9", True), ("~=0.23.1", "0.24.0", False),
    ("~=0.23.1", "0.23.0", False),
])
def test_version_matching(spec, version, ok):
    assert version_matches(spec, version) is ok


@pytest.mark.parametrize("content, words", [
    ("[", "not readable JSON"),
    ('{"deviations": [{"cases": ["a"]}]}', "deviations[0].reason: must say why"),
    ('{"deviations": [{"cases": [], "reason": "r"}]}', "deviations[0].cases: must list"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "version": ">="}]}', "deviations[0].version"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "version": "=="}]}', "deviations[0].version: '==' is not a"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "version": "="}]}', "deviations[0].version: '=' is not a"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "version": "<"}]}', "deviations[0].version: '<' is not a"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "version": "~=1"}]}', "~= needs at least two parts"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "version": "latest"}]}', "'latest' names no version"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "outcomes": ["pass"]}]}', "deviations[0].outcomes"),
    ('{"deviations": [{"cases": ["a"], "reason": "r", "colour": "red"}]}', "unknown field 'colour'"),
    ('{"format": "other/2", "deviations": []}', "format 'other/2'"),
])
def test_a_broken_known_file_exits_2_naming_file_and_entry(cases_root, tmp_path, capsys, content, words):
    path = tmp_path / "known.json"
    path.write_text(content)
    with pytest.raises(StatusError, match=re.escape(words)):
        load_known(path)
    assert main(["conformance", "--cases", str(cases_root), "--known", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and words in err and len(err.strip().splitlines()) == 1


def test_a_drafted_known_file_explains_exactly_the_failures_of_its_report(cases_root, tmp_path, capsys):
    report, known = tmp_path / "run.json", tmp_path / "known.json"
    backend = "test_conformance_runner:HalfAwayBackend"
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--report", str(report)]) == 1
    assert main(["conformance", "--draft-known", str(report), "-o", str(known)]) == 0
    assert "1 entry for 1 failing or erroring case(s)" in capsys.readouterr().out
    draft = json.loads(known.read_text())
    (entry,) = draft["deviations"]
    assert entry["cases"] == ["add-int8-ties"] and entry["reason"].startswith("TODO:")
    assert entry["backend"] == "half-away" and entry["outcomes"] == ["fail"]
    assert entry["group"]["operator"] == "Add" and entry["group"]["tags"]["storage"] == "int8"
    assert "N of N element(s) beyond N step(s)" in entry["group"]["message"]
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--known", str(known)]) == 0
    out = capsys.readouterr().out
    assert f"1 of 1 failing or erroring case(s) are known deviations of half-away listed in {known}" in out
    assert "proposal/status.md" not in out and "still give a TODO reason" in out
    # the same file does not explain another backend's failures, nor a case it does not list
    assert main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:NoZeroPointBackend",
                 "--known", str(known)]) == 1


def test_known_failures_are_marked_in_json_and_skipped_with_their_reason_in_junit(cases_root, tmp_path, capsys):
    report, known, junit = tmp_path / "run.json", tmp_path / "known.json", tmp_path / "run.xml"
    backend = "test_conformance_runner:HalfAwayBackend"
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--report", str(report)]) == 1
    assert main(["conformance", "--draft-known", str(report), "-o", str(known)]) == 0
    draft = json.loads(known.read_text())
    draft["deviations"][0]["reason"] = "rounds half away from zero: vendor issue 7"
    known.write_text(json.dumps(draft))
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--known", str(known),
                 "--report", str(report), "--junit", str(junit)]) == 0
    out = capsys.readouterr().out
    assert "1 of the failing and erroring are known deviations" in out and "FAIL (known) add-int8-ties" in out
    data = json.loads(report.read_text())
    add = next(c for c in data["cases"] if c["id"] == "add-int8-ties")
    assert add["outcome"] == "fail" and add["known"] == {"entry": f"{known}#deviations[0]",
                                                         "reason": "rounds half away from zero: vendor issue 7"}
    assert all(c["known"] is None for c in data["cases"] if c["id"] != "add-int8-ties")
    assert data["summary"]["known"] == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "1")  # nothing red
    case = suite.find("testcase[@name='add-int8-ties']")
    assert case.find("failure") is None
    assert case.find("skipped").get("message") == (f"known deviation ({known}#deviations[0]): rounds half away "
                                                   "from zero: vendor issue 7")
    assert case.find("properties/property[@name='outcome']").get("value") == "fail"
    assert "1 step(s)" in case.find("system-out").text


def test_a_part_of_the_suite_does_not_call_a_pattern_entry_stale(cases_root, tmp_path, capsys):
    """'*' with a message is a kind of failure: a -k run that shows none of it says nothing of the entry, but a
    case named exactly still counts, and the whole suite still finds the pattern entry that explains nothing."""
    known = tmp_path / "known.json"
    entries = [{"backend": "half-away", "cases": ["add-int8-ties"], "outcomes": ["fail"], "reason": "ties"},
               {"backend": "half-away", "cases": ["*"], "message": "no such failure", "reason": "a kind of failure"},
               {"backend": "half-away", "cases": ["relu-int8-saturates"], "reason": "fixed in 2.0"}]
    known.write_text(json.dumps({"deviations": entries}))
    backend = "test_conformance_runner:HalfAwayBackend"
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--known", str(known), "-q",
                 "-k", "relu"]) == 0
    out = capsys.readouterr().out
    assert f"{known}#deviations[1] lists" not in out
    assert f"note: {known}#deviations[2] lists 1 case(s) of this run (e.g. relu-int8-saturates)" in out
    known.write_text(json.dumps({"deviations": [  # a pattern the filtered run holds whole still counts
        {"backend": "half-away", "cases": ["relu-*"], "reason": "fixed in 2.0"}]}))
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--known", str(known), "-q",
                 "-k", "relu"]) == 0
    assert f"note: {known}#deviations[0] lists" in capsys.readouterr().out
    known.write_text(json.dumps({"deviations": entries}))
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--known", str(known), "-q"]) == 0
    assert f"note: {known}#deviations[1] lists" in capsys.readouterr().out


def test_stale_known_entries_are_named_and_several_files_are_read(cases_root, tmp_path, capsys):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"deviations": [
        {"backend": "half-away", "cases": ["add-int8-ties"], "outcomes": ["fail"], "reason": "ties"},
        {"backend": "half-away", "cases": ["relu-int8-saturates"], "reason": "fixed in 2.0"},  # passes now
        {"backend": "half-away", "cases": ["conv-*", "matmul-uint8-zero-points"], "reason": "r"},  # conv-*: none
        {"backend": "other", "cases": ["nothing-*"], "reason": "another runtime's: not looked at"}]}))
    second.write_text(json.dumps({"deviations": [{"cases": ["add-*"], "reason": "from the second file"}]}))
    backend = "test_conformance_runner:HalfAwayBackend"
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--known", str(first), "-q"]) == 0
    out = capsys.readouterr().out
    assert (f"note: {first}#deviations[1] lists 1 case(s) of this run (e.g. relu-int8-saturates) but explained no "
            "failure") in out
    assert f"note: {first}#deviations[2]: 'conv-*' name(s) no case of the suite" in out
    assert f"{first}#deviations[2] lists" in out and "deviations[0]" not in out and "deviations[3]" not in out
    # two files: both read (the second alone explains the failure)
    first.write_text(json.dumps({"deviations": [{"cases": ["relu-*"], "reason": "r"}]}))
    assert main(["conformance", "--cases", str(cases_root), "--backend", backend, "--known", str(first),
                 "--known", str(second), "-q"]) == 0
    assert f"listed in {first} or listed in {second}" in capsys.readouterr().out


def test_a_draft_never_replaces_a_file_without_force(tmp_path, capsys):
    report, known = tmp_path / "run.json", tmp_path / "known.json"
    report.write_text(json.dumps({"backend": {"name": "x", "version": "1"}, "cases": [
        {"id": "a", "outcome": "fail", "operator": "Add", "message": "m", "tags": {}}]}))
    known.write_text("hand-written")
    assert main(["conformance", "--draft-known", str(report), "-o", str(known)]) == 2
    assert "exists already" in capsys.readouterr().err and known.read_text() == "hand-written"
    assert main(["conformance", "--draft-known", str(report), "-o", str(known), "--force"]) == 0
    assert json.loads(known.read_text())["deviations"][0]["cases"] == ["a"]


def test_drafts_group_alike_failures():
    cases = [{"id": f"softmax-{s}-float32", "outcome": "fail", "operator": "Softmax",
              "message": f"output 'y': {n} of 30 element(s) beyond 1 step(s), at most {n * 7} step(s)",
              "tags": {"storage": s, "expressed": "float32"}} for s, n in (("int8", 12), ("uint8", 30))]
    cases.append({"id": "conv-int4", "outcome": "error", "operator": "Conv", "tags": {},
                  "message": "NotImplemented: Could not find an implementation for ConvInteger(10) node 'conv'"})
    cases.append({"id": "relu-int8", "outcome": "pass", "operator": "Relu", "message": "", "tags": {}})
    draft = draft_known({"backend": {"name": "tract", "version": "0.23.9"}, "cases": cases})
    groups = [(e["group"]["operator"], e["cases"], e["group"]["tags"]) for e in draft["deviations"]]
    assert groups == [("Softmax", ["softmax-int8-float32", "softmax-uint8-float32"], {"expressed": "float32"}),
                      ("Conv", ["conv-int4"], {})]


@pytest.mark.parametrize("a, b", [
    ("at most 9.05e+04 step(s); at [0, 1]: 1e-3", "at most 118 step(s); at [2, 3]: -17.5"),  # numbers of any form
    ("Numpy_type 260 can't be converted to 'x'", "Numpy_type 262 can't be converted to 'yy'"),  # ' in a word
    ("failed at /tmp/a/case-1/model.onnx (src/core/x.cpp:84)", "failed at /home/b/model.onnx (src/core/x.cpp:91)"),
])
def test_alike_messages_group(a, b):
    assert normalize_message(a) == normalize_message(b)


@pytest.mark.parametrize("message, kept", [
    ("QT120 expressed-type-too-narrow: int16:float16", "QT120 expressed-type-too-narrow: int16:float16"),
    ("Numpy_type 260 can't be converted", "Numpy_type N can't be converted"),
    ("no kernel for int4/uint4 on float8e4m3fn", "no kernel for int4/uint4 on float8e4m3fn"),
])
def test_normalizing_keeps_what_names_the_problem(message, kept):
    assert normalize_message(message) == kept


def test_the_published_list_is_documented_as_the_projects_measurement(cases_root, capsys):
    assert main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:HalfAwayBackend",
                 "--known"]) == 1
    assert "in the project's own measurement" in capsys.readouterr().out


# --- repro bundles --------------------------------------------------------------------------------------------------


def test_repro_bundles_hold_everything_and_rerun(cases_root, tmp_path, capsys):
    repro = tmp_path / "repro"
    assert main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:HalfAwayBackend",
                 "--save-repro", str(repro), "-q"]) == 1
    assert sorted(p.name for p in repro.iterdir()) == ["add-int8-ties"]  # failing cases only, no leftovers
    bundle = repro / "add-int8-ties"
    assert {"case.json", "model.onnx", "model.qdq.onnx", "inputs.npz", "expected.npz", "actual.npz", "repro.json",
            "repro.py", "README.txt", "test_data_set_0"} <= {p.name for p in bundle.iterdir()}
    info = json.loads((bundle / "repro.json").read_text())
    assert info["suite"]["version"] == onnx_qtypes.__version__ and len(info["suite"]["digest"]) == 64
    assert info["runtime"]["backend"] == "half-away" and info["tolerance"] == {"c": 0}
    worst = info["worst_elements"]
    assert worst and all(w["steps"] == 1 and abs(w["actual"] - w["expected"]) == 1 for w in worst)
    actual, expected = np.load(bundle / "actual.npz")["c"], np.load(bundle / "expected.npz")["c"]
    for w in worst:
        assert actual[tuple(w["index"])] == w["actual"] and expected[tuple(w["index"])] == w["expected"]
    assert info["commands"]["rerun in the suite"].endswith("--id add-int8-ties")
    capsys.readouterr()
    assert main(["conformance", "--backend", "test_conformance_runner:HalfAwayBackend", "--cases", str(bundle)]) == 1
    assert "FAIL add-int8-ties" in capsys.readouterr().out
    # the backend module is copied in: repro.py runs from any folder, exit 1 while the failure reproduces
    assert (bundle / "backend" / "test_conformance_runner.py").read_text() == \
        (ROOT / "tests" / "test_conformance_runner.py").read_text()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True, text=True, env=env,
                            timeout=120, cwd=elsewhere)
    assert script.returncode == 1, script.stdout + script.stderr
    assert f"c: {info['elements_beyond_tolerance']} element(s) beyond 0 step(s), at most 1 step(s)" in script.stdout
    assert "the failure reproduces" in script.stdout
    # the vendor fixes the backend: the same script says so with exit 0
    copied = bundle / "backend" / "test_conformance_runner.py"
    copied.write_text(copied.read_text().replace("round = staticmethod(_half_away)", "round = staticmethod(_half_even)"))
    fixed = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True, text=True, env=env,
                           timeout=120, cwd=elsewhere)
    assert fixed.returncode == 0 and "the failure does not reproduce" in fixed.stdout, fixed.stdout + fixed.stderr


def test_the_onnxruntime_repro_script_runs_without_the_suite(cases_root, tmp_path):
    pytest.importorskip("onnxruntime")
    from onnx_qtypes.conformance import OnnxRuntimeBackend, load_case
    from onnx_qtypes.conformance.repro import save_bundle
    from onnx_qtypes.conformance.runner import run_case

    folder = cases_root / "relu-int8-saturates"
    expected = load_case(folder).expected()["y"].copy()
    expected[0] += 3  # a case the runtime now misses by 3 steps
    _write_pb(folder / "test_data_set_0" / "output_0.pb", expected, "y")
    case = load_case(folder)
    backend = OnnxRuntimeBackend(optimize=False)
    result = run_case(backend, case)
    assert result.outcome == "fail"
    bundle = save_bundle(tmp_path / "repro", result, case, backend, "onnxruntime-unoptimized")
    script = (bundle / "repro.py").read_text()
    assert "onnx_qtypes" not in script and "ORT_DISABLE_ALL" in script and "model.qdq.onnx" in script
    run = subprocess.run([sys.executable, "-I", str(bundle / "repro.py")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "at most 3 step(s)" in run.stdout, run.stdout + run.stderr
    again = save_bundle(tmp_path / "repro", result, case, backend, "onnxruntime-unoptimized")  # replaces it whole
    assert again == bundle and sorted(p.name for p in (tmp_path / "repro").iterdir()) == ["relu-int8-saturates"]


def test_a_results_folder_bundle_says_what_the_runner_must_write_and_judges_it(cases_root, tmp_path, capsys,
                                                                              monkeypatch):
    folder = _results_folder(cases_root, tmp_path / "res")
    wrong = folder / "add-int8-ties" / "test_data_set_0" / "output_0.pb"
    right = wrong.read_bytes()
    value = load_cases(cases_root, "add-int8-ties")[0].expected()["c"]
    _write_pb(wrong, (value + 2).astype(value.dtype), "c")
    (folder / "NAME").write_text("npu-sdk\n")
    repro = tmp_path / "repro"
    assert main(["conformance", "--cases", str(cases_root), "--backend", f"results:{folder}", "--save-repro",
                 str(repro), "-q"]) == 1
    bundle = repro / "add-int8-ties"
    readme = (bundle / "README.txt").read_text()
    assert "write results/add-int8-ties/test_data_set_0/output_0.pb (c)" in readme
    assert "on test_data_set_0/input_0.pb (a), test_data_set_0/input_1.pb (b)" in readme
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(folder)  # the bundle holds what it needs
    judged = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True, text=True, timeout=120,
                            cwd=elsewhere)
    assert judged.returncode == 1 and "at most 2 step(s)" in judged.stdout, judged.stdout + judged.stderr
    # the vendor's runner writes the outputs again, right this time: exit 0
    (bundle / "results" / "add-int8-ties" / "test_data_set_0" / "output_0.pb").write_bytes(right)
    judged = subprocess.run([sys.executable, str(bundle / "repro.py")], capture_output=True, text=True, timeout=120,
                            cwd=elsewhere)
    assert judged.returncode == 0 and "does not reproduce" in judged.stdout, judged.stdout + judged.stderr
    capsys.readouterr()
    monkeypatch.chdir(bundle)
    assert main(["conformance", "--backend", "results:results", "--cases", ".", "-q"]) == 0
    assert capsys.readouterr().out.startswith("npu-sdk: 1 case(s): 1 pass")


def test_a_backend_in_a_package_is_loaded_from_its_recorded_folder(tmp_path, monkeypatch):
    from onnx_qtypes.conformance.repro import _backend_source

    (tmp_path / "vendorpkg").mkdir()
    (tmp_path / "vendorpkg" / "__init__.py").write_text("")
    (tmp_path / "vendorpkg" / "runtime.py").write_text("class Backend:\n    name = 'pkg'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import vendorpkg.runtime  # noqa: F401 (loaded, as load_backend leaves it)

    work = tmp_path / "bundle"
    work.mkdir()
    source = _backend_source(object(), "vendorpkg.runtime:Backend", work, "some-case")
    assert source["path"] == str(tmp_path) and source["spec"] == "vendorpkg.runtime:Backend"
    assert f"loaded from {tmp_path}, not copied" in source["note"] and not (work / "backend").exists()


def test_a_repro_bundle_is_never_half_written(cases_root, tmp_path, capsys, monkeypatch):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", disk_full)
    repro = tmp_path / "repro"
    assert main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:HalfAwayBackend",
                 "--save-repro", str(repro), "-q"]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and len(err.strip().splitlines()) == 1
    assert list(repro.iterdir()) == []


# --- reports and console ---------------------------------------------------------------------------------------------


def test_reports_describe_themselves(cases_root, tmp_path, capsys):
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    assert main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:HalfAwayBackend",
                 "--report", str(report), "--junit", str(junit), "-q"]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("half-away: 3 case(s): 2 pass, 1 fail")  # -q: one line
    data = json.loads(report.read_text())
    assert data["suite"]["version"] == onnx_qtypes.__version__ and data["suite"]["cases"] == 3
    assert data["environment"]["platform"] and data["backend"] == {"name": "half-away", "version": ""}
    add = next(c for c in data["cases"] if c["id"] == "add-int8-ties")
    assert add["tags"]["storage"] == "int8" and add["tolerance"] == {"c": 0} and add["seconds"] >= 0
    assert 0 < len(add["deviations"]) <= 10 and add["deviations"][0]["output"] == "c"
    assert data["by"]["storage"]["int8"]["fail"] == 1 and data["by"]["operator"]["Add"]["fail"] == 1
    assert set(data["by"]) == {"operator", "storage", "weight_storage", "expressed", "granularity", "kind"}
    assert data["by_message"][0]["operators"] == ["Add"]
    root = ET.parse(junit).getroot()
    props = {p.get("name"): p.get("value") for p in root.find("testsuite/properties")}
    assert props["suite_version"] == onnx_qtypes.__version__ and len(props["suite_digest"]) == 64
    assert props["backend"] == "half-away" and props["platform"]
    case = root.find(".//testcase[@name='add-int8-ties']")
    assert float(case.get("time")) >= 0 and case.find("properties/property[@name='tag.storage']").get("value") == "int8"
    assert "c[0, 0]: 1, expected 0 (1 step(s))" in case.find("failure").text


def test_progress_bar_only_on_a_terminal(cases_root, capsys, monkeypatch):
    from onnx_qtypes.commands import conformance

    assert main(["conformance", "--cases", str(cases_root), "-q"]) == 0
    assert capsys.readouterr().err == ""  # not a terminal: nothing
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("CI", "true")
    assert not conformance._draw_progress()  # a CI log, even through a pseudo-terminal
    monkeypatch.delenv("CI")
    monkeypatch.setenv("TERM", "xterm")
    assert conformance._draw_progress()
    assert main(["conformance", "--cases", str(cases_root)]) == 0
    err = capsys.readouterr().err
    assert "\r[" in err and "3/3 pass 3" in err and err.endswith("\r")


# --- judging: float grids (B4) and outputs not judged by value (B8) --------------------------------------------------


def test_one_step_on_float8_and_float4_is_one_position_on_the_grid():
    e4m3 = np.array([0.0, -0.0, 448.0, 1.0, -1.0, 0.001953125], ml_dtypes.float8_e4m3fn)  # last: smallest subnormal
    positions = grid_position(e4m3)
    assert positions[0] - positions[1] == 1  # +0 and -0: one position
    assert positions[2] == 126 and positions[3] - positions[5] == 55
    nxt = np.array([1.125], ml_dtypes.float8_e4m3fn)  # 1 + 2^-3: the next value above 1
    assert grid_position(nxt)[0] - positions[3] == 1
    assert judge_output("y", e4m3[3:4], nxt, 1).ok and not judge_output("y", e4m3[3:4], nxt, 0).ok
    fnuz = np.array([0.0, -0.0009765625], ml_dtypes.float8_e4m3fnuz)  # no -0 in fnuz: 0, then -2^-10
    assert grid_position(fnuz)[0] - grid_position(fnuz)[1] == 1
    e5m2 = np.array([57344.0, np.inf], ml_dtypes.float8_e5m2)
    assert np.diff(grid_position(e5m2))[0] == 1
    fp4 = np.array([0.5, 1.0, -0.0, 0.0, -6.0, 6.0], ml_dtypes.float4_e2m1fn)
    assert list(grid_position(fp4)) == [1, 2, -1, 0, -8, 7]
    near = np.array([1.0, 1.0, -0.0, 0.0, -6.0, 4.0], ml_dtypes.float4_e2m1fn)  # 0.5 -> 1 and 6 -> 4: one each
    assert judge_output("y", fp4, near, 1).ok
    verdict = judge_output("y", fp4, near, 0)
    assert not verdict.ok and verdict.max_steps == 1 and verdict.elements == 2
    nan = judge_output("y", np.array([np.nan, 1], ml_dtypes.float8_e4m3fn), np.array([np.nan, np.nan],
                       ml_dtypes.float8_e4m3fn), 5)
    assert not nan.ok and nan.elements == 1  # NaN equals NaN only


class _Returns:
    name = "returns"

    def __init__(self, outputs):
        self.outputs = outputs

    def supports(self, case):
        return True

    def prepare(self, case):
        return None

    def run(self, prepared, feeds):
        return self.outputs


def test_an_output_marked_positive_finite_is_judged_by_that_alone(cases_root):
    from onnx_qtypes.conformance import load_case

    folder = cases_root / "relu-int8-saturates"
    data = json.loads((folder / "case.json").read_text())
    data["judge"] = {"y": "positive-finite"}
    (folder / "case.json").write_text(json.dumps(data))
    case = load_case(folder)
    assert case.judge == {"y": "positive-finite"}
    wrong = np.full_like(case.expected()["y"], 77)  # far from the expected values, but positive and finite: a pass
    assert run_suite(_Returns({"y": wrong}), cases=[case])[0].outcome == "pass"
    assert run_suite(_Returns({"y": wrong * 0}), cases=[case])[0].outcome == "fail"
    ok = judge_output("s", np.array(1.0, np.float32), np.array(0.25, np.float32), 0, mode="positive-finite")
    assert ok.ok
    for bad in (0.0, -1.0, np.inf, np.nan):
        verdict = judge_output("s", np.array(1.0, np.float32), np.array(bad, np.float32), 0, mode="positive-finite")
        assert not verdict.ok and "not a positive finite value" in verdict.reason
    assert not judge_output("s", np.array(1.0, np.float32), np.array(1.0, np.float16), 0, mode="positive-finite").ok
    data["judge"] = {"y": "roughly"}
    (folder / "case.json").write_text(json.dumps(data))
    with pytest.raises(Exception, match="'judge' must map output names to one of value, positive-finite"):
        load_case(folder)


def test_onnxruntime_takes_and_returns_float8_as_ml_dtypes_arrays(tmp_path):
    """onnxruntime's numpy bridge does not know ml_dtypes' float8: the backend hands the codes over typed as float8
    and views the returned codes as the ml_dtypes type; the definition path (ORT_DISABLE_ALL) then agrees exactly."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from onnx_qtypes.conformance import OnnxRuntimeBackend, load_case
    from onnx_qtypes.conformance.runner import run_case

    f8 = ml_dtypes.float8_e4m3fn
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "s"], ["r"]),
         helper.make_node("QuantizeLinear", ["r", "t", "z"], ["y"])],
        "f8", [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [4])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
         numpy_helper.from_array(np.array(0.25, np.float32), "t"), numpy_helper.from_array(np.array(0, f8), "z")])
    folder = tmp_path / "f8"
    (folder / "test_data_set_0").mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10),
              str(folder / "model.qdq.onnx"))
    x = np.array([1, -2, 0.5, 3], f8)
    _write_pb(folder / "test_data_set_0" / "input_0.pb", x, "x")
    _write_pb(folder / "test_data_set_0" / "output_0.pb", (x.astype(np.float32) * 2).astype(f8), "y")
    (folder / "case.json").write_text(json.dumps({
        "id": "f8", "kind": "execution", "operator": "QuantizeLinear", "model": "model.qdq.onnx",
        "qdq_model": "model.qdq.onnx", "inputs": ["x"], "outputs": ["y"], "tolerance": {"y": 0}, "tags": {}}))
    backend = OnnxRuntimeBackend(optimize=False)
    case = load_case(folder)
    out = backend.run(backend.prepare(case), case.feeds())["y"]
    assert out.dtype == f8 and list(out.astype(np.float32)) == [2, -4, 1, 6]
    assert run_case(backend, case).outcome == "pass"


# --- results folders name their runtime; stray folders; --save-repro checked up front; -q is quiet --------------


def _results_folder(cases_root: Path, folder: Path) -> Path:
    for case in load_cases(cases_root):
        out = folder / case.id / "test_data_set_0"
        out.mkdir(parents=True)
        for k, (name, value) in enumerate(case.expected().items()):
            _write_pb(out / f"output_{k}.pb", value, name)
    return folder


def test_a_results_folders_name_does_not_depend_on_how_its_path_is_typed(cases_root, tmp_path, capsys,
                                                                         monkeypatch):
    from onnx_qtypes.conformance import ResultsBackend

    folder = _results_folder(cases_root, tmp_path / "res")
    monkeypatch.chdir(tmp_path)
    assert ResultsBackend("res").name == ResultsBackend(str(folder)).name == ResultsBackend("./res/").name \
        == "results:res"
    (folder / "NAME").write_text("my-npu-sdk\n")
    (folder / "VERSION").write_text("4.2\n")
    assert main(["conformance", "--cases", str(cases_root), "--backend", "results:res", "-q"]) == 0
    assert capsys.readouterr().out.startswith("my-npu-sdk 4.2: 3 case(s): 3 pass")
    (folder / "NAME").write_text("\n")
    assert main(["conformance", "--cases", str(cases_root), "--backend", "results:res", "-q"]) == 2
    assert "NAME: empty" in capsys.readouterr().err


def test_a_results_folder_naming_no_case_is_noted(cases_root, tmp_path, capsys):
    folder = _results_folder(cases_root, tmp_path / "res")
    (folder / "add-int8-tie").mkdir()  # a typo
    assert main(["conformance", "--cases", str(cases_root), "--backend", f"results:{folder}", "-q"]) == 0
    assert (f"note: 1 folder(s) of {folder} name no case of the suite and were not read: add-int8-tie"
            in capsys.readouterr().out)


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_save_repro_is_checked_before_the_run(cases_root, tmp_path, capsys, where):
    (tmp_path / "taken").write_text("")
    dest = tmp_path / "taken" if where == "file" else tmp_path / "taken" / "repro"
    assert main(["conformance", "--cases", str(cases_root), "--backend", "test_conformance_runner:HalfAwayBackend",
                 "--save-repro", str(dest)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--save-repro" in captured.err and "is not a folder" in captured.err


def test_quiet_shows_no_progress_bar_even_on_a_terminal(cases_root, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert main(["conformance", "--cases", str(cases_root), "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.count("\n") == 1


def test_a_vendor_subclass_of_a_shipped_backend_keeps_its_name():
    """A vendor wrapping the reference or onnxruntime names its own runtime in reports, not the shipped one's."""
    from onnx_qtypes.conformance import OnnxRuntimeBackend

    class Mine(ReferenceBackend):
        name = "my-reference-fork"

    class MyOrt(OnnxRuntimeBackend):
        name = "my-ort-build"

    assert Mine().name == "my-reference-fork" and ReferenceBackend().name == "reference"
    assert ReferenceBackend("integer").name == "reference-integer"
    assert MyOrt(optimize=False).name == "my-ort-build"
    assert OnnxRuntimeBackend(optimize=False).name == "onnxruntime-unoptimized"

    from onnx_qtypes.conformance import OpenVinoBackend

    class MyOv(OpenVinoBackend):
        name = "my-npu-plugin"

    assert MyOv().name == "my-npu-plugin" and OpenVinoBackend().name == "openvino"


def test_a_junit_failure_gives_its_distance_in_steps_as_a_reader_compares_it():
    from onnx_qtypes.conformance.reports import junit_xml
    from onnx_qtypes.conformance.runner import CaseResult

    failed = CaseResult("conv-int16-bf16", "Conv", "fail", max_steps=765.9043509322804, elements=2,
                        message="output 'y': 2 elements off",
                        deviations=[{"output": "y", "index": [0, 3], "expected": 21601, "actual": 21500,
                                     "steps": 0.0048484848484848485}])
    text = ET.fromstring(junit_xml([failed], "vendor", "1")).find(".//testcase/failure").text
    assert text.startswith("max deviation 766 step(s), 2 element(s)"), text
    assert "(0.00485 step(s))" in text and "765.904" not in text and "0.004848" not in text
    # the judge writes an infinite or NaN distance as text: the failure keeps it (it was dropped)
    failed.deviations[0]["steps"] = "inf"
    text = ET.fromstring(junit_xml([failed], "vendor", "1")).find(".//testcase/failure").text
    assert "expected 21601 (inf step(s))" in text, text


def test_a_distance_in_steps_reads_whole_from_100_on_and_to_three_digits_below():
    from onnx_qtypes.conformance.judging import steps_text

    assert [steps_text(v) for v in (1234.4, 27507.0, 765.9043509322804, 3.0, 0.0048484848, 0.0476190476)] == \
        ["1234", "27507", "766", "3", "0.00485", "0.0476"]  # never "1.23e+03"
    assert [steps_text(v) for v in (float("inf"), float("nan"))] == ["inf", "nan"]
