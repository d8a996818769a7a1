"""``onnx-qtypes lift`` and ``onnx-qtypes lower``: files, reports, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from corpus import calibration_cache, corpus_feeds, corpus_paths, run_onnxruntime
from onnx import TensorProto, helper

from onnx_qtypes import QType, load, quantized_tensors, save, set_qtype
from onnx_qtypes.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True, text=True, env=env, timeout=120)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_lift_then_lower_through_the_console_entry_point(tmp_path):
    name = "cnn-qdq_u8_pertensor"
    typed, lowered = tmp_path / "typed.onnx", tmp_path / "lowered.onnx"
    result = run_cli("lift", str(corpus_paths()[name]), str(typed), "--statistics", str(calibration_cache(name)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("statistics on 8 tensor(s)")
    assert "14 quantized tensor(s) typed" in result.stdout
    assert quantized_tensors(load(typed))["r1"].statistics is not None
    result = run_cli("lower", str(typed), str(lowered))
    assert result.returncode == 0, result.stderr
    assert "IR 10, opset 21" in result.stdout
    feeds = corpus_feeds(name)
    original = run_onnxruntime(onnx.load(corpus_paths()[name]), feeds, optimize=False)
    assert np.array_equal(run_onnxruntime(onnx.load(lowered), feeds, optimize=False)["y"], original["y"])


def test_lift_json_report(tmp_path, capsys):
    assert main(["lift", str(corpus_paths()["attention-qop_u8"]), str(tmp_path / "t.onnx"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["typed_tensors"] == 23 and doc["qoperator_nodes"] == 9
    assert doc["folded"] == {"QuantizeLinear": 0, "DequantizeLinear": 0}
    assert doc["warnings"] == [] and doc["output"] == str(tmp_path / "t.onnx")


def test_lift_warnings_and_notes(tmp_path, capsys):
    plain = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 21)], ir_version=10,
    )
    onnx.save(plain, tmp_path / "plain.onnx")
    assert main(["lift", str(tmp_path / "plain.onnx"), str(tmp_path / "same.onnx")]) == 0
    out = capsys.readouterr().out
    assert "note: the model has no quantization; it lifts to itself" in out
    assert onnx.load(tmp_path / "same.onnx").graph == plain.graph

    dynamic = helper.make_model(
        helper.make_graph(
            [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"], name="dyn"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="back"),
             helper.make_node("Cast", ["q"], ["n"], name="peek", to=TensorProto.FLOAT)],  # q read as integers
            "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("n", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 21)], ir_version=10,
    )
    onnx.save(dynamic, tmp_path / "dynamic.onnx")
    assert main(["lift", str(tmp_path / "dynamic.onnx"), str(tmp_path / "d.onnx")]) == 0
    err = capsys.readouterr().err
    assert "onnx-qtypes: warning: DynamicQuantizeLinear 'dyn' (/graph/node/0)" in err
    assert "warning: DequantizeLinear 'back' (/graph/node/1), tensor 'q': scale 's' is not a constant" in err


def test_lower_form_qoperator(tmp_path, capsys):
    typed = tmp_path / "typed.onnx"
    assert main(["lift", str(corpus_paths()["mlp-qop_u8"]), str(typed)]) == 0
    assert main(["lower", str(typed), str(tmp_path / "q.onnx"), "--form", "qoperator"]) == 0
    assert "note: 2 QLinearConv / QLinearMatMul node(s)" in capsys.readouterr().out
    assert [n.op_type for n in onnx.load(tmp_path / "q.onnx").graph.node].count("QLinearMatMul") == 2


def _dynamic_typed(tmp_path):
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["a"], ["b"], name="relu")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.UINT8, [2])],
                          [helper.make_tensor_value_info("b", TensorProto.UINT8, [2])]),
        opset_imports=[helper.make_opsetid("", 21)], ir_version=10,
    )
    set_qtype(model, "a", QType("uint8", 0.5, 0))
    set_qtype(model, "b", QType("uint8", axis=0))  # a per-axis dynamic type: no standard form
    save(model, tmp_path / "dynamic.onnx")
    return tmp_path / "dynamic.onnx"


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["lower", "{dynamic}", "{out}"], ["{dynamic}: tensor 'b': a per-axis dynamic type"]),
        (["lower", "{missing}", "{out}"], ["{missing}: no such file"]),
        (["lift", "{missing}", "{out}"], ["{missing}: no such file"]),
        (["lower", "{dynamic}", "{out}", "--form", "qlinear"], ["invalid choice: 'qlinear'"]),
        (["lift", "{corpus}", "{nofolder}"], ["does not exist"]),
    ],
    ids=["dynamic-type", "lower-missing", "lift-missing", "bad-form", "no-folder"],
)
def test_errors_are_one_line_with_exit_2(tmp_path, capsys, argv, fragments):
    places = {
        "dynamic": str(_dynamic_typed(tmp_path)), "out": str(tmp_path / "out.onnx"),
        "missing": str(tmp_path / "missing.onnx"), "corpus": str(corpus_paths()["mlp-qdq_u8_pertensor"]),
        "nofolder": str(tmp_path / "no" / "such" / "out.onnx"),
    }
    assert main([a.format(**places) for a in argv]) == 2
    line = one_line(capsys.readouterr().err)
    for fragment in fragments:
        assert fragment.format(**places) in line
    assert not (tmp_path / "out.onnx").exists()
