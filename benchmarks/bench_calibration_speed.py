"""Calibration speed and memory against onnxruntime's quantize_static, side by side in one run.

A float Conv / Relu chain (Conv 16 -> 16 channels, 3x3, pads 1, with bias,
on 1x16x8x8, then Relu, repeated; He-scaled weights so values neither vanish
nor explode) of 200 / 800 / 3,200 / 12,800 nodes, calibrated on the same 16
samples (normal(0, 1), one .npz) by:

- ours: the command a user runs, `onnx-qtypes calibrate MODEL --data D.npz -o OUT`
  (statistics of every float tensor with its 2048-bin histogram, minmax
  ranges, uint8 asymmetric activations, int8 symmetric weights, the typed
  model written, and the checker's verdict on it printed);
- onnxruntime: `quantize_static(MODEL, OUT, reader)` with the same settings
  (QDQ, QUInt8 activations, QInt8 weights, MinMax), the reader yielding the
  same samples from the same .npz.

Each run is its own child process, so its peak resident memory (ru_maxrss)
is its own; the time is measured in the child from the call to the written
file (imports excluded). Target: ours at most onnxruntime's time at 3,200
nodes, time per node flat, peak memory per node flat. onnxruntime runs up to 3,200 nodes
(``--onnxruntime-up-to``): its time grows about as the square of the nodes. Run:
python benchmarks/bench_calibration_speed.py [--sizes 200 800 3200 12800] [--samples 16]

With ``--float DIR/NAME``, the two tools instead calibrate one float model of a producer_corpus.py float folder
(NAME.onnx) on its own calibration samples (NAME.npz), e.g. BERT-base:
python benchmarks/bench_calibration_speed.py --float PC/r8/float/bert_base
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR_VERSION, OPSET = 10, 21
CHANNELS, SIDE = 16, 8


def chain(nodes: int, seed: int = 0) -> onnx.ModelProto:
    """(Conv, Relu) * (nodes // 2) on [1, CHANNELS, SIDE, SIDE]."""
    rng = np.random.default_rng(seed)
    std = np.sqrt(2.0 / (CHANNELS * 9))  # He: a Relu chain keeps its variance
    shape = [1, CHANNELS, SIDE, SIDE]
    body, inits, x = [], [], "x"
    for i in range(max(nodes // 2, 1)):
        inits += [numpy_helper.from_array(rng.normal(0, std, (CHANNELS, CHANNELS, 3, 3)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.normal(0, 0.1, CHANNELS).astype(np.float32), f"b{i}")]
        body += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                 helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        x = f"r{i}"
    graph = helper.make_graph(body, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def _ours(model: str, data: str, out: str) -> None:
    from onnx_qtypes.cli import main

    if main(["calibrate", model, "--data", data, "-o", out]) != 0:
        raise SystemExit("onnx-qtypes calibrate failed")


def npz_reader(data: str):
    """An onnxruntime CalibrationDataReader over the samples of ``data``, the .npz `calibrate --data` reads (each
    array an input's samples, stacked on the first axis)."""
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            stacked = np.load(data)
            self.samples = iter([{name: stacked[name][k] for name in stacked.files}
                                 for k in range(len(stacked[stacked.files[0]]))])

        def get_next(self):
            return next(self.samples, None)

    return Reader()


def _onnxruntime(model: str, data: str, out: str) -> None:
    import logging

    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    logging.disable(logging.WARNING)
    quantize_static(model, out, npz_reader(data), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=False, calibrate_method=CalibrationMethod.MinMax)


TOOLS = {"ours": _ours, "onnxruntime": _onnxruntime}


def _child(tool: str, model: str, data: str, out: str) -> None:
    import contextlib
    import io

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        TOOLS[tool](model, data, out)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "peak_mib": peak}))


def _measure(tool: str, model: pathlib.Path, data: pathlib.Path, folder: pathlib.Path) -> dict:
    out = folder / f"{model.stem}-{tool}.onnx"
    done = subprocess.run([sys.executable, __file__, "--child", tool, str(model), str(data), str(out)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tool} on {model.name} failed:\n{done.stderr[-2000:]}")
    out.unlink(missing_ok=True)
    for extra in folder.glob("*augmented*"):
        extra.unlink()
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 800, 3200, 12800])
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--onnxruntime-up-to", type=int, default=3200,
                        help="measure onnxruntime only up to this many nodes (its time grows about as nodes squared: "
                             "12,800 would take most of an hour)")
    parser.add_argument("--float", metavar="DIR/NAME", type=pathlib.Path,
                        help="instead of the chains: one float model NAME.onnx of a producer_corpus.py float folder, "
                             "on its calibration samples (NAME.npz), e.g. PC/r8/float/bert_base")
    parser.add_argument("--child", nargs=4, metavar=("TOOL", "MODEL", "DATA", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    if args.float:
        return _one_float_model(args.float)
    print(f"{args.samples} samples of [1, {CHANNELS}, {SIDE}, {SIDE}]; time from call to written file, "
          "peak resident memory of the process")
    print()
    print("| nodes | ours | onnxruntime quantize_static | ours / onnxruntime | ours ms per node "
          "| ours peak | onnxruntime peak | ours peak KiB per node |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        data = folder / "calib.npz"
        np.savez(data, x=rng.normal(size=(args.samples, 1, CHANNELS, SIDE, SIDE)).astype(np.float32))
        for nodes in args.sizes:
            model = folder / f"chain{nodes}.onnx"
            onnx.save(chain(nodes), model)
            ours = _measure("ours", model, data, folder)
            theirs = _measure("onnxruntime", model, data, folder) if nodes <= args.onnxruntime_up_to else None
            cells = [f"{nodes:,}", f"{ours['seconds']:.2f} s",
                     f"{theirs['seconds']:.2f} s" if theirs else "-",
                     f"{ours['seconds'] / theirs['seconds']:.2f}x" if theirs else "-",
                     f"{1000 * ours['seconds'] / nodes:.2f}", f"{ours['peak_mib']:.0f} MiB",
                     f"{theirs['peak_mib']:.0f} MiB" if theirs else "-", f"{1024 * ours['peak_mib'] / nodes:.0f}"]
            print("| " + " | ".join(cells) + " |", flush=True)
    return 0


def _one_float_model(path: pathlib.Path) -> int:
    """Both tools on one float model of a producer_corpus.py float folder, on its calibration samples."""
    from producer_recipes import samples_of

    model = path.with_suffix(".onnx")
    samples, _ = samples_of(path.with_suffix(".npz"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        data = folder / "calib.npz"
        np.savez(data, **{name: np.stack([s[name] for s in samples]) for name in samples[0]})
        ours, theirs = _measure("ours", model, data, folder), _measure("onnxruntime", model, data, folder)
    print(f"{model.name}, {len(samples)} samples; time from call to written file, peak resident memory of the process")
    print()
    print("| ours | onnxruntime quantize_static | ours / onnxruntime | ours peak | onnxruntime peak | peak ratio |")
    print("|---|---|---|---|---|---|")
    print(f"| {ours['seconds']:.1f} s | {theirs['seconds']:.1f} s | {ours['seconds'] / theirs['seconds']:.2f}x "
          f"| {ours['peak_mib']:.0f} MiB | {theirs['peak_mib']:.0f} MiB | {ours['peak_mib'] / theirs['peak_mib']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
