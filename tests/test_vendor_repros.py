"""The standalone reproductions of published deviations (conformance_tests/vendor_repros/<runtime>/*.py).

Each script is what goes to the runtime's issue tracker: numpy, onnx and the runtime only, exit 1 while the
deviation is there and 0 once it is gone. These tests run every script of the runtimes installed here and check it
exits as recorded for the installed version (1 on the deviation's version, 0 on a version its entry marks
``fixed``): a new runtime version must be recorded (publish_status.py) before these pass again, like any other
versioned result. They never decide whether the runtime is right; the script's own output says what differs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from onnx_qtypes.conformance.deviations import Deviation, load_deviations, script_exit

ROOT = Path(__file__).resolve().parents[1]
REPROS = ROOT / "conformance_tests" / "vendor_repros"
# runtime folder -> how to read its installed version (the one its deviations are keyed by)
RUNTIMES = {"tract": lambda: __import__("tract").version(), "iree": lambda: version("iree-base-runtime"),
            "onnxruntime": lambda: version("onnxruntime"), "openvino": lambda: version("openvino")}
ALLOWED_IMPORTS = {"numpy", "onnx", "tract", "iree", "onnxruntime", "openvino", "sys", "os", "tempfile", "importlib"}
SCRIPTED = [d for d in load_deviations() if d.script]


def _id(dev: Deviation) -> str:
    return Path(dev.script).stem


def test_every_deviation_of_the_scripted_runtimes_has_its_script_and_every_script_a_deviation():
    backends = {d.backend for d in SCRIPTED}
    assert backends >= set(RUNTIMES), f"no scripted deviations for {set(RUNTIMES) - backends}"
    for dev in load_deviations():
        if dev.backend in RUNTIMES:
            assert dev.script, f"{dev.backend} {dev.kind} ({dev.reproduction}): no standalone script"
    referenced = {ROOT / d.script for d in SCRIPTED}
    for path in referenced:
        assert path.is_file(), f"{path.relative_to(ROOT)}: no such script"
        assert path.parent.parent == REPROS and path.parent.name in RUNTIMES, path
    on_disk = set(REPROS.glob("*/*.py"))
    assert on_disk == referenced, f"scripts no deviation names: {sorted(p.name for p in on_disk - referenced)}"


@pytest.mark.parametrize("path", sorted(REPROS.glob("*/*.py")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scripts_are_standalone(path):
    """Only numpy, onnx, the runtime and the standard library: a vendor runs it without this project."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= ALLOWED_IMPORTS, f"{path.name} imports {sorted(imported - ALLOWED_IMPORTS)}"
    assert ast.get_docstring(tree), f"{path.name}: no docstring saying expected, actual and why"


@pytest.mark.parametrize("dev", SCRIPTED, ids=_id)
def test_each_script_exits_as_recorded_for_the_installed_runtime(dev):
    runtime = Path(dev.script).parent.name
    installed = RUNTIMES[runtime]()  # the runtime is in the test extra: an ImportError here is a broken install
    expected = script_exit(dev, installed)
    assert expected is not None, (f"{runtime} {installed} is neither the version {dev.version} the deviation was "
                                  f"recorded on nor one its entry marks fixed ({dev.fixed or 'none'}): rerun "
                                  f"python conformance_tests/publish_status.py --backend {dev.backend} and "
                                  f"python {dev.script}, and record the result in deviations.json")
    done = subprocess.run([sys.executable, str(ROOT / dev.script)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]  # a crash also exits 1: it is no reproduction
    assert done.returncode == expected, (f"{dev.script} exited {done.returncode} on {runtime} {installed}, "
                                        f"recorded {expected}:\n{done.stdout[-2000:]}")
    assert ("REPRODUCED" in done.stdout) == (expected == 1), done.stdout[-2000:]


@pytest.mark.parametrize("recorded, fixed, installed, status", [
    ("0.23.9", "", "0.23.9", 1),
    ("0.23.9", "", "0.23.10", None),
    ("0.23.9", ">=0.24", "0.24.1", 0),
    (">=3.13,<3.14", "3.14.*", "3.13.2", 1),
    (">=3.13,<3.14", "3.14.*", "3.14.0", 0),
])
def test_the_recorded_exit_follows_the_entrys_versions(recorded, fixed, installed, status):
    dev = Deviation("v", "b", recorded, ("*",), "runtime error", "e", "e", "c", script="x.py", fixed=fixed)
    assert script_exit(dev, installed) == status
