"""`onnx-qtypes show` (table, JSON, HTML) on typed chains of growing size, beside onnx's own reading and printing.

The model is the checker benchmark's typed chain (bench_checker.py: QuantizeLinear, then Conv with per-channel
int8 weights and int32 bias, Relu, repeated, then DequantizeLinear), with, as calibration writes them,
statistics on every activation: min, max, mean, std, count and a 2048-bin histogram (``--bins 0``: none,
parameters only). Each command runs in its own child process, as a user runs it (`onnx-qtypes show MODEL
--format F -o OUT`, file read included), so its peak resident memory is its own. The peers, on the same file:
`onnx.load` (reading the model) and `onnx.printer.to_text` after it (printing it as text). Targets: time per
tensor flat as the model grows, and an HTML page that stays a few megabytes. Run:
python benchmarks/bench_show.py [--sizes 1000 4000 10000] [--bins 2048]
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_checker import build  # noqa: E402


def chain(nodes: int, bins: int):
    from onnx_qtypes.proto.model import write_statistics
    from onnx_qtypes.proto.statistics import Statistics, TensorStatistics

    typed, _ = build(nodes)
    if bins:
        rng = np.random.default_rng(0)
        variants = []
        for k in range(16):  # a few distinct histograms, as different tensors have
            values = np.maximum(rng.normal(0.1 * k, 1.0, 100_000), -0.5)
            counts, edges = np.histogram(values, bins=bins)
            variants.append(TensorStatistics(tensor=Statistics(
                min=float(values.min()), max=float(values.max()), mean=float(values.mean()),
                std=float(values.std()), count=values.size, histogram_edges=tuple(edges.tolist()),
                histogram_counts=tuple(counts.tolist())), method="minmax"))
        for k, vi in enumerate(v for v in typed.graph.value_info if v.name[0] in "ac"):
            write_statistics(vi, variants[k % len(variants)])
    return typed


def _child(what: str, model: str, out: str) -> None:
    start = time.perf_counter()
    if what in ("table", "json", "html"):
        from onnx_qtypes.cli import main

        if main(["show", model, "--format", what, "-o", out]) != 0:
            raise SystemExit(f"show --format {what} failed")
    else:
        import onnx

        loaded = onnx.load(model)
        if what == "printer":
            pathlib.Path(out).write_text(onnx.printer.to_text(loaded))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mib": peak}))


def _measure(what: str, model: pathlib.Path, folder: pathlib.Path) -> dict:
    out = folder / f"out.{what}"
    done = subprocess.run([sys.executable, __file__, "--child", what, str(model), str(out)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{what} on {model.name} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["bytes"] = out.stat().st_size if out.exists() else 0
    out.unlink(missing_ok=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 10000])
    parser.add_argument("--bins", type=int, default=2048, help="histogram bins per activation (0: no statistics)")
    parser.add_argument("--child", nargs=3, metavar=("WHAT", "MODEL", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    from onnx_qtypes import quantized_tensors, save

    print("| nodes | tensors | file | onnx.load | onnx.printer | show table | show json | show html | html page "
          "| html ms per tensor | html peak |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        for nodes in args.sizes:
            model = folder / f"chain{nodes}.onnx"
            typed = chain(nodes, args.bins)
            tensors = len(quantized_tensors(typed))
            save(typed, model)
            del typed
            r = {what: _measure(what, model, folder) for what in ("load", "printer", "table", "json", "html")}
            html = r["html"]
            print(f"| {nodes:,} | {tensors:,} | {model.stat().st_size / 2**20:.0f} MiB | {r['load']['seconds']:.2f} s "
                  f"| {r['printer']['seconds']:.2f} s | {r['table']['seconds']:.2f} s | {r['json']['seconds']:.2f} s "
                  f"| {html['seconds']:.2f} s | {html['bytes'] / 2**20:.1f} MiB "
                  f"| {1000 * html['seconds'] / tensors:.2f} | {html['peak_mib']:.0f} MiB |", flush=True)
            model.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
