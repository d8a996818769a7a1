"""Report formats: text lines, the JSON document of DESIGN.md, SARIF 2.1.0 against the official schema."""

from __future__ import annotations

import json
import pathlib

import jsonschema
import numpy as np
import pytest
from builders import ROOT
from checker_models import concat_model, conv_model, int8, one_tensor, qmsg
from onnx import TensorProto, helper

from onnx_qtypes import save
from onnx_qtypes.checker import all_rules, iter_diagnostics
from onnx_qtypes.checker.emit import Report, render
from onnx_qtypes.checker.emit.sarif import fingerprint
from onnx_qtypes.cli import main

SARIF_SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"  # vendored; origin and licence: tests/data/README.md


def _mixed(tmp_path: pathlib.Path) -> pathlib.Path:
    """Two errors (QT101 at scale 1, QT103) and one warning (QT102: 0.1 is not a float16 value)."""
    model = one_tensor(qmsg(scale=[0.5, 0.0, 0.1], zero_point=[0, 0, 300], axis=1, expressed=TensorProto.FLOAT16))
    path = tmp_path / "mixed.onnx"
    save(model, path)
    return path


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_report_follows_design(tmp_path, capsys):
    path = _mixed(tmp_path)
    code, out, err = _cli(capsys, "check", str(path), "--format", "json")
    assert code == 1 and err == ""
    doc = json.loads(out)
    assert set(doc) == {"model", "profile", "diagnostics", "notes", "summary"} and doc["notes"] == []
    assert doc["model"] == str(path) and doc["profile"] == "generic"
    by_rule = {d["rule"]: d for d in doc["diagnostics"]}
    assert set(by_rule) == {"QT101", "QT102", "QT103"}
    qt101 = by_rule["QT101"]
    assert qt101 == {
        "rule": "QT101",
        "name": "scale-not-positive",
        "severity": "error",
        "message": qt101["message"],
        "location": {"pointer": "/graph/input/0/type/tensor_type/quantization/scale/1", "node": None, "tensor": "q"},
        "help": "onnx-qtypes rule QT101",
    }
    assert "scale 0.0 must be finite and non-zero" in qt101["message"]
    assert by_rule["QT102"]["severity"] == "warning"  # 0.1 is not a float32 value
    assert doc["summary"] == {"errors": 2, "warnings": 1}


def test_json_carries_related_locations_for_disagreeing_declarations(capsys, tmp_path):
    from checker_models import Graph

    model = (Graph().input("q", (2,), int8(0.5, 0)).value("q", (2,), int8(0.25, 0))
             .node("Identity", ["q"], ["y"], name="identity").output("y", (2,)).build())
    save(model, tmp_path / "m.onnx")
    _, out, _ = _cli(capsys, "check", str(tmp_path / "m.onnx"), "--format", "json")
    (found,) = [d for d in json.loads(out)["diagnostics"] if d["rule"] == "QT301"]
    assert found["location"]["pointer"] == "/graph/value_info/0"
    assert found["related"] == [{"pointer": "/graph/input/0", "node": None, "tensor": "q"}]


def test_text_report_is_one_line_per_finding_and_a_summary(tmp_path, capsys):
    path = _mixed(tmp_path)
    code, out, _ = _cli(capsys, "check", str(path))
    lines = out.splitlines()
    assert code == 1 and len(lines) == 4
    assert lines[0].startswith(f"{path}:/graph/input/0/type/tensor_type/quantization/scale/1: error QT101 "
                               "scale-not-positive: tensor 'q': ")
    assert any(" warning QT102 scale-not-representable: " in line for line in lines)
    assert lines[-1].startswith(f"{path}: 2 errors, 1 warning (profile generic")


def test_text_report_of_a_clean_model(tmp_path, capsys):
    save(conv_model(), tmp_path / "ok.onnx")
    code, out, _ = _cli(capsys, "check", str(tmp_path / "ok.onnx"))
    assert code == 0 and out == f"{tmp_path / 'ok.onnx'}: no findings (profile generic)\n"


def test_warnings_alone_exit_0(tmp_path, capsys):
    save(concat_model([0.1, 0.3], 0.3), tmp_path / "warn.onnx")  # QT401 is a warning under generic
    code, out, _ = _cli(capsys, "check", str(tmp_path / "warn.onnx"), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["summary"] == {"errors": 0, "warnings": 1}
    code, _, _ = _cli(capsys, "check", str(tmp_path / "warn.onnx"), "--profile", "tflite-int8")
    assert code == 1


def _sarif(report: Report) -> dict:
    return json.loads(render(report, "sarif"))


def test_sarif_validates_against_the_official_schema(tmp_path, capsys):
    schema = json.loads(SARIF_SCHEMA.read_text())
    path = _mixed(tmp_path)
    code, out, _ = _cli(capsys, "check", str(path), "--format", "sarif")
    assert code == 1
    doc = json.loads(out)
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.id for r in all_rules()]
    qt101 = rules[[r["id"] for r in rules].index("QT101")]
    assert qt101["name"] == "scale-not-positive" and "## Why" in qt101["help"]["text"]
    assert qt101["defaultConfiguration"]["level"] == "error"
    result = next(r for r in run["results"] if r["ruleId"] == "QT101")
    assert rules[result["ruleIndex"]]["id"] == "QT101" and result["level"] == "error"
    (location,) = result["locations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == pathlib.Path(path).as_uri()
    assert location["logicalLocations"] == [
        {"fullyQualifiedName": "/graph/input/0/type/tensor_type/quantization/scale/1", "name": "q", "kind": "variable"}
    ]
    assert run["artifacts"][0]["location"]["uri"] == pathlib.Path(path).as_uri()
    assert len(result["partialFingerprints"]["onnxQtypesFinding/v1"]) == 32


def test_sarif_of_relative_path_and_of_bytes_validate():
    schema = json.loads(SARIF_SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    diagnostics = tuple(iter_diagnostics(one_tensor(qmsg(scale=[0.0]))))
    relative = _sarif(Report("models/my model.onnx", "generic", diagnostics))
    validator.validate(relative)
    uri = relative["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "models/my%20model.onnx"
    in_memory = _sarif(Report("<bytes>", "generic", diagnostics))
    validator.validate(in_memory)
    assert "physicalLocation" not in in_memory["runs"][0]["results"][0]["locations"][0]


def test_sarif_fingerprints_survive_inserting_a_node_elsewhere():
    model = conv_model(w_axis=1, bias=None)  # QT402 at the conv node
    before = [d for d in iter_diagnostics(model) if d.rule == "QT402"]
    shifted = conv_model(w_axis=1, bias=None)
    shifted.graph.node.insert(0, helper.make_node("Identity", ["x"], ["x_copy"], name="unrelated"))
    shifted.graph.value_info.append(helper.make_tensor_value_info("x_copy", 1, [1, 3, 8, 8]))
    after = [d for d in iter_diagnostics(shifted) if d.rule == "QT402"]
    assert before[0].location.pointer != after[0].location.pointer  # the index moved ...
    assert fingerprint(before[0]) == fingerprint(after[0])  # ... the fingerprint did not
    assert fingerprint(before[0]) != fingerprint(next(iter_diagnostics(one_tensor(qmsg(scale=[0.0])))))


def test_sarif_levels_follow_profile_severity():
    diagnostics = tuple(iter_diagnostics(concat_model([0.1, 0.3], 0.3), "tflite-int8"))
    doc = _sarif(Report("m.onnx", "tflite-int8", diagnostics))
    run = doc["runs"][0]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels["QT401"] == "error"  # raised by the profile
    default = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "QT401")["defaultConfiguration"]
    assert default["level"] == "warning"
    assert run["properties"]["profile"] == "tflite-int8"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_output_file_is_written_whole(tmp_path, capsys, fmt):
    path = _mixed(tmp_path)
    target = tmp_path / f"report.{fmt}"
    code, out, err = _cli(capsys, "check", str(path), "--format", fmt, "-o", str(target))
    assert code == 1 and out == "" and err == ""
    text = target.read_text()
    assert "QT101" in text
    if fmt != "text":
        json.loads(text)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".qtypes-")]


def test_numbers_in_reports_are_plain_json():
    diagnostics = tuple(iter_diagnostics(one_tensor(qmsg(scale=[float("nan")]))))
    text = render(Report("m.onnx", "generic", diagnostics), "json")
    assert "NaN" not in text.replace("nan", "")  # messages quote the value, the document stays strict JSON
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert np.isnan(float("nan"))


def test_text_report_keeps_one_finding_per_line_whatever_the_names():
    from checker_models import Graph

    from onnx_qtypes.checker import iter_diagnostics
    from onnx_qtypes.checker.emit import Report, text

    hostile = "a\nfake.onnx:/graph: error QT999"
    g = Graph().input(hostile, (2,), int8(0.5, 0))
    g.node("Identity", [hostile], ["y"], name="n\x1b[31mred").value("y", (2,), int8(0.25, 0))
    model = g.dequantize("y", "out", int8(0.25, 0)).output("out", (2,)).build()
    diagnostics = tuple(iter_diagnostics(model))
    assert any(d.rule == "QT401" for d in diagnostics)
    rendered = text.render(Report("m.onnx", "generic", diagnostics))
    lines = rendered.splitlines()
    assert len(lines) == len(diagnostics) + 1 and "\x1b" not in rendered
    assert "a\\nfake.onnx" in rendered and "n\\x1b[31mred" in rendered
