"""``show``: standard JSON, conflicting declarations, escaped names, located errors for what it cannot read."""

from __future__ import annotations

import json
import math

import onnx
from builders import add_model
from onnx import TensorProto, helper
from test_cli import assert_one_line_error, run_cli

from onnx_qtypes import QType, save, set_qtype
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.model import write_view


def _declare(vi: onnx.ValueInfoProto, quantization: bytes | None = None, statistics: bytes | None = None) -> None:
    """Write raw QuantizedType / TensorStatistics bytes into a declaration (what a newer or broken producer wrote)."""
    view = pb.TensorTypeView.FromString(vi.type.tensor_type.SerializeToString())
    view.elem_type = TensorProto.UNDEFINED
    if quantization is not None:
        view.quantization.Clear()
        view.quantization.MergeFromString(quantization)
    if statistics is not None:
        view.statistics.Clear()
        view.statistics.MergeFromString(statistics)
    write_view(vi.type.tensor_type, view)


def _typed(tmp_path, name: str = "m.onnx", model: onnx.ModelProto | None = None):
    model = model or add_model()
    for tensor in ("a", "b", "c"):
        set_qtype(model, tensor, QType("int8", 0.5))
    return model, tmp_path / name


def _show_json(path) -> list[dict]:
    result = run_cli("show", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(result.stdout, parse_constant=refuse)["tensors"]


def test_json_writes_non_finite_numbers_as_strings(tmp_path):
    model, path = _typed(tmp_path)
    bad = pb.QuantizedType(storage_type=TensorProto.INT8, expressed_type=TensorProto.FLOAT,
                           scale=[math.nan, math.inf, -math.inf], zero_point=[0, 0, 0], axis=0)
    stats = pb.TensorStatistics(tensor=pb.Statistics(min=-math.inf, max=math.inf, mean=math.nan, count=3))
    _declare(model.graph.input[0], bad.SerializeToString(), stats.SerializeToString())
    save(model, path)
    by_name = {t["tensor"]: t for t in _show_json(path)}
    assert by_name["a"]["qtype"]["scale"] == ["nan", "inf", "-inf"]
    assert by_name["a"]["statistics"]["tensor"] == {"min": "-inf", "max": "inf", "mean": "nan", "count": 3}
    assert by_name["b"]["qtype"]["scale"] == [0.5]  # finite rows as before


def test_a_tensor_declared_with_two_types_shows_both(tmp_path):
    model, path = _typed(tmp_path)
    model.graph.value_info.append(helper.make_tensor_value_info("a", TensorProto.INT8, [2]))
    vi = model.graph.value_info[-1]
    _declare(vi, QType("int8", 0.25, 3).to_proto().SerializeToString())
    save(model, path)
    rows = [t for t in _show_json(path) if t["tensor"] == "a"]
    assert [(r["qtype"]["scale"], r["qtype"]["zero_point"], r["declared_at"]) for r in rows] == [
        ([0.5], [0], ["/graph/input/0"]),
        ([0.25], [3], ["/graph/value_info/0"]),
    ]
    table = run_cli("show", str(path))
    assert table.returncode == 0
    lines = [line for line in table.stdout.splitlines() if line.startswith("a ")]
    assert len(lines) == 2 and "0.5" in lines[0] and "0.25" in lines[1]
    assert "3 quantized tensor(s)" in table.stdout
    assert "declared with different types" in table.stdout and "QT301" in table.stdout
    assert "QT301" in {d.rule for d in iter_diagnostics(path)}


def test_equal_declarations_share_one_row_even_with_a_nan_scale(tmp_path):
    model, path = _typed(tmp_path)
    bad = pb.QuantizedType(storage_type=TensorProto.INT8, expressed_type=TensorProto.FLOAT, scale=[math.nan])
    _declare(model.graph.input[0], bad.SerializeToString())
    model.graph.value_info.append(model.graph.input[0])
    save(model, path)
    rows = [t for t in _show_json(path) if t["tensor"] == "a"]
    assert len(rows) == 1 and rows[0]["declared_at"] == ["/graph/input/0", "/graph/value_info/0"]
    assert "different types" not in run_cli("show", str(path)).stdout


def test_table_escapes_control_characters_in_names(tmp_path):
    name = "a\nfake.onnx: error\x1b[31m"
    graph = helper.make_graph([helper.make_node("Identity", [name], ["y"])], "g",
                              [helper.make_tensor_value_info(name, TensorProto.INT8, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, name, QType("int8", 0.5))
    path = tmp_path / "names.onnx"
    save(model, path)
    result = run_cli("show", str(path))
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout
    assert not any(line.startswith("fake.onnx") for line in result.stdout.splitlines())
    assert repr(name) in result.stdout
    assert _show_json(path)[0]["tensor"] == name  # JSON escapes by itself


def test_unknown_schema_value_exits_2_naming_file_and_tensor(tmp_path):
    model, path = _typed(tmp_path, "schema9.onnx")
    raw = QType("int8", 0.5).to_proto().SerializeToString() + b"\x38\x09"  # field 7 (schema) = 9: reads as asymmetric
    _declare(model.graph.input[1], raw)
    save(model, path)
    assert_one_line_error(run_cli("show", str(path)), "schema9.onnx", "/graph/input/1", "tensor 'b'", "schema", "9")
    # check still reports it as a finding, not an error
    assert "QT115" in {d.rule for d in iter_diagnostics(path)}


def test_unknown_field_in_quantization_or_statistics_exits_2(tmp_path):
    model, path = _typed(tmp_path, "field12.onnx")
    _declare(model.graph.input[0], QType("int8", 0.5).to_proto().SerializeToString() + b"\xf0\x01\x01")
    save(model, path)
    assert_one_line_error(run_cli("show", str(path)), "field12.onnx", "tensor 'a'", "field 30")
    model, path = _typed(tmp_path, "stats.onnx")
    inner = pb.Statistics(min=0.0).SerializeToString() + b"\xc8\x01\x01"  # field 25, varint 1
    _declare(model.graph.output[0], statistics=b"\x0a" + bytes([len(inner)]) + inner)  # TensorStatistics.tensor
    save(model, path)
    assert_one_line_error(run_cli("show", str(path), "--format", "json"), "stats.onnx", "tensor 'c'", "statistics.tensor")


def test_undecodable_extension_names_file_and_tensor(tmp_path):
    model, path = _typed(tmp_path, "cut.onnx")
    tt = model.graph.input[0].type.tensor_type
    tt.Clear()
    tt.MergeFromString(b"\x08\x00\xc2\x3e\x03\x08\xff\xff")  # field 1000: a truncated varint
    save(model, path)
    assert_one_line_error(run_cli("show", str(path)), "cut.onnx", "/graph/input/0", "tensor 'a'", "does not decode")


def test_a_functions_tensors_are_its_own_rows_not_a_conflict(tmp_path):
    """The graph's x and function f's x are different tensors (get_qtype(function=...) reads them apart)."""
    from test_compat import _model_with_function

    model = _model_with_function()  # f's body: x at 0.125
    set_qtype(model, "x", QType("int8", 0.5))  # the graph's x
    path = tmp_path / "f.onnx"
    save(model, path)
    table = run_cli("show", str(path))
    assert table.returncode == 0, table.stderr
    assert "declared with different types" not in table.stdout
    assert "2 quantized tensor(s)" in table.stdout and "x (function local:f)" in table.stdout
    rows = json.loads(run_cli("show", str(path), "--format", "json").stdout)["tensors"]
    assert [(r["function"], r["tensor"], r["qtype"]["scale"]) for r in rows] == [
        (None, "x", [0.5]), ("local:f", "x", [0.125])]


def test_show_reads_every_llm_format_checker_case_in_every_format(tmp_path):
    """The QT14x checker cases hold version-3 types a checker rejects (a codebook of 15 entries for 16 codes): show
    lists them in every format, never an internal error (the HTML page's range estimate indexed the codebook)."""
    from pathlib import Path

    from onnx_qtypes.cli import main

    root = Path(__file__).resolve().parents[1] / "conformance_tests/cases/checker"
    models = sorted(root.glob("QT14*/model.onnx"))
    assert any("QT141-fires" in str(m) for m in models)
    for model in models:
        for fmt in ("table", "json", "html"):
            out = tmp_path / f"{model.parent.name}.{fmt}"
            assert main(["show", str(model), "--format", fmt, "-o", str(out)]) == 0, (model, fmt)
            assert out.stat().st_size > 0
