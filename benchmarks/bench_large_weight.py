"""A 4096 x 4096 int4 weight with float16 scales per block of 32, as 4-bit LLM quantizers write it: how long
lift takes and how large the .onnx file is (graph and types) once its parameters are kept by reference and the
data goes to external data. Run: python benchmarks/bench_large_weight.py [--repeat N]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import onnx_qtypes as qt  # noqa: E402
from test_parameters_by_reference import BUDGET, _blocked_qdq  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    qdq = _blocked_qdq()
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        typed = qt.lift(qdq)
        times.append(time.perf_counter() - start)
    with tempfile.TemporaryDirectory() as folder:
        typed_path, lowered_path = pathlib.Path(folder, "typed.onnx"), pathlib.Path(folder, "lowered.onnx")
        qt.save(typed, typed_path, external_data=True)
        qt.save(qt.lower(typed), lowered_path, external_data=True)
        sizes = typed_path.stat().st_size, lowered_path.stat().st_size
    print(f"lift (best of {args.repeat}): {min(times):.3f} s")
    print(f"typed .onnx with external data: {sizes[0]} bytes (budget {BUDGET})")
    print(f"lowered .onnx with external data: {sizes[1]} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
