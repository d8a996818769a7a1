"""Peak memory of calibration over 10, 100 and 1000 samples: ours against onnxruntime's calibrators.

Ours reads the samples one at a time from an .npz and keeps only running
statistics, so its peak should not grow with the sample count. The peer is
onnxruntime.quantization's calibrator (create_calibrator + collect_data, the
step quantize_static runs) fed by a CalibrationDataReader over the same
samples. Peaks are tracemalloc's (numpy's buffers are traced), measured in
this process on the corpus CNN (tests/corpus.py). Run:
PYTHONPATH=. python benchmarks/bench_calibration_memory.py [--counts 10 100 1000]
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import sys
import tempfile
import tracemalloc

import numpy as np
import onnx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import corpus  # noqa: E402

from bench_calibration_speed import npz_reader  # noqa: E402

from onnx_qtypes.calibration import calibrate_model  # noqa: E402


def _peak(run) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[10, 100, 1000])
    args = parser.parse_args()
    from onnxruntime.quantization import CalibrationMethod
    from onnxruntime.quantization.calibrate import create_calibrator

    model = corpus.cnn()
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "cnn.onnx"
        onnx.save(model, path)
        for count in args.counts:
            data = pathlib.Path(folder) / f"calib{count}.npz"
            np.savez(data, x=rng.normal(size=(count, 1, 3, 8, 8)).astype(np.float32))
            ours = {m: _peak(lambda m=m: calibrate_model(model, str(data), method=m)) for m in ("minmax", "entropy")}

            def ort(method):
                def run():
                    calibrator = create_calibrator(path, calibrate_method=method, augmented_model_path=str(
                        pathlib.Path(folder) / "augmented.onnx"))
                    calibrator.collect_data(npz_reader(str(data)))
                    calibrator.compute_data()
                return run

            theirs = {m: _peak(ort(method)) for m, method in (("minmax", CalibrationMethod.MinMax),
                                                              ("entropy", CalibrationMethod.Entropy))}
            rows.append((count, ours, theirs))
    print("| samples | ours minmax | ours entropy | onnxruntime MinMax | onnxruntime Entropy |")
    print("|---|---|---|---|---|")
    for count, ours, theirs in rows:
        print(f"| {count} | {ours['minmax']:.1f} MiB | {ours['entropy']:.1f} MiB | {theirs['minmax']:.1f} MiB "
              f"| {theirs['entropy']:.1f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
