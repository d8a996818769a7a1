"""onnxruntime's calibration results (TensorData) imported as statistics.

Expected values come from the calibration inputs themselves and from running
the float model, never from the importer."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from corpus import calibration_cache, calibration_samples, corpus_models, float_models, run_onnxruntime

from onnx_qtypes import get_statistics, lift, quantized_tensors
from onnx_qtypes.cli import main
from onnx_qtypes.interop import (
    StatisticsImportError,
    lift_model,
    load_calibration_cache,
    statistics_from_tensors_data,
)

NAME = "cnn-qdq_s8_perchannel"


def _float_outputs(model_name: str, tensor: str) -> np.ndarray:
    """Values of an intermediate float tensor over the calibration samples (onnxruntime, like the calibrator)."""
    model = float_models()[model_name]
    model.graph.output.append(onnx.helper.make_tensor_value_info(tensor, onnx.TensorProto.FLOAT, None))
    return np.stack([run_onnxruntime(model, feeds)[tensor] for feeds in calibration_samples(model_name)])


def test_minmax_statistics_are_the_observed_extremes():
    typed = lift(corpus_models()[NAME], statistics=calibration_cache(NAME))
    xs = np.stack([s["x"] for s in calibration_samples(NAME)])
    x_stats = quantized_tensors(typed)["x_QuantizeLinear_Output"].statistics
    assert (x_stats.tensor.min, x_stats.tensor.max) == (float(xs.min()), float(xs.max()))
    assert x_stats.method == "onnxruntime:minmax"
    # the residual sum feeds a Relu that onnxruntime folded into r2's range: r2 is the Relu output
    r2 = quantized_tensors(typed)["r2"].statistics.tensor
    expected = _float_outputs("cnn", "r2")
    assert r2.min == 0.0 and r2.max == pytest.approx(float(expected.max()), rel=1e-6)
    y = quantized_tensors(typed)["y_QuantizeLinear_Input"].statistics.tensor  # graph output y, before its DQ
    expected_y = _float_outputs("cnn", "y")
    assert (y.min, y.max) == pytest.approx((float(expected_y.min()), float(expected_y.max())), rel=1e-6)
    assert y.mean is None and y.histogram_counts == ()  # MinMax observes nothing else


def test_statistics_of_tensors_the_quantizer_removed_are_reported():
    result = lift_model(corpus_models()[NAME], statistics=calibration_cache(NAME))
    # c1 (Conv output before Relu) and res (Add output before Relu) no longer exist
    assert any("'c1'" in n and "'res'" in n for n in result.notes), result.notes
    assert get_statistics(result.model, "r1") is not None


def test_qoperator_names_map_to_the_integer_tensors():
    name = "attention-qop_u8"
    typed = lift(corpus_models()[name], statistics=calibration_cache(name))
    types = quantized_tensors(typed)
    with_stats = {n for n, q in types.items() if q.statistics is not None}
    assert {"x_quantized", "q_quantized", "probs_quantized", "y_quantized"} <= with_stats
    probs = types["probs_quantized"].statistics.tensor
    assert 0.0 <= probs.min <= probs.max <= 1.0  # a softmax


def _calibrate(method, tmp_path, **options) -> object:
    from onnxruntime.quantization import CalibrationMethod, create_calibrator

    model_path = tmp_path / "mlp.onnx"
    onnx.save(float_models()["mlp"], model_path)
    calibrator = create_calibrator(
        model_path, augmented_model_path=tmp_path / "augmented.onnx",
        calibrate_method=getattr(CalibrationMethod, method), extra_options=options,
    )

    class Reader:
        def __init__(self):
            self.items = iter(calibration_samples("mlp"))

        def get_next(self):
            return next(self.items, None)

    calibrator.collect_data(Reader())
    return calibrator.compute_data()


def test_entropy_gives_a_histogram_not_min_max(tmp_path):
    data = _calibrate("Entropy", tmp_path, num_bins=256, num_quantized_bins=128)
    stats = statistics_from_tensors_data(data)["x"].tensor
    xs = np.stack([s["x"] for s in calibration_samples("mlp")])
    assert stats.min is None and stats.max is None  # onnxruntime's lowest/highest are chosen thresholds here
    assert stats.count == xs.size and sum(stats.histogram_counts) == xs.size
    edges = np.asarray(stats.histogram_edges)
    assert len(edges) == len(stats.histogram_counts) + 1 and np.all(np.diff(edges) > 0)
    assert edges[0] <= xs.min() and xs.max() <= edges[-1]
    expected, _ = np.histogram(xs, bins=edges)  # the same histogram, counted independently
    assert np.abs(np.asarray(stats.histogram_counts) - expected).sum() <= 2  # float32 edges vs float64


def test_percentile_keeps_nothing_observable(tmp_path):
    """onnxruntime 1.31's Percentile result holds the thresholds and the first two bin counts only."""
    data = _calibrate("Percentile", tmp_path, num_bins=256)
    assert np.asarray(data["x"].hist).size == 1  # not a histogram
    stats = statistics_from_tensors_data(data)["x"]
    assert stats.tensor.min is None and stats.tensor.histogram_counts == ()
    assert stats.method == "onnxruntime:percentile"


def test_symmetric_percentile_histograms_of_absolute_values_are_left_out(tmp_path):
    data = _calibrate("Percentile", tmp_path, num_bins=64, symmetric=True)
    stats = statistics_from_tensors_data(data)["x"].tensor
    assert stats.histogram_counts == () and stats.min is None


def test_distribution_mean_and_std(tmp_path):
    data = _calibrate("Distribution", tmp_path, num_bins=512)
    stats = statistics_from_tensors_data(data)["x"].tensor
    xs = np.stack([s["x"] for s in calibration_samples("mlp")]).astype(np.float64)
    width = stats.histogram_edges[1] - stats.histogram_edges[0]
    assert stats.mean == pytest.approx(xs.mean(), abs=width)  # histogram-midpoint estimate
    assert stats.std == pytest.approx(xs.std(), abs=width)


def test_the_json_cache_and_the_live_object_import_alike(tmp_path):
    from onnxruntime.quantization.calibrate import save_tensors_data

    data = _calibrate("Entropy", tmp_path, num_bins=256, num_quantized_bins=128)
    save_tensors_data(data, tmp_path / "cache.json")
    assert load_calibration_cache(tmp_path / "cache.json") == statistics_from_tensors_data(data)


def test_per_channel_ranges_become_per_axis_statistics(tmp_path):
    from onnxruntime.quantization import CalibrationMethod, create_calibrator

    model_path = tmp_path / "cnn.onnx"
    onnx.save(float_models()["cnn"], model_path)
    calibrator = create_calibrator(model_path, augmented_model_path=tmp_path / "aug.onnx",
                                   calibrate_method=CalibrationMethod.MinMax, extra_options={"per_channel": True})
    samples = iter(calibration_samples("cnn"))
    calibrator.collect_data(type("R", (), {"get_next": lambda self: next(samples, None)})())
    stats = statistics_from_tensors_data(calibrator.compute_data())["x"]
    xs = np.stack([s["x"] for s in calibration_samples("cnn")])
    assert stats.axis == 1 and len(stats.per_axis) == 3
    for c, channel in enumerate(stats.per_axis):
        assert (channel.min, channel.max) == (float(xs[:, :, c].min()), float(xs[:, :, c].max()))


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("not json", "not JSON"),
        (json.dumps({"x": {"lowest": 2.0, "highest": 1.0}}), "tensor 'x': lowest 2.0 is above highest 1.0"),
        (json.dumps({"x": {"lowest": "low"}}), "tensor 'x'"),
        (json.dumps([1, 2]), "must map tensor names"),
    ],
)
def test_bad_calibration_files_are_one_line_errors(tmp_path, capsys, content, fragment):
    cache = tmp_path / "cache.json"
    cache.write_text(content)
    with pytest.raises(StatisticsImportError, match=fragment):
        load_calibration_cache(cache)
    path = tmp_path / "q.onnx"
    onnx.save(corpus_models()["mlp-qdq_u8_pertensor"], path)
    assert main(["lift", str(path), str(tmp_path / "t.onnx"), "--statistics", str(cache)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cache) in err[0] and fragment.split(":")[0] in err[0]
    assert not (tmp_path / "t.onnx").exists()
