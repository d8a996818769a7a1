"""The mutation fuzzer of tests/test_fuzz.py, run longer: other seeds, thousands of mutants, more seed models.

    python tests/fuzz_long.py [--seed 1 2 3] [--mutants 4000] [--sample 120] [--seconds 60] [--trace]

Prints every crash (a call that raised anything but QTypesError, or ran past --seconds) with what rebuilds
the mutant (seed file, fuzz seed, index, mutations), then a count per crash site and per command outcome.
Exits 1 when anything crashed. A mutant that aborts the process itself (a C++ assertion in a library) ends
the run: faulthandler prints where, and --trace names each mutant before it runs.
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from mutation_fuzz import Crash, exercise, memory_guard, mutants, seed_files  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, nargs="+", default=[1, 2, 3], help="fuzz seeds (CI uses 20)")
    parser.add_argument("--mutants", type=int, default=4000, help="mutants per fuzz seed")
    parser.add_argument("--sample", type=int, default=120, help="suite models among the seeds")
    parser.add_argument("--seconds", type=float, default=60.0, help="time guard per call")
    parser.add_argument("--memory-gib", type=float, default=4.0, help="address space a call may add")
    parser.add_argument("--trace", action="store_true", help="name each mutant before it runs")
    args = parser.parse_args(argv)
    faulthandler.enable()
    seeds = seed_files(args.sample)
    outcomes: collections.Counter = collections.Counter()
    crashes: list[Crash] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, memory_guard(int(args.memory_gib * 2**30)):
        for fuzz_seed in args.seed:
            for k, m in enumerate(mutants(seeds, args.mutants, fuzz_seed)):
                if args.trace:
                    print(f"@ {m.key} {list(m.mutations)}", file=sys.stderr, flush=True)
                found = exercise(m, pathlib.Path(folder), args.seconds, outcomes)
                for crash in found:
                    print(crash, flush=True)
                crashes += found
                if (k + 1) % 500 == 0:
                    print(f"-- seed {fuzz_seed}: {k + 1} mutants, {len(crashes)} crash(es), "
                          f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    total = args.mutants * len(args.seed)
    print(f"\n{total} mutants of {len(seeds)} seed models, fuzz seeds {args.seed}: {len(crashes)} crash(es) "
          f"in {time.perf_counter() - start:.0f} s")
    for (where, error), count in collections.Counter((c.where, c.error.split(":")[0]) for c in crashes).most_common():
        print(f"  {count:5d}  {error} at {where}")
    for command in sorted({c for c, _ in outcomes}):
        print(f"  {command:8s} " + ", ".join(f"{kind} {outcomes[command, kind]}" for kind in ("ok", "refused", "crash")))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
