"""``onnx-qtypes calibrate``: a typed model the checker passes, --stats-only, and bad input as exit 2, one line."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from corpus import calibration_samples, cnn

from onnx_qtypes import quantized_tensors
from onnx_qtypes.proto.model import read_statistics


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture()
def files(tmp_path):
    model = tmp_path / "cnn.onnx"
    onnx.save(cnn(), model)
    data = tmp_path / "calib.npz"
    np.savez(data, x=np.stack([s["x"] for s in calibration_samples("cnn")]))
    return tmp_path, str(model), str(data)


def test_calibrate_writes_a_typed_model_that_check_passes_under_the_profile(files):
    folder, model, data = files
    out = str(folder / "typed.onnx")
    result = run_cli("calibrate", model, "--data", data, "-o", out, "--profile", "tflite-int8", "--per-channel",
                     "--method", "percentile")
    assert result.returncode == 0, result.stderr
    assert "from 4 sample(s)" in result.stdout
    types = quantized_tensors(onnx.load(out))
    assert types["r1"].storage == "int8" and types["r1"].statistics.tensor.count == 4 * 4 * 8 * 8
    for profile in ("generic", "tflite-int8"):
        check = run_cli("check", out, "--profile", profile)
        assert check.returncode == 0, check.stdout + check.stderr


def test_stats_only_writes_the_float_model_with_statistics(files):
    folder, model, data = files
    out = str(folder / "stats.onnx")
    result = run_cli("calibrate", model, "--data", data, "-o", out, "--stats-only")
    assert result.returncode == 0, result.stderr
    written = onnx.load(out)
    assert not quantized_tensors(written)
    declared = {vi.name: vi for vi in (*written.graph.input, *written.graph.value_info)}
    assert read_statistics(declared["c1"]).tensor.count == 4 * 4 * 8 * 8


@pytest.mark.parametrize("arrays, message", [
    ({"y": np.zeros((2, 1, 3, 8, 8), np.float32)}, "no graph input named 'y'"),
    ({"x": np.zeros((2, 1, 3, 4, 4), np.float32)}, "has shape [1, 3, 4, 4], the model declares [1, 3, 8, 8]"),
    ({"x": np.zeros((2, 1, 3, 8, 8), np.float64)}, "is float64, the model declares float32"),
    ({"x": np.zeros((0, 1, 3, 8, 8), np.float32)}, "holds no samples"),
    (None, "not a readable .npz file"),
])
def test_bad_data_exits_2_with_one_line_and_writes_nothing(files, arrays, message):
    folder, model, _ = files
    data = folder / "bad.npz"
    if arrays is None:
        data.write_bytes(b"not a zip")
    else:
        np.savez(data, **arrays)
    out = folder / "out.onnx"
    result = run_cli("calibrate", model, "--data", str(data), "-o", str(out))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr and message in lines[0], result.stderr
    assert not out.exists()


@pytest.mark.parametrize("engine", ["onnxruntime", "reference"])
def test_a_model_that_fails_on_the_samples_exits_2_naming_the_sample(tmp_path, engine):
    """A Reshape to a shape the input does not fit: the model, not the tool, fails, on sample 0."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([3, 3], np.int64), "s")])
    model, data, out = tmp_path / "m.onnx", tmp_path / "d.npz", tmp_path / "out.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    np.savez(data, x=np.zeros((2, 1, 4), np.float32))
    result = run_cli("calibrate", str(model), "--data", str(data), "-o", str(out), "--engine", engine)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"sample 0: {engine} cannot run the model" in lines[0], result.stderr
    assert not out.exists()


def test_an_unknown_profile_or_unreadable_model_exits_2(files):
    folder, model, data = files
    out = folder / "out.onnx"
    for args in (("--profile", "no-such-profile"),):
        result = run_cli("calibrate", model, "--data", data, "-o", str(out), *args)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    junk = folder / "junk.onnx"
    junk.write_bytes(b"\x00not onnx")
    result = run_cli("calibrate", str(junk), "--data", data, "-o", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert not out.exists()


def test_the_bundled_float_example_calibrates_with_nothing_to_invent(tmp_path):
    """README's "Try it" line: examples/float_cnn.onnx with its 16 samples gives a typed model the checker passes,
    every float32 activation and weight quantized, whose lowered form stays close to the float model."""
    from builders import ROOT
    from corpus import run_onnxruntime

    from onnx_qtypes import lower
    from onnx_qtypes.checker import check_model
    from onnx_qtypes.calibration.data import NpzSamples

    model, data, out = ROOT / "examples" / "float_cnn.onnx", ROOT / "examples" / "float_cnn_samples.npz", tmp_path / "t.onnx"
    result = run_cli("calibrate", str(model), "--data", str(data), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"{out}: 15 quantized tensor(s), statistics on 15 tensor(s) from 16 sample(s)"
    assert "check finds nothing" in result.stdout
    typed = onnx.load(out)
    check_model(typed)  # raises on any error
    assert {n for n in quantized_tensors(typed)} >= {"conv1", "relu1", "pool1", "conv2", "relu2", "gap", "features",
                                                     "conv1_w_quantized", "fc_w_quantized", "fc_b_quantized"}
    qdq = lower(typed)
    qdq.ir_version = 10
    float_model = onnx.load(model)
    for feed in list(NpzSamples(data))[:4]:
        want = run_onnxruntime(float_model, feed, optimize=False)["logits"]
        got = run_onnxruntime(qdq, feed, optimize=False)["logits"]
        assert 10 * np.log10(np.sum(want**2) / np.sum((got - want) ** 2)) > 25
