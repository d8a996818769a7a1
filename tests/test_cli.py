"""The command line: exit codes, one-line errors, ``show``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from builders import add_model

from onnx_qtypes import QType, save, set_qtype
from onnx_qtypes.cli import main
from onnx_qtypes.proto.errors import QTypesError


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The real console entry point, in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True, text=True, env=env, timeout=120)


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_show_table_lists_every_quantized_tensor(example_model, tmp_path):
    save(example_model, tmp_path / "m.onnx")
    result = run_cli("show", str(tmp_path / "m.onnx"))
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[2:] if line.strip() and " " in line}
    assert {"x_q", "conv_q", "relu_q", "pool_q", "w", "b"} <= set(rows)
    assert "per-axis axis=0" in rows["w"] and "symmetric" in rows["w"] and "[-127,127]" in rows["w"]
    assert "min=-2.4" in rows["x_q"] and "hist=4 bins" in rows["x_q"]
    assert "6 quantized tensor(s)" in result.stdout


def test_show_json_carries_parameters_and_statistics(example_model, tmp_path):
    save(example_model, tmp_path / "m.onnx")
    result = run_cli("show", str(tmp_path / "m.onnx"), "--format", "json")
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    by_name = {t["tensor"]: t for t in doc["tensors"]}
    w = by_name["w"]["qtype"]
    assert w["storage"] == "int8" and w["axis"] == 0 and len(w["scale"]) == 4 and w["storage_min"] == -127
    assert by_name["x_q"]["statistics"]["tensor"]["histogram_counts"] == [20, 75, 77, 20]
    assert by_name["x_q"]["declared_at"] == ["/graph/value_info/0"]
    assert by_name["b"]["qtype"]["storage"] == "int32"


def test_show_on_a_model_without_quantization(tmp_path):
    save(add_model(), tmp_path / "plain.onnx")
    result = run_cli("show", str(tmp_path / "plain.onnx"), "--format", "json")
    assert result.returncode == 0 and json.loads(result.stdout)["tensors"] == []


def _malformed(tmp_path, payload: bytes):
    model = add_model()
    set_qtype(model, "a", QType("int8", 1.0))
    tt = model.graph.input[0].type.tensor_type
    tt.Clear()
    tt.MergeFromString(b"\x08\x00" + payload)
    path = tmp_path / "bad.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _file(name: str, data: bytes):
    def make(folder):
        (folder / name).write_bytes(data)
        return folder / name

    return make


@pytest.mark.parametrize(
    ("make", "fragments"),
    [
        (lambda p: p / "missing.onnx", ("missing.onnx", "no such file")),
        (lambda p: p, ("is a directory",)),
        (_file("empty.onnx", b""), ("empty file",)),
        (_file("rand.onnx", np.random.default_rng(1).bytes(4096)), ("not an ONNX model",)),
        (_file("text.onnx", b"hello world\n"), ("not an ONNX model",)),
    ],
    ids=["missing", "directory", "empty", "random", "text"],
)
def test_unreadable_input_exits_2_with_one_line(tmp_path, make, fragments):
    assert_one_line_error(run_cli("show", str(make(tmp_path))), *fragments)


def test_truncated_model_exits_2(example_model, tmp_path):
    data = example_model.SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    assert_one_line_error(run_cli("show", str(path)), "cut.onnx")


def test_malformed_quantization_message_exits_2(tmp_path):
    # field 1000, length 3, bytes that are not a QuantizedType (truncated varint)
    path = _malformed(tmp_path, b"\xc2\x3e\x03\x08\xff\xff")
    assert_one_line_error(run_cli("show", str(path)), "/graph/input/0", "does not decode")


def test_quantization_field_with_wrong_wire_type_exits_2(tmp_path):
    path = _malformed(tmp_path, b"\xc0\x3e\x05")  # field 1000 as a varint
    assert_one_line_error(run_cli("show", str(path)), "/graph/input/0", "wire type 0")


def test_usage_errors_exit_2_with_one_line():
    assert_one_line_error(run_cli(), "required")
    assert_one_line_error(run_cli("frobnicate"), "invalid choice")
    assert_one_line_error(run_cli("show"), "MODEL")
    assert_one_line_error(run_cli("show", "x.onnx", "--format", "xml"), "invalid choice")
    assert run_cli("frobnicate").stderr.count("onnx-qtypes: error:") == 1  # no doubled prefix


def test_output_that_is_an_input_is_refused(tmp_path):
    from onnx_qtypes.proto.files import refuse_overwrite

    (tmp_path / "m.onnx").write_bytes(b"x")
    with pytest.raises(QTypesError, match="is the model being read"):
        refuse_overwrite(tmp_path / "sub" / ".." / "m.onnx", model=tmp_path / "m.onnx")
    refuse_overwrite(tmp_path / "out.onnx", model=tmp_path / "m.onnx", inputs=None)  # a different file is fine
    (tmp_path / "hard.onnx").hardlink_to(tmp_path / "m.onnx")
    with pytest.raises(QTypesError, match="is the model being read"):
        refuse_overwrite(tmp_path / "hard.onnx", model=tmp_path / "m.onnx")


def test_help_and_version_exit_0(capsys):
    assert main(["--version"]) == 0
    assert "onnx-qtypes" in capsys.readouterr().out
    assert main(["show", "--help"]) == 0
