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
