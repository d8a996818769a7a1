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

On trained weights: ``--models ppocr`` takes the three PP-OCR models that ship inside the
``rapidocr_onnxruntime`` wheel (text detection, recognition, direction classification), downloaded once from
the package index with ``pip download`` into ``--cache`` and read out of the wheel. Both tools get the same
float model: converted to opset 13 (per-channel QuantizeLinear / DequantizeLinear needs it; onnxruntime's
quantizer would write them into the opset-11/12 files, which onnxruntime then refuses), then through
onnxruntime's own recommended step, ``quant_pre_process`` (BatchNormalization folded, the Constant-node weights
made initializers; symbolic shape inference skipped, which these dynamic shapes fail). The data are synthetic
text images: lines of dark strokes on a light, noisy page, normalised as PaddleOCR does (ImageNet mean / std
for detection, (x - 0.5) / 0.5 for the others), at 1x3x256x256 (det), 1x3x48x320 (rec) and 1x3x48x192 (cls).
Run:
PYTHONPATH=. python benchmarks/bench_calibration_accuracy.py --models ppocr [--samples 16] [--eval 16] [--seeds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

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


# --- trained weights: the PP-OCR models of the rapidocr_onnxruntime wheel -----------------------------------

WHEEL = "rapidocr_onnxruntime==1.4.4"
PPOCR = {  # name -> (file in the wheel, input shape, normalisation)
    "ppocr-det": ("ch_PP-OCRv4_det_infer.onnx", (1, 3, 256, 256), "imagenet"),
    "ppocr-rec": ("ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320), "half"),
    "ppocr-cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192), "half"),
}


def _ppocr_files(cache: pathlib.Path) -> dict[str, pathlib.Path]:
    """The three float models, downloaded (once) and read out of the wheel."""
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob("rapidocr_onnxruntime-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", WHEEL,
                        "-d", str(cache)], check=True, stdout=subprocess.DEVNULL)
        wheels = sorted(cache.glob("rapidocr_onnxruntime-*.whl"))
    out = {}
    with zipfile.ZipFile(wheels[-1]) as wheel:
        for name, (file, _, _) in PPOCR.items():
            target = cache / file
            if not target.exists():
                target.write_bytes(wheel.read(f"rapidocr_onnxruntime/models/{file}"))
            out[name] = target
    return out


def _prepared(source: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """Opset 13, then onnxruntime's quant_pre_process, unused domains dropped: the float model both tools get."""
    from onnx import version_converter
    from onnxruntime.quantization.shape_inference import quant_pre_process

    converted = folder / f"{source.stem}-13.onnx"
    onnx.save(version_converter.convert_version(onnx.load(source), 13), converted)
    target = folder / f"{source.stem}-prepared.onnx"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        quant_pre_process(str(converted), str(target), skip_symbolic_shape=True)
    model = onnx.load(target)
    used = {n.domain for n in model.graph.node}
    kept = [o for o in model.opset_import if o.domain in used or o.domain in ("", "ai.onnx")]
    del model.opset_import[:]
    model.opset_import.extend(kept)
    onnx.save(model, target)
    return target


def _text_page(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A grey page [h, w] in 0..255 with lines of dark glyph-like strokes (a few bars per character cell)."""
    page = rng.uniform(190, 250) + rng.normal(0, 5, (h, w))
    line = int(h * rng.uniform(0.55, 0.8)) if h <= 64 else int(rng.integers(12, 30))
    y = int(rng.integers(0, max(1, h - line))) if h <= 64 else int(rng.integers(0, line))
    while y + line <= h:
        x = int(rng.integers(0, max(1, w // 10)))
        ink = rng.uniform(0, 90)
        while x + line <= w:
            cell = max(3, int(line * rng.uniform(0.45, 0.85)))
            thick = max(1, line // 9)
            for _ in range(int(rng.integers(2, 5))):
                if rng.random() < 0.5:  # a horizontal bar
                    r = y + int(rng.integers(0, line - thick))
                    c0 = x + int(rng.integers(0, cell // 2))
                    page[r:r + thick, c0:c0 + int(rng.integers(cell // 3, cell))] = ink
                else:  # a vertical one
                    c = x + int(rng.integers(0, cell - thick))
                    r0 = y + int(rng.integers(0, line // 3))
                    page[r0:r0 + int(rng.integers(line // 2, line)), c:c + thick] = ink
            x += cell + int(rng.integers(1, max(2, line // 3)))
            if rng.random() < 0.15:
                x += line  # a space between words
        if h <= 64:
            break
        y += line + int(rng.integers(line // 3, line))
    return np.clip(page, 0, 255)


def _ppocr_inputs(name: str, seed: int, count: int) -> list[dict[str, np.ndarray]]:
    _, (n, c, h, w), norm = PPOCR[name]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        rgb = _text_page(rng, h, w)[None, :, :] * rng.uniform(0.9, 1.0, (c, 1, 1)) / 255.0  # a slight tint
        if norm == "imagenet":
            mean, std = np.array([0.485, 0.456, 0.406])[:, None, None], np.array([0.229, 0.224, 0.225])[:, None, None]
            x = (rgb - mean) / std
        else:
            x = (rgb - 0.5) / 0.5
        out.append({"x": x[None].astype(np.float32).reshape(n, c, h, w)})
    return out


def _measure(name: str, folder: str, samples: int, evaluation: int, seed: int,
             prepared: dict[str, pathlib.Path] | None = None) -> dict:
    """(per_channel, method) -> (ours, onnxruntime or None) in dB, calibrating and evaluating with one seed."""
    if prepared is not None:  # a PP-OCR model, prepared once
        path = prepared[name]
        model = onnx.load(path)
        calib, held_out = _ppocr_inputs(name, 2 * seed + 1, samples), _ppocr_inputs(name, 2 * seed + 2, evaluation)
    else:
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
    parser.add_argument("--models", choices=("corpus", "ppocr"), default="corpus",
                        help="corpus: the generated float models (random weights); ppocr: the trained PP-OCR models")
    parser.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "onnx-qtypes-bench"),
                        help="where --models ppocr keeps the downloaded wheel and its models")
    args = parser.parse_args()
    print(f"{args.seeds} seed(s), {args.samples} calibration and {args.eval} evaluation samples each; "
          "dB are means over the seeds, the difference with its paired standard error")
    print()
    print("| model | per-channel | method | ours (dB) | onnxruntime (dB) | ours - onnxruntime | seeds ours >= onnxruntime (at 0.01 dB) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        prepared = None
        names = sorted(corpus.FLOAT_MODELS)
        if args.models == "ppocr":
            files = _ppocr_files(pathlib.Path(args.cache))
            prepared = {name: _prepared(file, pathlib.Path(folder)) for name, file in files.items()}
            names = sorted(PPOCR)
        for name in names:
            runs = [_measure(name, folder, args.samples, args.eval, seed, prepared) for seed in range(args.seeds)]
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
