"""Accuracy of calibrated models: ours against onnxruntime.quantization.quantize_static, side by side.

On the corpus float models (tests/corpus.py) with generated data (calibration
samples and separate evaluation samples, normal(0, 1)), both tools quantize
with the same data and settings: QDQ, uint8 asymmetric activations, int8
symmetric weights, per-channel off / on, for each method both offer (MinMax,
Percentile 99.999, Entropy); ours also with mse. Both quantized models run
on onnxruntime with graph optimizations off (QuantizeLinear / DequantizeLinear
computed as written), and the table gives the output SQNR in dB against the
float model over every evaluation sample (higher is better). Run:
PYTHONPATH=. python benchmarks/bench_calibration_accuracy.py [--samples 32] [--eval 16]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--eval", type=int, default=16)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, make in sorted(corpus.FLOAT_MODELS.items()):
            model = make()
            path = pathlib.Path(folder) / f"{name}.onnx"
            onnx.save(model, path)
            calib, evaluation = _inputs(model, 1, args.samples), _inputs(model, 2, args.eval)
            reference = _outputs(model, evaluation)
            for per_channel in (False, True):
                for method in (*METHODS, "mse"):
                    typed = calibrate_model(model, calib, method=method, per_channel=per_channel).model
                    qdq = lower(typed)
                    qdq.ir_version = 10
                    ours = _sqnr(reference, _outputs(qdq, evaluation))
                    theirs = None
                    if method in METHODS:
                        theirs = _sqnr(reference, _outputs(_ort_quantized(path, calib, method, per_channel), evaluation))
                    rows.append((name, per_channel, method, ours, theirs))
    print("| model | per-channel | method | ours (dB) | onnxruntime (dB) | ours - onnxruntime |")
    print("|---|---|---|---|---|---|")
    for name, pc, method, ours, theirs in rows:
        other = "-" if theirs is None else f"{theirs:.2f}"
        diff = "-" if theirs is None else f"{ours - theirs:+.2f}"
        print(f"| {name} | {'on' if pc else 'off'} | {method} | {ours:.2f} | {other} | {diff} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
