"""A write that fails is one line naming the file, exit 2, and leaves no half-written file.

Real failures only: /dev/full (ENOSPC) as an output file and behind `>`, a
file-size limit (EFBIG) that stops a regular file part-way, a folder where no
file can be created, and a folder without write permission."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

import numpy as np
import pytest
from builders import ROOT

from onnx_qtypes.cli import main

TYPED = ROOT / "examples" / "typed_cnn.onnx"
BROKEN = ROOT / "examples" / "broken_cnn.onnx"
FULL = "/dev/full"
needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full on this system")


def _cli(*args, stdout=subprocess.PIPE, limit: int | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}

    def file_size_limit():  # in the child only: files it writes stop at `limit` bytes (EFBIG, the signal ignored)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *map(str, args)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=120,
                          preexec_fn=file_size_limit if limit else None)


def _one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr
    return lines[0]


@pytest.fixture
def files(tmp_path):
    """A QDQ model, a typed model and an inputs file for `run`."""
    assert main(["lower", str(TYPED), str(tmp_path / "qdq.onnx")]) == 0
    from onnx_qtypes import load

    model = load(TYPED)
    feeds = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = np.zeros(shape, np.float32)
    np.savez(tmp_path / "in.npz", **feeds)
    return {"qdq": tmp_path / "qdq.onnx", "typed": TYPED, "inputs": tmp_path / "in.npz"}


def _command(name: str, files, out) -> list:
    return {
        "check": ["check", BROKEN, "--format", "json", "-o", out],
        "lift": ["lift", files["qdq"], out],
        "lower": ["lower", files["typed"], out],
        "run": ["run", files["typed"], "--inputs", files["inputs"], "--outputs", out],
    }[name]


@needs_dev_full
@pytest.mark.parametrize("command", ["check", "lift", "lower", "run"])
def test_an_output_file_on_a_full_device_is_one_named_line(files, command):
    line = _one_line(_cli(*_command(command, files, FULL)))
    assert line == f"onnx-qtypes: error: {FULL}: cannot write: No space left on device"


@needs_dev_full
@pytest.mark.parametrize("command", ["show", "show-json", "rule", "rule-id", "lift", "lift-json", "lower", "run"])
def test_standard_output_on_a_full_device_is_one_named_line(files, tmp_path, command):
    args = {
        "show": ["show", files["typed"]],
        "show-json": ["show", files["typed"], "--format", "json"],
        "rule": ["rule"],
        "rule-id": ["rule", "QT408"],
        "lift": ["lift", files["qdq"], tmp_path / "t.onnx"],
        "lift-json": ["lift", files["qdq"], tmp_path / "t.onnx", "--format", "json"],
        "lower": ["lower", files["typed"], tmp_path / "l.onnx"],
        "run": ["run", files["typed"], "--inputs", files["inputs"], "--outputs", tmp_path / "o.npz"],
    }[command]
    with open(FULL, "w") as full:
        line = _one_line(_cli(*args, stdout=full))
    assert line == f"onnx-qtypes: error: {FULL} (standard output): cannot write: No space left on device"


@pytest.mark.parametrize("command", ["check", "lift", "lower", "run"])
def test_a_write_stopped_part_way_keeps_the_old_file_and_leaves_nothing_else(files, tmp_path, command):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "result"
    out.write_bytes(b"old")
    line = _one_line(_cli(*_command(command, files, out), limit=200))  # every output here is larger
    assert line == f"onnx-qtypes: error: {out}: cannot write: File too large"
    assert out.read_bytes() == b"old"
    assert [p.name for p in folder.iterdir()] == ["result"]  # no temporary file left behind


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")
def test_a_folder_where_no_file_can_be_created_names_the_output_not_a_temporary_file(files):
    out = "/proc/self/qtypes-output.onnx"  # the folder exists; the kernel lets nobody create files in it
    line = _one_line(_cli("lower", files["typed"], out))
    assert line.startswith(f"onnx-qtypes: error: {out}: cannot write: "), line
    assert ".qtypes-" not in line


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into any folder")
def test_a_folder_without_write_permission_names_the_output(files, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        line = _one_line(_cli("lower", files["typed"], folder / "l.onnx"))
    finally:
        folder.chmod(0o755)
    assert line == f"onnx-qtypes: error: {folder / 'l.onnx'}: cannot write: Permission denied"
    assert list(folder.iterdir()) == []


@needs_dev_full
@pytest.mark.parametrize("where", ["-o", ">"])
def test_check_report_to_a_full_device_names_it(where):
    if where == "-o":
        line = _one_line(_cli("check", BROKEN, "-o", FULL))
        assert line.startswith(f"onnx-qtypes: error: {FULL}: cannot write:")
    else:
        with open(FULL, "w") as full:
            line = _one_line(_cli("check", BROKEN, stdout=full))
        assert f"{FULL} (standard output): cannot write:" in line
    assert "No space left on device" in line
