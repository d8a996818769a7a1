"""`onnx-qtypes check` and `onnx-qtypes rule`: exit codes, one-line errors, profiles from files."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from checker_models import Graph, conv_model, one_tensor, qmsg

from onnx_qtypes import save
from onnx_qtypes.cli import main
from onnx_qtypes.proto.errors import QTypesError


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The real entry point in a fresh process: proves there is no traceback anywhere."""
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def _main(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture()
def clean_path(tmp_path):
    path = tmp_path / "clean.onnx"
    save(conv_model(), path)
    return path


@pytest.fixture()
def broken_path(tmp_path):
    path = tmp_path / "broken.onnx"
    save(one_tensor(qmsg(scale=[0.0])), path)
    return path


def test_exit_codes_in_a_fresh_process(clean_path, broken_path, tmp_path):
    assert run_cli("check", str(clean_path)).returncode == 0
    result = run_cli("check", str(broken_path))
    assert result.returncode == 1 and "QT101" in result.stdout and result.stderr == ""
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(np.random.default_rng(5).bytes(2048))
    result = run_cli("check", str(garbage))
    _one_line_error(result.returncode, result.stderr, "garbage.onnx", "not an ONNX model")


def _malformed(tmp_path, payload: bytes):
    model = one_tensor(qmsg(scale=[0.5]))
    tensor_type = model.graph.input[0].type.tensor_type
    tensor_type.Clear()
    tensor_type.MergeFromString(b"\x08\x00" + payload)
    path = tmp_path / "malformed.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _file(path, data: bytes):
    path.write_bytes(data)
    return path


def _hostile(tmp_path):
    """A quantized initializer claiming 10^12 int8 values with 4 bytes of data."""
    model = conv_model()
    w = next(t for t in model.graph.initializer if t.name == "w")
    del w.dims[:]
    w.dims.extend([10**6, 10**6])
    w.raw_data = b"\x01\x02\x03\x04"
    path = tmp_path / "hostile.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _no_data(tmp_path, values: list[int] | None = None):
    """The quantized weight's data moved out of raw_data: none at all, or ``values`` in int32_data."""
    model = conv_model()
    w = next(t for t in model.graph.initializer if t.name == "w")
    w.ClearField("raw_data")
    w.int32_data.extend(values or [])
    path = tmp_path / "nodata.onnx"
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize(
    ("make", "fragments"),
    [
        (lambda p: p / "missing.onnx", ("missing.onnx", "no such file")),
        (lambda p: p, ("is a directory",)),
        (lambda p: _file(p / "empty.onnx", b""), ("empty file",)),
        (lambda p: _file(p / "text.onnx", b"ir_version: 10\n"), ("not an ONNX model",)),
        (lambda p: _malformed(p, b"\xc2\x3e\x03\x08\xff\xff"),
         ("malformed.onnx: /graph/input/0 (tensor 'q')", "does not decode")),
        (lambda p: _malformed(p, b"\xc0\x3e\x05"), ("malformed.onnx: /graph/input/0 (tensor 'q')", "wire type 0")),
        (_hostile, ("hostile.onnx: /graph/initializer/2", "'w'", "[1000000, 1000000]")),
        (_no_data, ("nodata.onnx: /graph/initializer/2", "'w'", "need 108 INT8 values, found no data")),
        (lambda p: _no_data(p, [1, 2, 3]), ("'w'", "need 108 INT8 values, found 3")),
    ],
    ids=["missing", "directory", "empty", "text", "malformed-extension", "wrong-wire-type", "hostile-dims",
         "initializer-without-data", "initializer-short-data"],
)
def test_unreadable_models_exit_2_with_one_line(tmp_path, capsys, make, fragments):
    code, out, err = _main(capsys, "check", str(make(tmp_path)))
    assert out == ""
    _one_line_error(code, err, *fragments)


def test_truncated_model_exits_2(tmp_path, capsys):
    data = conv_model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 3])
    code, _, err = _main(capsys, "check", str(path))
    _one_line_error(code, err, "cut.onnx")


def test_report_to_a_missing_folder_exits_2_and_writes_nothing(clean_path, tmp_path, capsys):
    code, out, err = _main(capsys, "check", str(clean_path), "-o", str(tmp_path / "no" / "such" / "r.json"))
    _one_line_error(code, err, "does not exist")
    assert out == "" and not (tmp_path / "no").exists()


def test_report_never_overwrites_the_model(clean_path, capsys):
    before = clean_path.read_bytes()
    code, _, err = _main(capsys, "check", str(clean_path), "-o", str(clean_path))
    _one_line_error(code, err, "is the model being checked")
    assert clean_path.read_bytes() == before


def test_profile_by_name_and_by_file(broken_path, tmp_path, capsys):
    profile = tmp_path / "npu.json"
    profile.write_text(json.dumps({
        "name": "npu", "description": "raises QT102", "sources": [],
        "severity": {"QT102": "error"},
    }))
    warn = tmp_path / "warn.onnx"
    save(one_tensor(qmsg(scale=[0.1], expressed=onnx.TensorProto.FLOAT16)), warn)  # QT102 only
    assert _main(capsys, "check", str(warn))[0] == 0
    code, out, _ = _main(capsys, "check", str(warn), "--profile", str(profile), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["profile"] == "npu"
    assert [(d["rule"], d["severity"]) for d in doc["diagnostics"]] == [("QT102", "error")]


DEEP = functools.reduce(lambda inner, _: [inner], range(900), [])  # 900 nested lists


@pytest.mark.parametrize(
    ("document", "fragments"),
    [
        ("{not json", ("not valid JSON", "line 1")),
        (json.dumps({"name": "x", "description": "d"}), ("$", "'sources' is a required property")),
        (json.dumps({"name": "x", "description": "d", "sources": [],
                     "roles": {"weight": {"storage": ["int9"]}}}), ("$.roles.weight.storage[0]",)),
        (json.dumps({"name": "x", "description": "d", "sources": [], "roles": {"weights": {}}}),
         ("$.roles", "weights")),
        (json.dumps({"name": "x", "description": "d", "sources": [], "severity": {"QT101": "warning"}}),
         ("$.severity.QT101", "never lower")),
        (json.dumps({"name": "x", "description": "d", "sources": [], "severity": {"QT999": "error"}}),
         ("$.severity.QT999", "no rule")),
        (json.dumps({"name": "x", "description": "d", "sources": [],
                     "roles": {"weight": {"storage": [{"type": "int8", "min": 5, "max": 5}]}}}),
         ("$.roles.weight.storage[0]", "min 5 must be < max 5")),
        (json.dumps({"name": "x", "description": "d", "sources": [], "accumulator_bits": 4}),
         ("$.accumulator_bits",)),
        ("[" * 200_000 + "]" * 200_000, ("nested too deeply to read",)),  # deeper than the JSON reader goes
        (json.dumps({"name": "x", "description": "d", "sources": [], "shared_parameters": [DEEP, DEEP]}),
         ("$.shared_parameters[0][0]", "nested more than 16 levels")),  # readable, too deep for the validator
        (json.dumps({"name": "X" * 100_000, "description": "d", "sources": []}),
         ("$.name", "(100002 characters) does not match")),
    ],
    ids=["not-json", "missing-sources", "bad-storage", "unknown-role", "lowered-severity", "unknown-rule",
         "empty-range", "tiny-accumulator", "deep-unreadable", "deep", "long-value"],
)
def test_invalid_profile_exits_2_naming_the_json_path(clean_path, tmp_path, capsys, document, fragments):
    profile = tmp_path / "bad.json"
    profile.write_text(document)
    code, out, err = _main(capsys, "check", str(clean_path), "--profile", str(profile))
    assert out == ""
    _one_line_error(code, err, "bad.json", *fragments)
    assert len(err) < 400, err  # the offending value is quoted by its ends


def test_unknown_profile_name_lists_the_built_ins(clean_path, capsys):
    code, _, err = _main(capsys, "check", str(clean_path), "--profile", "tflite")
    _one_line_error(code, err, "'tflite'", "generic", "tflite-int8", "symmetric-int8", "pow2-int8")


def test_rule_prints_the_doc_and_lists_rules(capsys):
    code, out, _ = _main(capsys, "rule", "qt101")
    assert code == 0
    assert out.startswith("QT101 scale-not-positive (error; one quantized type)\nspec: proposal/spec/validity.md#qt101")
    for section in ("## What it checks", "## Why", "## Invalid example", "## Valid example", "## Fix"):
        assert section in out
    code, by_slug, _ = _main(capsys, "rule", "scale-not-positive")
    assert code == 0 and by_slug == out
    code, listing, _ = _main(capsys, "rule")
    rows = listing.splitlines()
    assert code == 0 and rows[0].startswith("QT101  error    scale-not-positive")
    assert any(r.startswith("QT401  warning  data-movement-parameters-changed") for r in rows)


def test_unknown_rule_and_usage_errors_exit_2(capsys):
    code, _, err = _main(capsys, "rule", "QT999")
    _one_line_error(code, err, "unknown rule 'QT999'", "QT101..")
    code, _, err = _main(capsys, "check")
    _one_line_error(code, err, "MODEL")
    code, _, err = _main(capsys, "check", "m.onnx", "--format", "xml")
    _one_line_error(code, err, "invalid choice")
    assert main(["check", "--help"]) == 0 and "--profile" in capsys.readouterr().out


def test_python_api_accepts_path_bytes_and_model(broken_path):
    from onnx_qtypes.checker import ValidationError, check_model, iter_diagnostics

    model = onnx.load(broken_path)
    as_path = [d.to_dict() for d in iter_diagnostics(broken_path)]
    assert as_path == [d.to_dict() for d in iter_diagnostics(broken_path.read_bytes())]
    assert as_path == [d.to_dict() for d in iter_diagnostics(model)]
    with pytest.raises(ValidationError) as info:
        check_model(str(broken_path))
    assert [d.rule for d in info.value.diagnostics] == ["QT101"]
    assert "QT101" in str(info.value)
    with pytest.raises(QTypesError, match="expected a path, bytes or onnx.ModelProto"):
        list(iter_diagnostics(42))  # type: ignore[arg-type]


def test_check_model_returns_warnings_for_a_valid_model():
    from onnx_qtypes.checker import check_model

    warnings = check_model(one_tensor(qmsg(scale=[0.1], expressed=onnx.TensorProto.FLOAT16)))
    assert [w.rule for w in warnings] == ["QT102"]
    assert check_model(Graph().input("x", (1,)).node("Relu", ["x"], ["y"]).output("y", (1,)).build()) == []


def test_a_data_type_onnx_does_not_define_is_a_located_load_error(tmp_path, capsys):
    model = conv_model()
    scale = model.graph.initializer[0]  # the QuantizeLinear's scale, read by QT307
    scale.data_type = 29  # not an ONNX data type; onnx's own reader raises KeyError
    path = tmp_path / "dtype.onnx"
    path.write_bytes(model.SerializeToString())
    code, out, err = _main(capsys, "check", str(path))
    _one_line_error(code, err, "dtype.onnx: /graph/initializer/0", "'x_q_scale'", "data_type 29 is not an ONNX data type")


def test_type_string_of_an_undefined_data_type_matches_no_constraint():
    from onnx_qtypes.checker.schemas import type_string

    assert type_string(29) == "tensor(undefined data type 29)"
