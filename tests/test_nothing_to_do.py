"""lift / lower with nothing to do never replace an existing file.

`lift t.onnx q.onnx` with t.onnx already typed (or `lower` of a model without
quantized types) is most likely IN and OUT swapped: the existing OUT is left
as it was, exit 2 with one line. A new OUT is written, with a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest
from builders import ROOT
from reference_models import T, typed_model

from onnx_qtypes import get_statistics, load, quantized_tensors
from onnx_qtypes.cli import main

TYPED = ROOT / "examples" / "typed_cnn.onnx"


@pytest.fixture
def pair(tmp_path):
    """t.onnx (typed) and q.onnx (its QDQ form), both real files."""
    typed, qdq = tmp_path / "t.onnx", tmp_path / "q.onnx"
    typed.write_bytes(TYPED.read_bytes())
    assert main(["lower", str(typed), str(qdq)]) == 0
    assert quantized_tensors(load(typed)) and not quantized_tensors(load(qdq))
    return typed, qdq


def _swapped(command: str, pair) -> tuple:
    typed, qdq = pair
    return (typed, qdq, "already typed; nothing to lift") if command == "lift" else \
        (qdq, typed, "no quantized types; nothing to lower")


@pytest.mark.parametrize("command", ["lift", "lower"])
def test_swapped_arguments_leave_the_existing_output_unchanged(pair, command):
    source, existing, reason = _swapped(command, pair)
    before = existing.read_bytes()
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    result = subprocess.run([sys.executable, "-m", "onnx_qtypes", command, str(source), str(existing)],
                            capture_output=True, text=True, env=env, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and result.stdout == "", result
    assert lines[0].startswith(f"onnx-qtypes: error: {source}: ") and reason in lines[0], lines[0]
    assert f"{existing} left unchanged" in lines[0]
    assert existing.read_bytes() == before
    assert sorted(p.name for p in existing.parent.iterdir()) == ["q.onnx", "t.onnx"]


@pytest.mark.parametrize("command", ["lift", "lower"])
def test_a_new_output_is_written_with_a_warning(pair, tmp_path, capsys, command):
    source, _, reason = _swapped(command, pair)
    out = tmp_path / "new.onnx"
    assert main([command, str(source), str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"onnx-qtypes: warning: {source}: ") and reason in err[0], err
    assert err[0].endswith(f"{out} written anyway, with nothing converted")
    assert onnx.load(out).graph.node == onnx.load(source).graph.node


def test_a_stream_output_is_no_file_to_keep(pair, capsys):
    typed, _ = pair
    assert main(["lift", str(typed), os.devnull]) == 0
    assert "written anyway" in capsys.readouterr().err


def test_statistics_attached_to_a_float_model_are_work_done(tmp_path, capsys):
    onnx.save(typed_model("Relu", [T("x", (2,))], [T("y", (2,))]), tmp_path / "float.onnx")  # no quantized type
    (tmp_path / "cal.json").write_text(json.dumps({"x": {"lowest": -1.0, "highest": 3.0}}))
    out = tmp_path / "out.onnx"
    out.write_bytes(b"an older result")
    assert main(["lift", str(tmp_path / "float.onnx"), str(out), "--statistics", str(tmp_path / "cal.json")]) == 0
    assert capsys.readouterr().err == ""
    assert get_statistics(load(out), "x").tensor.max == 3.0


def test_the_help_says_what_happens(capsys):
    for command in ("lift", "lower"):
        assert main([command, "--help"]) == 0
        assert "left unchanged" in " ".join(capsys.readouterr().out.split())
