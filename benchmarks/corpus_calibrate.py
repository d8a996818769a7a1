"""`onnx-qtypes calibrate` on every float model of producer_corpus.py runs, in five settings, as a user would run it.

    python benchmarks/corpus_calibrate.py DIR/float [DIR/float ...] [--models a,b] [--settings minmax,...]

A float folder holds ``NAME.onnx`` and ``NAME.npz`` (``calib/K/INPUT`` samples, ``feed/INPUT`` a test input), as
producer_corpus.py and producer_recipes.py write them. Per model and setting: ``calibrate`` in its own process
(exit code, seconds, what it says of the check of its own output), then ``lower`` and onnxruntime's unoptimized run
of the lowered model against the float model on the test input (SQNR of the first output, in dB). Settings:
minmax (the default), entropy, percentile, per-channel symmetric weights with symmetric activations, and mse with
int16 activations. An exit other than 0, a check error on calibrate's own output, or an output that lower or then
onnxruntime refuses, is a finding: it makes this exit 1.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from producer_recipes import samples_of  # noqa: E402

SETTINGS = {"minmax": [], "entropy": ["--method", "entropy"], "percentile": ["--method", "percentile"],
            "per-channel-symmetric": ["--per-channel", "--schema", "symmetric"],
            "mse-int16": ["--method", "mse", "--activation-type", "int16"]}


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *argv], capture_output=True, text=True, timeout=3600)


def _sqnr(float_model: pathlib.Path, lowered: pathlib.Path, feed: dict) -> float:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    want, got = (ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"]).run(None, feed)[0]
                 for p in (float_model, lowered))
    want, got = np.asarray(want, np.float64), np.asarray(got, np.float64)
    return float(10 * np.log10(np.sum(want**2) / max(float(np.sum((got - want) ** 2)), 1e-300)))


def run(path: pathlib.Path, setting: str, folder: pathlib.Path) -> dict:
    data = folder / "calib.npz"
    try:
        calib, feed = samples_of(path.with_suffix(".npz"))
        if calib:
            np.savez(data, **{name: np.stack([s[name] for s in calib]) for name in calib[0]})
    except (OSError, ValueError, KeyError) as exc:  # a broken .npz, samples of other inputs or shapes: a row
        calib, reason = [], f"its .npz cannot be read as samples ({type(exc).__name__}: {str(exc)[:80]})"
    else:
        reason = "no calib/ samples in its .npz"
    if not calib:
        return {"model": path.stem, "setting": setting, "exit": reason, "seconds": 0, "check": "", "left_float": 0}
    out, lowered = folder / f"{setting}.onnx", folder / f"{setting}.lowered.onnx"
    start = time.perf_counter()
    done = _cli("calibrate", str(path), "--data", str(data), "-o", str(out), *SETTINGS[setting])
    row = {"model": path.stem, "setting": setting, "exit": done.returncode,
           "seconds": round(time.perf_counter() - start, 1)}
    lines = [line for line in done.stdout.splitlines() if line.startswith("note: check finds")]
    row["check"] = lines[-1][len("note: "):] if lines else (done.stderr.strip().splitlines() or [""])[-1]
    row["left_float"] = sum("stays float" in line for line in done.stdout.splitlines())
    if done.returncode != 0:
        return row
    lowering = _cli("lower", str(out), str(lowered))
    if lowering.returncode != 0:  # calibrate's own output that lower refuses: a finding of the row
        row["failed"] = f"lower exit {lowering.returncode}: {(lowering.stderr.strip().splitlines() or [''])[-1][:80]}"
        return row
    try:
        row["sqnr_db"] = round(_sqnr(path, lowered, feed), 1)
    except Exception as exc:  # noqa: BLE001 - onnxruntime refusing the lowered model: a finding of the row
        row["failed"] = f"onnxruntime: {' '.join(str(exc).split())[:80]}"
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=pathlib.Path)
    parser.add_argument("--models", help="comma-separated model names (default: every NAME.onnx with its NAME.npz)")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    args = parser.parse_args()
    chosen = set(args.models.split(",")) if args.models else None
    models = sorted(p for folder in args.folders for p in folder.glob("*.onnx")
                    if p.with_suffix(".npz").exists() and (chosen is None or p.stem in chosen))
    unknown = [s for s in args.settings.split(",") if s not in SETTINGS]
    missing = sorted((chosen or set()) - {p.stem for p in models})
    if unknown or missing or not models:
        print(f"unknown settings {unknown} (known: {', '.join(SETTINGS)})" if unknown else
              f"no NAME.onnx with its NAME.npz for {missing or 'any model'} in {', '.join(map(str, args.folders))}",
              file=sys.stderr)
        return 2
    findings = 0
    print("| model | setting | exit | seconds | tensors left float | check of the output | SQNR (dB) |")
    print("|---|---|---|---|---|---|---|")
    for path in models:
        for setting in args.settings.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                row = run(path, setting, pathlib.Path(tmp))
            bad = row["exit"] != 0 or "failed" in row or ("check finds" in row["check"]
                                                          and " 0 error(s)" not in row["check"]
                                                          and "nothing" not in row["check"])
            findings += bad
            print(f"| {row['model']} | {setting} | {row['exit']} | {row['seconds']} | {row['left_float']} | "
                  f"{row['check']} | {row.get('sqnr_db', row.get('failed', '-'))} |", flush=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
