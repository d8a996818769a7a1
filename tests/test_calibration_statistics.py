"""Calibration statistics: streaming moments and the exactly re-binned histogram against numpy on all values."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import calibration_samples, cnn, mlp, run_onnxruntime

from onnx_qtypes.calibration import CalibrationError, calibrate_model
from onnx_qtypes.calibration.running import Histogram, TensorAccumulator
from onnx_qtypes.proto.model import read_statistics


def _samples(count: int, seed: int = 7) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": (rng.normal(size=(1, 3, 8, 8)) * (1 + i)).astype(np.float32)} for i in range(count)]


def test_moments_and_histogram_match_numpy_over_every_value():
    rng = np.random.default_rng(0)
    batches = [rng.normal(loc=i, scale=1 + i, size=(2, 4, 5)) for i in range(6)]  # the range grows batch by batch
    acc = TensorAccumulator(axis=1, bins=64)
    for b in batches:
        acc.add(b)
    every = np.concatenate([b.reshape(-1) for b in batches])
    whole = acc.whole.statistics(0)
    assert whole.count == every.size
    assert (whole.min, whole.max) == (every.min(), every.max())
    assert whole.mean == pytest.approx(every.mean(), rel=1e-12)
    assert whole.std == pytest.approx(every.std(), rel=1e-12)
    per = np.concatenate([np.moveaxis(b, 1, 0).reshape(4, -1) for b in batches], axis=1)
    for c in range(4):
        s = acc.channels.statistics(c)
        assert (s.min, s.max) == (per[c].min(), per[c].max())
        assert s.std == pytest.approx(per[c].std(), rel=1e-12)
    # exact at its range: edges from the minimum to the maximum, each count numpy's over the same edges
    counts, edges = acc.histogram.counts, acc.histogram.edges
    assert (edges[0], edges[-1]) == (every.min(), every.max())
    assert counts.tolist() == np.histogram(every, bins=edges)[0].tolist()
    assert 64 // 2 + 1 <= counts.size <= 64  # more than half the bins, none beyond the maximum


def test_histogram_stays_exact_at_its_range_however_the_range_grows():
    """The reported case: a first sample far narrower than the rest (a doubling histogram anchored at it kept
    44 of 2,048 bins in use, edges to 454 for data up to 5.1)."""
    rng = np.random.default_rng(4)
    batches = [rng.uniform(-5.7, -5.69, 100), rng.normal(0, 1.5, 5000), np.array([5.1]), np.zeros(7),
               rng.normal(-1e-3, 1e-4, 10)]
    h = Histogram()
    for b in batches:
        h.add(b)
    every = np.concatenate(batches)
    assert (h.edges[0], h.edges[-1]) == (every.min(), every.max()) == (h.min, h.max)
    assert h.counts.tolist() == np.histogram(every, bins=h.edges)[0].tolist()
    assert h.counts.size > 1024
    with pytest.raises(ValueError):
        Histogram.of_constant(every).add(every)  # a constant's histogram is made once


@pytest.mark.parametrize("seed", range(40))
def test_histogram_counts_every_value_in_its_bin_on_any_sequence(seed):
    rng = np.random.default_rng(seed)
    h, every = Histogram(bins=int(rng.choice([4, 16, 64, 2048]))), []
    for _ in range(rng.integers(1, 8)):
        kind = rng.integers(0, 4)
        if kind == 0:
            b = rng.normal(rng.normal() * 10 ** rng.uniform(-3, 3), 10 ** rng.uniform(-6, 3), rng.integers(0, 50))
        elif kind == 1:
            b = np.full(rng.integers(1, 5), rng.normal())  # a constant sample
        elif kind == 2:
            b = np.maximum(rng.normal(size=30), 0)  # a Relu output: zeros on a lattice edge
        else:
            b = rng.integers(-3, 4, 20) * 2.0 ** rng.integers(-3, 3)  # values on lattice edges, the maximum too
        every.append(b)
        h.add(b)
    every = np.concatenate(every)
    counts, edges = h.counts, h.edges
    assert counts.sum() == every.size and np.all(np.diff(edges) > 0)
    if every.min() == every.max():  # one value: one bin from it to the next float
        assert edges.tolist() == [every.min(), np.nextafter(every.min(), np.inf)]
        return
    assert (edges[0], edges[-1]) == (every.min(), every.max())
    assert h.bins // 2 + 1 <= counts.size <= h.bins
    inside = np.clip(np.searchsorted(edges, every, side="right") - 1, 0, counts.size - 1)  # last bin closed
    assert np.bincount(inside, minlength=counts.size).tolist() == counts.tolist()


def test_collected_statistics_describe_the_model_tensors():
    model = cnn()
    samples = _samples(5)
    result = calibrate_model(model, samples, stats_only=True)
    assert result.samples == 5
    xs = np.stack([s["x"] for s in samples])
    x = result.statistics["x"].tensor
    assert (x.min, x.max, x.count) == (xs.min(), xs.max(), xs.size)
    assert x.mean == pytest.approx(float(xs.astype(np.float64).mean()), rel=1e-9)
    ys = np.stack([run_onnxruntime(model, s, optimize=False)["y"] for s in samples])
    y = result.statistics["y"].tensor
    assert (y.min, y.max) == pytest.approx((ys.min(), ys.max()), rel=1e-6)
    assert result.statistics["x"].axis == 1 and len(result.statistics["x"].per_axis) == 3
    w1 = result.statistics["w1"]  # a weight: per output channel (Conv: axis 0)
    assert w1.axis == 0 and len(w1.per_axis) == 4


def test_stats_only_annotates_the_float_model_and_quantizes_nothing():
    model = mlp()
    result = calibrate_model(model, calibration_samples("mlp"), stats_only=True)
    g = result.model.graph
    assert [n.op_type for n in g.node] == [n.op_type for n in model.graph.node]
    declared = {vi.name: vi for vi in (*g.input, *g.output, *g.value_info)}
    for name in ("x", "h", "hb", "hr", "y", "w1"):
        assert read_statistics(declared[name]) == result.statistics[name]
        assert declared[name].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    from onnx_qtypes.checker import check_model

    check_model(result.model)


def test_onnxruntime_and_reference_engines_agree():
    samples = calibration_samples("mlp")
    ort = calibrate_model(mlp(), samples, stats_only=True, engine="onnxruntime").statistics
    ref = calibrate_model(mlp(), samples, stats_only=True, engine="reference").statistics
    for name in ort:
        a, b = ort[name].tensor, ref[name].tensor
        assert (a.min, a.max, a.mean, a.count) == pytest.approx((b.min, b.max, b.mean, b.count), rel=1e-5, abs=1e-6)


class _Reader:  # shaped like onnxruntime's CalibrationDataReader
    def __init__(self, samples):
        self.samples = iter(samples)

    def get_next(self):
        return next(self.samples, None)


def test_a_reader_a_list_and_an_npz_give_the_same_statistics(tmp_path):
    samples = _samples(4)
    path = tmp_path / "calib.npz"
    np.savez(path, x=np.stack([s["x"] for s in samples]))
    from_list = calibrate_model(cnn(), samples, stats_only=True).statistics
    assert calibrate_model(cnn(), _Reader(samples), stats_only=True).statistics == from_list
    assert calibrate_model(cnn(), str(path), stats_only=True).statistics == from_list


@pytest.mark.parametrize("data, message", [
    ([], "no samples"),
    ([{"y": np.zeros((2, 16), np.float32)}], "no graph input named 'y'; input 'x' missing"),
    ([{"x": np.zeros((2, 15), np.float32)}], "input 'x' has shape [2, 15], the model declares [2, 16]"),
    ([{"x": np.zeros((2, 16), np.int32)}], "input 'x' is int32, the model declares float32"),
    ([{"x": np.full((2, 16), np.nan, np.float32)}], "input 'x' holds 32 NaN values; calibration needs finite inputs"),
])
def test_bad_data_is_refused_naming_the_mismatch(data, message):
    with pytest.raises(CalibrationError, match=None) as info:
        calibrate_model(mlp(), data)
    assert message in str(info.value)


def test_a_model_without_float_tensors_says_so():
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Neg", ["a"], ["b"])], "ints",
                              [helper.make_tensor_value_info("a", TensorProto.INT32, [2])],
                              [helper.make_tensor_value_info("b", TensorProto.INT32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(CalibrationError, match="no float tensors to calibrate"):
        calibrate_model(model, [{"a": np.zeros(2, np.int32)}])


def test_a_tensor_every_sample_leaves_empty_gets_no_statistics_and_no_type():
    """A batch dimension of 0 in every sample: x and y have no values to describe; the weight still does."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
                              [numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    result = calibrate_model(model, [{"x": np.zeros((0, 4), np.float32)}] * 3)
    assert set(result.statistics) == {"w"} and result.samples == 3
    assert result.typed == ["w_quantized"]


def _masked_attention() -> onnx.ModelProto:
    """Scores masked with -inf where the mask is false, as transformers' BERT exports it, then Softmax and a
    MatMul: the masked scores and the -inf constant cannot be quantized, the rest can."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Where", ["keep", "x", "fill"], ["masked"], name="mask"),
             helper.make_node("Softmax", ["masked"], ["p"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["p", "w"], ["y"], name="matmul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
                                           helper.make_tensor_value_info("keep", TensorProto.BOOL, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [numpy_helper.from_array(np.array(-np.inf, np.float32), "fill"),
                               numpy_helper.from_array(np.random.default_rng(3).normal(0, 1, (8, 4)).astype(np.float32),
                                                       "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _masked_samples(count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(4)
    keep = np.ones((2, 8), bool)
    keep[:, 6:] = False  # a padded tail: 4 masked scores per sample
    return [{"x": rng.normal(0, 2, (2, 8)).astype(np.float32), "keep": keep} for _ in range(count)]


def test_a_tensor_that_takes_an_infinity_stays_float_named_and_the_rest_is_quantized():
    """BERT's attention mask: onnxruntime's quantize_static gives such a tensor scale inf (and its QOperator file
    numbers far from the float model's); calibrate refused the whole model. Now the masked scores and the fill
    constant stay float, each named with what it held, and every other tensor is typed, checks clean and runs
    as onnxruntime runs its lowered form."""
    from onnx_qtypes import diagnose, lower
    from onnx_qtypes.proto import quantized_tensors
    from onnx_qtypes.reference_ops import ReferenceEvaluator

    result = calibrate_model(_masked_attention(), _masked_samples(4))
    assert result.notes == [
        "tensor 'masked' stays float, without statistics: sample 0: holds 4 -inf values (a quantized type holds "
        "finite values only)",
        "tensor 'fill' stays float, without statistics: a constant: holds 1 -inf value (a quantized type holds "
        "finite values only)"]
    assert "masked" not in result.statistics and "fill" not in result.statistics and "p" in result.statistics
    typed = quantized_tensors(result.model)  # the Where reads x dequantized; MatMul computes on typed p and w
    assert set(typed) == set(result.typed) == {"x_quantized", "p_quantized", "w_quantized", "y_float"}
    assert not [d for d in diagnose(result.model).diagnostics if d.is_error]
    feed = _masked_samples(5)[-1]
    ours = ReferenceEvaluator(result.model).run(None, feed)[0]
    theirs = run_onnxruntime(lower(result.model), feed, optimize=False)["y"]
    step = typed["y_float"].scale[0]
    assert np.all(np.abs(ours.astype(np.float64) - theirs.astype(np.float64)) <= step * 1.0001)


class _Terminal:
    def __init__(self, tty: bool) -> None:
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_progress_shows_on_a_terminal_only():
    from onnx_qtypes.calibration.collect import progress_bar

    assert progress_bar(3, _Terminal(False)) is None
    terminal = _Terminal(True)
    calibrate_model(cnn(), _samples(3), stats_only=True, progress=progress_bar(3, terminal))
    assert terminal.text.endswith("3/3\n") and "1/3" in terminal.text


def _round_trips():
    from onnx_qtypes.calibration.parameters import Storage, round_trip
    from onnx_qtypes.proto.schema import Schema

    return round_trip(Storage("uint8")), round_trip(Storage("int8", Schema.SYMMETRIC))


def test_entropy_gives_a_non_negative_asymmetric_tensor_all_its_levels():
    """A Relu output quantized uint8 asymmetric spends all 256 levels on [0, t], a signed or symmetric type 128 on
    each side: the KL search must compare against that many bins, so it clips the non-negative tensor less."""
    from onnx_qtypes.calibration.ranges import choose_range

    rng = np.random.default_rng(3)
    acc = TensorAccumulator(axis=None)
    for _ in range(20):
        acc.add(np.abs(rng.standard_t(4, size=(1, 4096))))  # heavy-tailed, non-negative
    asym, sym = _round_trips()
    lo_a, hi_a = choose_range(acc, "entropy", symmetric=False, levels=256, round_trip=asym)
    lo_s, hi_s = choose_range(acc, "entropy", symmetric=True, levels=256, round_trip=sym)
    top, bottom = float(acc.whole.max[0]), float(acc.whole.min[0])
    assert lo_a == lo_s == bottom
    assert hi_s < hi_a <= top  # the one with twice the levels on [0, t] keeps more of the tail


def test_entropy_clips_outliers_and_never_loses_to_the_observed_range():
    """KL clips a heavy tail seen in many values (the bulk gets finer steps), but on a light tail seen in few the
    KL-minimal threshold clips by chance; the entropy method then keeps the threshold whose round trip loses no
    more than the observed range's, measured over the same histogram."""
    from onnx_qtypes.calibration.ranges import absolute, choose_range, kl_bins, kl_threshold, round_trip_error

    asym, _ = _round_trips()
    rng = np.random.default_rng(5)
    heavy = TensorAccumulator(axis=None)
    heavy.add(np.abs(rng.laplace(size=(1, 200_000))))
    top = float(heavy.whole.max[0])
    lo, hi = choose_range(heavy, "entropy", symmetric=False, levels=256, round_trip=asym)
    assert hi < 0.9 * top
    assert round_trip_error(heavy.histogram, asym, lo, hi) < round_trip_error(heavy.histogram, asym, lo, top)

    light = TensorAccumulator(axis=None)
    light.add(np.maximum(rng.normal(size=(1, 8192)), 0.0))  # a Relu output from a few samples: no outliers
    top = float(light.whole.max[0])
    counts, edges = absolute(light.histogram, kl_bins(light.count, 256, light.histogram.bins))
    assert kl_threshold(counts, edges, 256) < 0.95 * top  # unguarded, KL alone clips
    lo, hi = choose_range(light, "entropy", symmetric=False, levels=256, round_trip=asym)
    assert round_trip_error(light.histogram, asym, lo, hi) <= round_trip_error(light.histogram, asym, 0.0, top)


def test_each_weight_channel_has_its_own_histogram_and_the_report_estimates_it():
    from onnx_qtypes import get_qtype
    from onnx_qtypes.report.range_error import tensor_error

    model = cnn()
    w1 = next(onnx.numpy_helper.to_array(i) for i in model.graph.initializer if i.name == "w1")
    result = calibrate_model(model, calibration_samples("cnn"), per_channel=True)
    weight = get_qtype(result.model, "w1_quantized")
    per_axis = weight.statistics.per_axis
    assert weight.axis == 0 and len(per_axis) == w1.shape[0]
    for channel, stats in zip(w1, per_axis):
        assert sum(stats.histogram_counts) == stats.count == channel.size
        assert stats.histogram_edges[0] == pytest.approx(channel.min()) and stats.histogram_edges[-1] == pytest.approx(
            channel.max())
    estimate, how = tensor_error(weight, weight.statistics)
    assert estimate is not None and "per-axis" in how and estimate.clipped == 0.0
    # a minmax per-channel weight: about scale²/12 of rounding error per channel, weighted by count
    expected = np.mean([s * s / 12 for s in weight.scale])
    assert estimate.mse == pytest.approx(expected, rel=0.5)
