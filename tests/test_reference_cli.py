"""``onnx-qtypes run``: .npz in, .npz out, storage plus <name>.real, and one
located line with exit code 2 for inputs that do not fit the model."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from reference_models import T, typed_model

from onnx_qtypes import QType, save
from onnx_qtypes.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def add_model(tmp_path):
    """y = a + b on int8 types of different scales; y is quantized."""
    model = typed_model("Add", [T("a", (2, 2), QType("int8", 0.5, 0)), T("b", (2, 2), QType("int8", 0.25, 4))],
                        [T("y", (2, 2), QType("int8", 1.0, -1))])
    path = tmp_path / "add.onnx"
    save(model, path)
    return path


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


GOOD = {"a": np.array([[10, -3], [0, 2]], np.int8), "b": np.array([[8, 0], [4, 4]], np.int8)}


@pytest.mark.parametrize("kernels", ["definitional", "integer"])
def test_run_writes_storage_and_real_values(add_model, tmp_path, kernels):
    inputs = _npz(tmp_path / "in.npz", **GOOD)
    out = tmp_path / "out.npz"
    result = run_cli("run", str(add_model), "--inputs", inputs, "--outputs", str(out), "--kernels", kernels)
    assert result.returncode == 0, result.stderr
    with np.load(out) as data:
        assert sorted(data.files) == ["y", "y.real"]
        # reals: a = [5, -1.5, 0, 1], b = [1, -1, 0, 0] -> sums [6, -2.5, 0, 1] -> ties to even, zero point -1
        assert data["y"].dtype == np.int8 and data["y"].tolist() == [[5, -3], [-1, 0]]
        assert data["y.real"].dtype == np.float32 and data["y.real"].tolist() == [[6.0, -2.0], [0.0, 1.0]]
    if kernels == "integer":
        assert "integer kernels ran for 1 of 1 typed node(s)" in result.stdout


def test_sub_byte_outputs_are_widened(tmp_path):
    model = typed_model("Relu", [T("x", (3,), QType("int4", 1.0, 0))], [T("y", (3,), QType("int4", 1.0, 0))])
    save(model, tmp_path / "m.onnx")
    inputs = _npz(tmp_path / "in.npz", x=np.array([-8, 3, 7], np.int8))
    assert main(["run", str(tmp_path / "m.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz")]) == 0
    with np.load(tmp_path / "o.npz") as data:
        assert data["y"].dtype == np.int8 and data["y"].tolist() == [0, 3, 7]


def test_dynamic_outputs_carry_their_parameters(tmp_path):
    model = typed_model("Relu", [T("x", (3,), QType("int8", 0.5, 0))], [T("y", (3,), QType("uint8"))])
    save(model, tmp_path / "m.onnx")
    inputs = _npz(tmp_path / "in.npz", x=np.array([-2, 2, 51], np.int8))
    assert main(["run", str(tmp_path / "m.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz")]) == 0
    with np.load(tmp_path / "o.npz") as data:
        # relu -> [0, 1, 25.5]; uint8 asymmetric: scale 25.5 / 255 = 0.1, zero point 0
        assert data["y.scale"].tolist() == [np.float32(0.1)] and data["y.zero_point"].tolist() == [0]
        assert data["y"].tolist() == [0, 10, 255]


def _error(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    ("arrays", "fragments"),
    [
        ({"a": GOOD["a"]}, ["missing input 'b'", "int8 storage of int8:float32<0.25:4>", "shape [2, 2]"]),
        ({"a": GOOD["a"], "b": np.zeros((2, 3), np.int8)}, ["input 'b'", "expected", "shape [2, 2]", "got shape [2, 3]"]),
        ({"a": GOOD["a"], "b": np.zeros((2, 2), np.float32)}, ["input 'b'", "got float32 values"]),
        ({"a": np.full((2, 2), 300), "b": GOOD["b"]}, ["input 'a'", "value 300 at index [0, 0] is outside the int8 storage range [-128, 127]"]),
        ({**GOOD, "c": np.zeros(1)}, ["entry 'c' is not a graph input", "['a', 'b']"]),
    ],
    ids=["missing", "misshaped", "float-for-quantized", "out-of-range", "unknown-entry"],
)
def test_bad_inputs_exit_2_naming_the_input(add_model, tmp_path, capsys, arrays, fragments):
    inputs = _npz(tmp_path / "in.npz", **arrays)
    out = tmp_path / "out.npz"
    line = _error(capsys, "run", str(add_model), "--inputs", inputs, "--outputs", str(out))
    for fragment in fragments:
        assert fragment in line, line
    assert not out.exists()  # never a half-written output


def test_float_input_with_wrong_kind_names_the_expected_type(tmp_path, capsys, example_model):
    save(example_model, tmp_path / "cnn.onnx")
    inputs = _npz(tmp_path / "in.npz", x=np.zeros((1, 3, 8, 8), np.int64))
    line = _error(capsys, "run", str(tmp_path / "cnn.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz"))
    assert "input 'x'" in line and "float32, shape [1, 3, 8, 8]" in line and "got int64 values" in line


def test_unreadable_inputs_file_exits_2(add_model, tmp_path, capsys):
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    line = _error(capsys, "run", str(add_model), "--inputs", str(tmp_path / "junk.npz"), "--outputs", str(tmp_path / "o.npz"))
    assert "junk.npz" in line and "cannot read as .npz: not a zip archive" in line
    line = _error(capsys, "run", str(add_model), "--inputs", str(tmp_path / "none.npz"), "--outputs", str(tmp_path / "o.npz"))
    assert "none.npz: no such file" in line


def test_missing_output_folder_exits_2(add_model, tmp_path, capsys):
    inputs = _npz(tmp_path / "in.npz", **GOOD)
    line = _error(capsys, "run", str(add_model), "--inputs", inputs, "--outputs", str(tmp_path / "nope" / "o.npz"))
    assert "does not exist" in line


def test_usage_errors_exit_2():
    result = run_cli("run", "m.onnx", "--inputs", "in.npz", "--outputs", "o.npz", "--kernels", "fast")
    assert result.returncode == 2 and "invalid choice" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = run_cli("run", "m.onnx")
    assert result.returncode == 2 and "--inputs" in result.stderr
