"""How often the integer kernels (and onnxruntime) differ from the definition, measured.

Part 1 runs the random single-op cases of the property tests
(tests/reference_cases.py: random shapes, attributes, storage types,
granularities and parameters) through the definitional evaluator, the
integer evaluator and, lowered to QDQ, onnxruntime (1 thread; unoptimized,
and optimized where it fuses), and prints per operator the share of output
elements that differ by one storage step and by more (the tests assert
"more" never happens for the integer kernels).

Part 2 isolates the requantization rounding: random int32 accumulators
times random real multipliers, rounded by the definition (round half to
even of the float64 product) and by 31-bit fixed point with each rounding
of fixed_point (half_even, used by the kernels; half_up = TFLite single
rounding / TOSA; gemmlowp = TFLite's default double rounding), once with
arbitrary scales and once with power-of-two scales, where ties are common.

The random cases are derandomized (the same cases every run), so the numbers reproduce.

Run: python benchmarks/bench_agreement.py [--examples 200] [--samples 1000000]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from reference_cases import CASES, REQUANTIZE_CASES, Case  # noqa: E402
from reference_models import activations_per_tensor, compare, lower_to_qdq, run_onnxruntime  # noqa: E402

from onnx_qtypes.reference_ops import ReferenceEvaluator, fixed_point  # noqa: E402


class Tally:
    """Per source (integer kernels, onnxruntime unoptimized, onnxruntime optimized): elements, one step off, more."""

    SOURCES = ("int", "ort", "fused")

    def __init__(self) -> None:
        self.cases = self.fallbacks = self.fused_errors = 0
        for source in self.SOURCES:
            setattr(self, f"{source}_cases", 0)
            setattr(self, f"{source}_elements", 0)
            setattr(self, f"{source}_one", 0)
            setattr(self, f"{source}_more", 0)

    def add(self, reference: np.ndarray, other: np.ndarray, source: str) -> None:
        diff = np.abs(reference.astype(np.int64) - other.astype(np.int64)) if reference.dtype.kind in "iu" else \
            (reference != other).astype(np.int64)
        setattr(self, f"{source}_elements", getattr(self, f"{source}_elements") + diff.size)
        setattr(self, f"{source}_one", getattr(self, f"{source}_one") + int((diff == 1).sum()))
        setattr(self, f"{source}_more", getattr(self, f"{source}_more") + int((diff > 1).sum()))


def measure(strategy, examples: int) -> Tally:
    tally = Tally()

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case: Case) -> None:
        definitional, integer, log = compare(case.model, case.feeds)
        if case.op == "MaxPool" and definitional[0].shape != case.shapes["y"]:
            return  # onnx.reference MaxPool shape bug (see tests/test_reference_kernels.py)
        tally.cases += 1
        tally.fallbacks += sum(1 for why in log.values() if why != "integer")
        for a, b in zip(definitional, integer):
            tally.add(a, b, "int")
        if not case.ort:
            return
        lowered = lower_to_qdq(case.model, case.shapes)
        tally.ort_cases += 1
        for a, b in zip(definitional, run_onnxruntime(lowered, case.feeds, optimize=False)):
            tally.add(a, b, "ort")
        if activations_per_tensor(case.model):  # onnxruntime fuses into QLinear* kernels only then
            try:
                fused = run_onnxruntime(lowered, case.feeds, optimize=True)
            except Exception:  # noqa: BLE001 (a fused kernel that refuses its parameters: counted, not raised)
                tally.fused_errors += 1
                return
            tally.fused_cases += 1
            for a, b in zip(definitional, fused):
                tally.add(a, b, "fused")

    collect()
    return tally


def _rate(count: int, total: int) -> str:
    return "-" if total == 0 else f"{count / total:.2e}" if count else "0"


def part1(examples: int) -> None:
    print(f"Part 1: single-op cases ({examples} random cases per operator)")
    header = (f"{'operator':<28} {'cases':>5} {'elements':>9} {'int ±1':>9} {'int >1':>7} {'ort ±1':>9} {'ort >1':>7} "
              f"{'fused':>6} {'fused ±1':>9} {'fused >1':>8} {'errors':>6}")
    print(header)
    print("-" * len(header))
    total = Tally()

    def row(name: str, t: Tally) -> str:
        return (f"{name:<28} {t.cases:>5} {t.int_elements:>9} {_rate(t.int_one, t.int_elements):>9} {t.int_more:>7} "
                f"{_rate(t.ort_one, t.ort_elements):>9} {t.ort_more:>7} {t.fused_cases:>6} "
                f"{_rate(t.fused_one, t.fused_elements):>9} {t.fused_more:>8} {t.fused_errors:>6}")

    for name, strategy in [*sorted(CASES.items()), *REQUANTIZE_CASES.items()]:
        t = measure(strategy, examples)
        for field in vars(total):
            setattr(total, field, getattr(total, field) + getattr(t, field))
        print(row(name, t))
    print("-" * len(header))
    print(row("all", total))
    print(f"integer kernels fell back to the definition in {total.fallbacks} case(s)")
    print("int: our integer kernels; ort: the lowered QDQ model on onnxruntime's unoptimized path (the definition path,\n"
          "run in float32); fused: the same with default optimizations where every activation is per-tensor, so that\n"
          "onnxruntime fuses Q/DQ pairs into QLinear* kernels ('errors': sessions that failed at run time). Fused results\n"
          "are onnxruntime's own arithmetic (proposal/spec/semantics.md §9, proposal/status.md).")


def part2(samples: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    acc = rng.integers(-(2**24), 2**24, samples)
    print(f"\nPart 2: requantizing {samples} random accumulators in [-2^24, 2^24)")
    print(f"{'multipliers':<34} {'half_even':>10} {'half_up':>10} {'gemmlowp':>10}   (share differing from the definition)")
    for label, reals in (
        ("arbitrary (2^-16 .. 1)", np.float32(2.0 ** rng.uniform(-16, 0, samples)).astype(np.float64)),
        ("powers of two (2^-12 .. 2^-1)", 2.0 ** rng.integers(-12, 0, samples).astype(np.float64)),
    ):
        definition = np.rint(acc * reals)  # float64: exact here (24-bit multiplier x 25-bit accumulator)
        multiplier, shift = fixed_point.quantize_multipliers(reals)
        rates = []
        for rounding in ("half_even", "half_up", "gemmlowp"):
            got = fixed_point.multiply_by_quantized_multiplier(acc, multiplier, shift, rounding)
            rates.append(_rate(int((got != definition).sum()), samples))
        print(f"{label:<34} {rates[0]:>10} {rates[1]:>10} {rates[2]:>10}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200, help="random cases per operator (default 200)")
    parser.add_argument("--samples", type=int, default=1_000_000, help="accumulators in part 2 (default 1e6)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import onnx
    import onnxruntime

    print(f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}, evaluator {ReferenceEvaluator.__module__}")
    part1(args.examples)
    part2(args.samples)


if __name__ == "__main__":
    main()
