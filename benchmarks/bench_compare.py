"""`compare` against the conformance runner on every execution case of the suite, side by side in one run.

For each case, its typed model.onnx and its inputs go through `compare` (the reference and the backend, every
tensor exposed, each judged against the suite's tolerance rule, proposal/spec/semantics.md §8), and through the runner's
`run_case` (the case's own outputs against its recorded expected outputs and tolerance). The table crosses
compare's exit code with the runner's outcome; a case compare flags (exit 1) that the runner passes would be a
tolerance in compare tighter than the suite's. The times are both tools' wall clock over the same cases.

Run: python benchmarks/bench_compare.py [--backend onnxruntime-unoptimized] [-k FILTER] [--list 1/pass ...]
"""

from __future__ import annotations

import argparse
import collections
import time

from onnx_qtypes.compare import compare
from onnx_qtypes.conformance import load_backend, load_cases, run_case
from onnx_qtypes.proto.errors import QTypesError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="onnxruntime-unoptimized")
    parser.add_argument("-k", dest="filter", action="append")
    parser.add_argument("--list", action="append", default=[], metavar="EXIT/OUTCOME",
                        help="print the cases of one cell, e.g. 1/pass")
    args = parser.parse_args()
    backend = load_backend(args.backend)
    cells: dict[str, list[str]] = collections.defaultdict(list)
    spent = {"compare": 0.0, "conformance": 0.0}
    for case in load_cases(filter=args.filter):
        if getattr(case, "kind", "execution") != "execution":  # must-reject cases have no outputs to compare
            continue
        start = time.perf_counter()
        try:
            code = str(compare(case.model_path, backend, case.feeds()).exit_code)
        except QTypesError:
            code = "2"
        middle = time.perf_counter()
        outcome = run_case(backend, case).outcome
        spent["compare"] += middle - start
        spent["conformance"] += time.perf_counter() - middle
        cells[f"{code}/{outcome}"].append(case.id)
    print(f"compare exit / conformance outcome on {args.backend}, {sum(map(len, cells.values()))} cases")
    for cell, ids in sorted(cells.items()):
        print(f"  {cell:18} {len(ids):5}")
    print(f"wall: compare {spent['compare']:.1f} s, conformance run_case {spent['conformance']:.1f} s "
          f"(ratio {spent['compare'] / max(spent['conformance'], 1e-9):.2f})")
    for cell in args.list:
        print(f"{cell}: {' '.join(cells.get(cell, []))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
