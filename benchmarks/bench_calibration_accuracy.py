"""Accuracy of calibrated models: ours against onnxruntime.quantization.quantize_static, side by side.

On the corpus float models (tests/corpus.py) with generated data (calibration
samples and separate evaluation samples, normal(0, 1)), both tools quantize
with the same data and settings: QDQ, uint8 asymmetric activations, int8
symmetric weights, per-channel off / on, for each method both offer (MinMax,
Percentile 99.999, Entropy); ours also with mse. Both quantized models run
on onnxruntime with graph optimizations off (QuantizeLinear / DequantizeLinear
computed as written), and the table gives the output SQNR in dB against the
float model over the evaluation samples (higher is better). Each seed draws
new calibration and evaluation samples; the table gives means over the
seeds and the paired difference with its standard error, because a single
draw moves a row by a few hundredths of a dB either way (one rounding more
or less). Run:
PYTHONPATH=. python benchmarks/bench_calibration_accuracy.py [--samples 32] [--eval 256] [--seeds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import pathlib
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import corpus  # noqa: E402

from onnx_qtypes import lower  # noqa: E402
from onnx_qtypes.calibration import calibrate_model  # noqa: E402

METHODS = {"minmax": "MinMax", "percentile": "Percentile", "entropy": "Entropy"}


def _inputs(model: onnx.ModelProto, seed: int, count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph.input}
    return [{n: rng.normal(size=s).astype(np.float32) for n, s in shapes.items()} for _ in range(count)]


def _outputs(model: onnx.ModelProto, feeds: list[dict]) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    name = session.get_outputs()[0].name
    return np.concatenate([session.run([name], f)[0].reshape(-1) for f in feeds]).astype(np.float64)


def _sqnr(reference: np.ndarray, approx: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(reference**2) / max(np.sum((reference - approx) ** 2), 1e-30)))


def _ort_quantized(path: pathlib.Path, samples: list[dict], method: str, per_channel: bool) -> onnx.ModelProto:
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(samples)

        def get_next(self):
            return next(self.items, None)

    out = path.with_name(f"{path.stem}-ort-{method}-{per_channel}.onnx")
    logging.disable(logging.WARNING)
    with contextlib.redirect_stdout(io.StringIO()):
        quantize_static(str(path), str(out), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=per_channel,
                        calibrate_method=getattr(CalibrationMethod, METHODS[method]))
    logging.disable(logging.NOTSET)
    return onnx.load(out)


def _measure(name: str, folder: str, samples: int, evaluation: int, seed: int) -> dict:
    """(per_channel, method) -> (ours, onnxruntime or None) in dB, calibrating and evaluating with one seed."""
    model = corpus.FLOAT_MODELS[name]()
    path = pathlib.Path(folder) / f"{name}-{seed}.onnx"
    onnx.save(model, path)
    calib, held_out = _inputs(model, 2 * seed + 1, samples), _inputs(model, 2 * seed + 2, evaluation)
    reference = _outputs(model, held_out)
    out = {}
    for per_channel in (False, True):
        for method in (*METHODS, "mse"):
            typed = calibrate_model(model, calib, method=method, per_channel=per_channel).model
            qdq = lower(typed)
            qdq.ir_version = 10
            ours = _sqnr(reference, _outputs(qdq, held_out))
            theirs = None
            if method in METHODS:
                theirs = _sqnr(reference, _outputs(_ort_quantized(path, calib, method, per_channel), held_out))
            out[per_channel, method] = (ours, theirs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=32, help="calibration samples per seed")
    parser.add_argument("--eval", type=int, default=256, help="held-out evaluation samples per seed")
    parser.add_argument("--seeds", type=int, default=5, help="independent calibration / evaluation draws")
    args = parser.parse_args()
    print(f"{args.seeds} seed(s), {args.samples} calibration and {args.eval} evaluation samples each; "
          "dB are means over the seeds, the difference with its paired standard error")
    print()
    print("| model | per-channel | method | ours (dB) | onnxruntime (dB) | ours - onnxruntime | seeds ours >= onnxruntime (at 0.01 dB) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in sorted(corpus.FLOAT_MODELS):
            runs = [_measure(name, folder, args.samples, args.eval, seed) for seed in range(args.seeds)]
            for key in runs[0]:
                ours = np.array([r[key][0] for r in runs])
                if runs[0][key][1] is None:
                    print(f"| {name} | {'on' if key[0] else 'off'} | {key[1]} | {ours.mean():.2f} | - | - | - |")
                    continue
                theirs = np.array([r[key][1] for r in runs])
                diff = ours - theirs
                error = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else 0.0
                wins = int(np.sum(diff >= -0.005))
                print(f"| {name} | {'on' if key[0] else 'off'} | {key[1]} | {ours.mean():.2f} | {theirs.mean():.2f} "
                      f"| {diff.mean():+.2f} ± {error:.2f} | {wins}/{diff.size} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
