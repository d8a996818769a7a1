"""`lift --statistics FILE` reads onnxruntime's calibration JSON and nothing else.

The accepted files are written by onnxruntime itself (``save_tensors_data``,
``write_calibration_table``); the refused ones are real files of other kinds
(a hardware profile, a SARIF report) and small documents that are not
calibration results. A refusal is exit 2 with one line naming the file and the
first key that does not fit, and no output written."""

from __future__ import annotations

import json

import numpy as np
import pytest
from builders import ROOT
from corpus import corpus_paths

from onnx_qtypes import load, quantized_tensors
from onnx_qtypes.cli import main
from onnx_qtypes.interop import StatisticsImportError, statistics_from_tensors_data

MODEL = "mlp-qdq_u8_pertensor"  # its graph input x is typed as x_QuantizeLinear_Output once lifted


def _tensors_data():
    from onnxruntime.quantization.calibrate import CalibrationMethod, TensorData, TensorsData

    x = TensorData(lowest=np.array(-1.5, np.float32), highest=np.array(2.25, np.float32))
    return TensorsData(CalibrationMethod.MinMax, {"x": x})


def _save_tensors_data(folder):
    from onnxruntime.quantization.calibrate import save_tensors_data

    save_tensors_data(_tensors_data(), folder / "cache.json")
    return folder / "cache.json"


def _calibration_table(folder, plain: bool):
    from onnxruntime.quantization.quant_utils import write_calibration_table

    data = _tensors_data()
    write_calibration_table(dict(data.items()) if plain else data, dir=str(folder))
    return folder / "calibration.json"


@pytest.mark.parametrize("writer", ["save_tensors_data", "write_calibration_table", "write_calibration_table(dict)"])
def test_onnxruntime_calibration_files_are_read(tmp_path, capsys, writer):
    cache = {
        "save_tensors_data": lambda: _save_tensors_data(tmp_path),
        "write_calibration_table": lambda: _calibration_table(tmp_path, plain=False),
        "write_calibration_table(dict)": lambda: _calibration_table(tmp_path, plain=True),
    }[writer]()
    out = tmp_path / "t.onnx"
    assert main(["lift", str(corpus_paths()[MODEL]), str(out), "--statistics", str(cache)]) == 0, capsys.readouterr()
    stats = quantized_tensors(load(out))["x_QuantizeLinear_Output"].statistics
    assert (stats.tensor.min, stats.tensor.max) == (-1.5, 2.25)
    assert stats.method == ("onnxruntime" if "dict" in writer else "onnxruntime:minmax")  # a plain map has no method


def _sarif_report(folder):
    report = folder / "report.sarif"
    assert main(["check", str(ROOT / "examples" / "broken_cnn.onnx"), "--format", "sarif", "-o", str(report)]) == 1
    return report


TENSORS_DATA = {"CLS": "TensorsData", "calibration_method": {"CLS": "CalibrationMethod",
                                                             "value": "CalibrationMethod.MinMax"}}
REFUSED = {
    # name: (the file's content, or a function writing a real file; what the one line must say)
    "a hardware profile": (lambda folder: ROOT / "checker" / "profiles" / "generic.json", "key '$schema': a string"),
    "a SARIF report": (_sarif_report, "key '$schema': a string"),
    "a tensor holding a number": ({"r1": 5}, "key 'r1': a number; expected a TensorData object"),
    "a tensor holding a list": ({"r1": [0.0, 1.0]}, "key 'r1': a list"),
    "a tensor holding no field": ({"r1": {"CLS": "TensorData"}}, "key 'r1': an object with no TensorData field"),
    "a field onnxruntime does not write": ({"r1": {"lowest": 0.0, "min": 0.0}}, "key 'r1': 'min' is not a TensorData"),
    "no tensors at all": ({}, "it names no tensors"),
    "another class": ({"CLS": "TensorData", "lowest": 0.0}, "CLS is 'TensorData', not 'TensorsData'"),
    "a key TensorsData has not": ({**TENSORS_DATA, "data": {}, "model": "m.onnx"}, "key 'model' is not part of"),
    "TensorsData without data": (TENSORS_DATA, "has no 'data'"),
    "an unknown method": ({**TENSORS_DATA, "data": {"r1": {"lowest": 0.0}},
                           "calibration_method": {"CLS": "CalibrationMethod", "value": "CalibrationMethod.Mean"}},
                          "calibration_method 'CalibrationMethod.Mean' is not one of MinMax"),
}


@pytest.mark.parametrize("kind", REFUSED)
def test_other_json_files_are_refused_naming_the_file_and_the_key(tmp_path, capsys, kind):
    content, fragment = REFUSED[kind]
    if callable(content):
        cache = content(tmp_path)
    else:
        cache = tmp_path / "cal.json"
        cache.write_text(json.dumps(content))
    capsys.readouterr()
    out = tmp_path / "t.onnx"
    assert main(["lift", str(corpus_paths()[MODEL]), str(out), "--statistics", str(cache)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    assert lines[0].startswith(f"onnx-qtypes: error: {cache}: not onnxruntime calibration data: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert not out.exists()


def test_the_api_refuses_what_is_not_tensor_data():
    with pytest.raises(StatisticsImportError, match="key 'r1': a number"):
        statistics_from_tensors_data({"r1": 5})
    with pytest.raises(StatisticsImportError, match="key 'r1': an instance of object"):
        statistics_from_tensors_data({"r1": object()})
    assert statistics_from_tensors_data(_tensors_data())["x"].tensor.max == 2.25  # the live object still reads


# Tensor entries shaped like TensorData whose values no calibration produces: refused naming the tensor and field.
# Written as JSON text, since Python's json reads (and json.dumps writes) NaN and Infinity.
BAD_VALUES = {
    "NaN lowest": ('{"x": {"lowest": NaN, "highest": 1}}', "lowest is NaN"),
    "infinite highest": ('{"x": {"lowest": -1, "highest": Infinity}}', "highest is inf"),
    "-infinite lowest": ('{"x": {"lowest": -Infinity, "highest": 1}}', "lowest is -inf"),
    "NaN avg": ('{"x": {"lowest": -1, "highest": 1, "avg": NaN, "std": 1}}', "avg is NaN"),
    "infinite std": ('{"x": {"lowest": -1, "highest": 1, "avg": 0, "std": Infinity}}', "std is inf"),
    "NaN in hist": ('{"x": {"lowest": -1, "highest": 1, "hist": [1, NaN], "hist_edges": [-1, 0, 1]}}',
                    "hist is NaN"),
    "infinite hist edge": ('{"x": {"lowest": -1, "highest": 1, "hist": [1, 2], "hist_edges": [-1, 0, Infinity]}}',
                           "hist_edges is inf"),
    "NaN per channel": ('{"x": {"lowest": [0, NaN], "highest": [1, 1]}}', "lowest is NaN"),
    "per-channel lengths differ": ('{"x": {"lowest": [1, 2], "highest": [0]}}',
                                   "lowest has 2 value(s) but highest has 1"),
    "one lowest, two highest": ('{"x": {"lowest": 0, "highest": [1, 2]}}', "lowest has 1 value(s) but highest has 2"),
    "an empty lowest": ('{"x": {"lowest": [], "highest": []}}', "lowest is empty"),
    "several avg": ('{"x": {"avg": [0, 1], "std": 1}}', "avg has 2 values"),
    "edges not one more than counts": ('{"x":{"lowest":-1,"highest":1,"hist":[1,2,3],"hist_edges":[0,1]}}',
                                       "hist has 3 count(s) but hist_edges has 2 edge(s)"),
    "as many edges as counts": ('{"x":{"lowest":-1,"highest":1,"hist":[1,2],"hist_edges":[0,1]}}',
                                "hist has 2 count(s) but hist_edges has 2 edge(s)"),
    "tuple-form edges too short": ('{"x":{"lowest":-1,"highest":1,"hist":[1,2,3],"bins":[0,1]}}',
                                   "hist has 3 count(s) but bins has 2 edge(s)"),
    "hist without edges": ('{"x":{"lowest":-1,"highest":1,"hist":[1,2,3]}}', "hist without hist_edges"),
    "edges without hist": ('{"x":{"lowest":-1,"highest":1,"hist_edges":[0,1,2]}}', "hist_edges without hist"),
    "every field null": ('{"x": {"lowest": null, "highest": null}}', "no statistics: every field"),
    "every field null in a TensorsData": (json.dumps({**TENSORS_DATA, "data": {"x": {"CLS": "TensorData",
                                                                                      "hist": None}}}),
                                          "no statistics: every field (hist) is null"),
}


@pytest.mark.parametrize("kind", BAD_VALUES)
def test_impossible_values_are_refused_naming_the_file_the_tensor_and_the_field(tmp_path, capsys, kind):
    text, fragment = BAD_VALUES[kind]
    cache = tmp_path / "cal.json"
    cache.write_text(text)
    out = tmp_path / "t.onnx"
    capsys.readouterr()
    assert main(["lift", str(corpus_paths()[MODEL]), str(out), "--statistics", str(cache)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    assert lines[0].startswith(f"onnx-qtypes: error: {cache}: tensor 'x': "), lines[0]
    assert fragment in lines[0], lines[0]
    assert "internal error" not in lines[0]
    assert not out.exists()


ACCEPTED = {
    # still read: the histogram with one edge more than counts, in either spelling, and per-channel ranges
    "hist with hist_edges": ({"x": {"lowest": -1, "highest": 1, "hist": [1, 2], "hist_edges": [-1, 0, 1]}},
                             lambda s: s.tensor.histogram_counts == (1, 2) and s.tensor.count == 3),
    "hist with edges as bins": ({"x": {"lowest": -1, "highest": 1, "hist": [1, 2], "bins": [-1, 0, 1]}},
                                lambda s: s.tensor.histogram_edges == (-1.0, 0.0, 1.0)),
    "per-channel ranges": ({"x": {"lowest": [-c for c in range(16)], "highest": list(range(1, 17))}},  # x is [2, 16]
                           lambda s: [(c.min, c.max) for c in s.per_axis] == [(-c, c + 1) for c in range(16)]),
    "only highest": ({"x": {"highest": 1}}, lambda s: (s.tensor.min, s.tensor.max) == (None, 1)),
}


@pytest.mark.parametrize("kind", ACCEPTED)
def test_consistent_values_are_still_read(tmp_path, capsys, kind):
    content, expected = ACCEPTED[kind]
    cache = tmp_path / "cal.json"
    cache.write_text(json.dumps(content))
    out = tmp_path / "t.onnx"
    assert main(["lift", str(corpus_paths()[MODEL]), str(out), "--statistics", str(cache)]) == 0, capsys.readouterr()
    stats = quantized_tensors(load(out))["x_QuantizeLinear_Output"].statistics
    assert expected(stats), stats
    assert main(["check", str(out)]) == 0, capsys.readouterr()  # the lifted model passes its own checker


def test_onnxruntime_percentile_two_counts_are_still_left_out():
    """onnxruntime's Percentile tuple (lowest, highest, *hist[:2]) stores two counts as hist and bins."""
    stats = statistics_from_tensors_data({**TENSORS_DATA, "data": {"x": {"lowest": -1.0, "highest": 1.0,
                                                                         "hist": 3, "bins": 5}},
                                          "calibration_method": "CalibrationMethod.Percentile"})["x"]
    assert stats.tensor.histogram_counts == () and stats.tensor.min is None
    with pytest.raises(StatisticsImportError, match="tensor 'x': lowest is NaN"):
        statistics_from_tensors_data({"x": {"lowest": float("nan"), "highest": 1.0}})  # the API refuses alike


def test_per_channel_statistics_must_have_one_entry_per_slice(tmp_path, capsys):
    model = corpus_paths()["mlp-qdq_u8_pertensor"]  # input x: [2, 16], per-channel axis 1 has 16 slices
    path, out = tmp_path / "per_channel.json", tmp_path / "out.onnx"
    path.write_text(json.dumps({"x": {"lowest": [-1.0] * 5, "highest": [1.0] * 5}}))
    assert main(["lift", str(model), str(out), "--statistics", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "5 per-channel statistics" in err[0] and "16 slices" in err[0], err
    assert not out.exists()
    path.write_text(json.dumps({"x": {"lowest": [-1.0] * 16, "highest": [1.0] * 16}}))
    assert main(["lift", str(model), str(out), "--statistics", str(path)]) == 0
    assert main(["check", str(out)]) == 0


def test_statistics_that_record_no_value_are_left_out_with_a_note(tmp_path):
    from onnx_qtypes import get_statistics
    from onnx_qtypes.interop import lift_model

    path = tmp_path / "percentile.json"
    path.write_text(json.dumps({**TENSORS_DATA, "calibration_method": "CalibrationMethod.Percentile",
                                "data": {"x": {"lowest": -1.0, "highest": 1.0, "hist": 3, "bins": 5}}}))
    result = lift_model(corpus_paths()["mlp-qdq_u8_pertensor"], statistics=path)
    assert result.statistics == 0
    assert any("left out" in n and "'x'" in n for n in result.notes), result.notes
    assert all(get_statistics(result.model, name) is None for name in quantized_tensors(result.model))
