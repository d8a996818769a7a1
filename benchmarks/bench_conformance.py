"""How long the whole conformance suite takes on each installed backend, side by side in one run, against the
limits the suite promises (reference <= 60 s, onnxruntime and OpenVINO <= 120 s, on 2 cores).

Run: python benchmarks/bench_conformance.py [-j 2] [--backend NAME ...]
Each backend is timed in a fresh process (`onnx-qtypes conformance --backend NAME -j N`), so that import and
session set-up count, as they do for a vendor running the command.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

LIMITS = {"reference": 60, "reference-integer": 60, "onnxruntime": 120, "onnxruntime-unoptimized": 120,
          "openvino": 120}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-j", type=int, default=2)
    parser.add_argument("--backend", action="append")
    args = parser.parse_args()
    rows = []
    for name in args.backend or list(LIMITS):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "onnx_qtypes", "conformance", "--backend", name, "-j", str(args.j)],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if proc.returncode == 2:
            rows.append((name, "not installed" if "pip install" in proc.stderr else proc.stderr.strip()[:60], "", ""))
            continue
        total = next((line for line in proc.stdout.splitlines() if line.startswith("total")), "total ?").split()[1:]
        limit = LIMITS.get(name)
        rows.append((name, f"{seconds:.1f} s", f"{limit} s" if limit else "", "/".join(total)))
    print(f"conformance suite, -j {args.j}, {os.cpu_count()} CPUs visible")
    print(f"{'backend':26} {'wall':>10} {'limit':>7}  pass/fail/unsupported/error")
    for name, wall, limit, totals in rows:
        print(f"{name:26} {wall:>10} {limit:>7}  {totals}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
