"""What a backend does never ends, stalls or garbles a run (issue 21 audit): BaseExceptions a backend raises are
that case's error, the user's Ctrl-C stops the run with a partial report and exit 130, backend members are
checked up front, and text from a backend is made safe wherever it is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
from test_conformance_runner import cases_root  # noqa: F401
from test_conformance_vendor import _cli

from onnx_qtypes.cli import main
from onnx_qtypes.conformance import ReferenceBackend, run_suite

# --- a backend's BaseException is its case's error ---------------------------------------------------------------


class _Raises(ReferenceBackend):
    """Raises ``exc`` from ``where`` on the Add case, works on the others."""

    def __init__(self, exc: BaseException, where: str) -> None:
        super().__init__()
        self.name, self.exc, self.where = "raises", exc, where

    def _maybe(self, case_id: str, where: str) -> None:
        if where == self.where and case_id == "add-int8-ties":
            raise self.exc

    def supports(self, case):
        self._maybe(case.id, "supports")
        return super().supports(case)

    def prepare(self, case):
        self._maybe(case.id, "prepare")
        return case.id, super().prepare(case)

    def run(self, prepared, feeds):
        case_id, inner = prepared
        self._maybe(case_id, "run")
        return super().run(inner, feeds)


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()], ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("where", ["supports", "prepare", "run"])
@pytest.mark.parametrize("how", [{}, {"jobs": 2}, {"timeout": 30}], ids=["serial", "jobs", "timeout"])
def test_a_backends_base_exception_is_that_cases_error(cases_root, exc, where, how):
    started = time.monotonic()
    results = {r.id: r for r in run_suite(_Raises(exc, where), root=cases_root, **how)}
    assert time.monotonic() - started < 20  # neither stalled nor timed out
    add = results["add-int8-ties"]
    assert add.outcome == "error" and add.reason_class == "runtime-error", add.message
    assert type(exc).__name__ in add.message and "timed out" not in add.message
    assert [results[i].outcome for i in ("matmul-uint8-zero-points", "relu-int8-saturates")] == ["pass", "pass"]


def test_system_exit_from_a_backend_file_is_an_error_and_the_run_reports(cases_root, tmp_path):
    (tmp_path / "quits.py").write_text(
        "from onnx_qtypes.conformance import ReferenceBackend\n\n\n"
        "class Quits(ReferenceBackend):\n    name = 'quits'\n\n"
        "    def run(self, prepared, feeds):\n        raise SystemExit(3)\n")
    for jobs in ("1", "2"):
        done = _cli("--cases", str(cases_root), "--backend", "quits:Quits", "-j", jobs, "--report", "r.json",
                    cwd=tmp_path, timeout=60)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "0 pass, 0 fail, 0 unsupported, 3 error" in done.stdout
        report = json.loads((tmp_path / "r.json").read_text())
        assert {c["message"] for c in report["cases"]} == {"SystemExit: 3"}


# --- the user's Ctrl-C ----------------------------------------------------------------------------------------------

SLOW = '''
import pathlib
import time

from onnx_qtypes.conformance import ReferenceBackend


class Slow(ReferenceBackend):
    """Finishes the Add case, then never ends the MatMul one: the user presses Ctrl-C."""

    name = "slow"

    def run(self, prepared, feeds):
        out = super().run(prepared, feeds)
        if "r" in out:  # MatMul's output
            pathlib.Path("started").write_text("")
            while True:
                time.sleep(0.05)
        return out
'''


def _as_in_a_terminal() -> None:
    """Ctrl-C's default disposition in the child, as a terminal gives it: a suite started in the background (a
    shell's ``&``) passes SIGINT on ignored, and Python then installs no handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_users_ctrl_c_stops_the_run_with_a_partial_report_and_exit_130(cases_root, tmp_path, jobs):
    (tmp_path / "slow_backend.py").write_text(SLOW)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")}
    process = subprocess.Popen([sys.executable, "-m", "onnx_qtypes", "conformance", "--cases", str(cases_root),
                                "--backend", "slow_backend:Slow", "-j", jobs, "--report", "r.json", "--junit",
                                "r.xml"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=_as_in_a_terminal)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists():
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, out + err
    assert "Traceback" not in err
    report = json.loads((tmp_path / "r.json").read_text())
    finished = [c["id"] for c in report["cases"]]
    if jobs == "1":  # the Add case, then the MatMul one that never ends
        assert finished == ["add-int8-ties"]
    else:  # beside the MatMul case, Add and then Relu may have finished or not yet (a loaded machine: neither)
        assert set(finished) <= {"add-int8-ties", "relu-int8-saturates"} and finished[:1] in ([], ["add-int8-ties"])
    assert f"interrupted after {len(finished)} of 3 case(s)" in err
    assert all(c["outcome"] == "pass" for c in report["cases"])
    assert report["interrupted"] is True and f"{len(finished)} case(s): {len(finished)} pass" in out
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "r.xml").getroot().find("testsuite/properties")}
    assert props["interrupted"] == "true"


# --- backend members are checked up front --------------------------------------------------------------------------

MEMBERS = '''
from onnx_qtypes.conformance import ReferenceBackend

_reference = ReferenceBackend()


class Base:
    name = "mine"

    def supports(self, case):
        return True

    def prepare(self, case):
        return _reference.prepare(case)

    def run(self, prepared, feeds):
        return _reference.run(prepared, feeds)


class NoName(Base):
    name = None


class BlankName(Base):
    name = "  "


class NumberVersion(Base):
    version = 1.5


class Tflite(Base):
    form = "tflite"


class NoRun:
    name = "x"

    def supports(self, case):
        return True

    def prepare(self, case):
        return None


class Fine(Base):
    version = "1.5"
    form = "typed"
'''


@pytest.mark.parametrize("cls, words", [
    ("NoName", "member 'name' must be a non-empty string"), ("BlankName", "member 'name' must be a non-empty"),
    ("NumberVersion", "member 'version' must be a string"), ("Tflite", "member 'form' is 'tflite'"),
    ("NoRun", "not a Backend (no run method)"),
])
def test_a_backend_member_that_breaks_the_contract_exits_2_naming_it(cases_root, tmp_path, capsys, cls, words):
    (tmp_path / "members.py").write_text(MEMBERS)
    spec = f"{tmp_path / 'members.py'}:{cls}"
    assert main(["conformance", "--cases", str(cases_root), "--backend", spec]) == 2
    captured = capsys.readouterr()
    assert words in captured.err and spec in captured.err and len(captured.err.strip().splitlines()) == 1
    assert captured.out == ""  # refused before running anything
    assert main(["conformance", "--cases", str(cases_root), "--backend", f"{tmp_path / 'members.py'}:Fine", "-q"]) == 0
    assert capsys.readouterr().out.startswith("mine 1.5: 3 case(s): 3 pass")


# --- text from a backend is made safe wherever it is written ---------------------------------------------------------

ODD = '''
class Odd:
    name = "odd\\x1b[31m\\x00runtime"
    version = "1.0\\x07"

    def supports(self, case):
        return "declines \\x1b]0;title\\x07 this" if case.operator == "Relu" else True

    def prepare(self, case):
        return case

    def run(self, prepared, feeds):
        raise RuntimeError("kernel \\udcff failed \\x1b[0m\\x0c at \\x9b1m node")
'''


def test_control_characters_and_lone_surrogates_from_a_backend_are_replaced_everywhere(cases_root, tmp_path):
    (tmp_path / "odd.py").write_text(ODD)
    done = _cli("--cases", str(cases_root), "--backend", "odd:Odd", "--junit", "r.xml", "--report", "r.json",
                "--save-repro", "repro", "-v", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    root = ET.parse(tmp_path / "r.xml").getroot()  # well-formed
    assert root.find("testsuite").get("name") == "onnx-qtypes conformance (odd\ufffd[31m\ufffdruntime)"
    error = root.find(".//testcase[@name='add-int8-ties']/error").get("message")
    assert error == "RuntimeError: kernel \ufffd failed \ufffd[0m at \ufffd1m node"
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["backend"] == {"name": "odd\ufffd[31m\ufffdruntime", "version": "1.0\ufffd"}
    for text in (done.stdout, (tmp_path / "repro" / "add-int8-ties" / "README.txt").read_text(encoding="utf-8")):
        assert not any(ord(c) < 32 and c not in "\t\n" or 0x7f <= ord(c) <= 0x9f for c in text)
        assert "kernel \ufffd failed" in text
    relu = next(c for c in report["cases"] if c["id"] == "relu-int8-saturates")
    assert relu["message"] == "declines \ufffd]0;title\ufffd this"
