"""How often the integer kernels (and onnxruntime) differ from the definition, measured.

Part 1 runs the random single-op cases of the property tests
(tests/reference_cases.py: random shapes, attributes, storage types,
granularities and parameters) through the definitional evaluator, the
integer evaluator and, lowered to QDQ, onnxruntime 1.31 (1 thread), and
prints per operator the share of output elements that differ by one
storage step and by more (the tests assert "more" never happens).

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
    def __init__(self) -> None:
        self.cases = self.elements = self.integer_one = self.integer_more = 0
        self.ort_cases = self.ort_elements = self.ort_one = self.ort_more = 0
        self.fallbacks = 0

    def add(self, reference: np.ndarray, other: np.ndarray, runtime: bool) -> None:
        diff = np.abs(reference.astype(np.int64) - other.astype(np.int64)) if reference.dtype.kind in "iu" else \
            (reference != other).astype(np.int64)
        if runtime:
            self.ort_elements += diff.size
            self.ort_one += int((diff == 1).sum())
            self.ort_more += int((diff > 1).sum())
        else:
            self.elements += diff.size
            self.integer_one += int((diff == 1).sum())
            self.integer_more += int((diff > 1).sum())


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
            tally.add(a, b, runtime=False)
        if case.ort:
            lowered = lower_to_qdq(case.model, case.shapes)
            optimize = activations_per_tensor(case.model)
            runtime = run_onnxruntime(lowered, case.feeds, optimize=optimize)
            tally.ort_cases += 1
            for a, b in zip(definitional, runtime):
                tally.add(a, b, runtime=True)

    collect()
    return tally


def _rate(count: int, total: int) -> str:
    return "-" if total == 0 else f"{count / total:.2e}" if count else "0"


def part1(examples: int) -> None:
    print(f"Part 1: single-op cases ({examples} random cases per operator)")
    header = f"{'operator':<28} {'cases':>5} {'elements':>9} {'int ±1':>9} {'int >1':>7} {'ort cases':>9} {'ort ±1':>9} {'ort >1':>7}"
    print(header)
    print("-" * len(header))
    total = Tally()
    for name, strategy in [*sorted(CASES.items()), *REQUANTIZE_CASES.items()]:
        t = measure(strategy, examples)
        for field in vars(total):
            setattr(total, field, getattr(total, field) + getattr(t, field))
        print(f"{name:<28} {t.cases:>5} {t.elements:>9} {_rate(t.integer_one, t.elements):>9} {t.integer_more:>7} "
              f"{t.ort_cases:>9} {_rate(t.ort_one, t.ort_elements):>9} {t.ort_more:>7}")
    print("-" * len(header))
    print(f"{'all':<28} {total.cases:>5} {total.elements:>9} {_rate(total.integer_one, total.elements):>9} "
          f"{total.integer_more:>7} {total.ort_cases:>9} {_rate(total.ort_one, total.ort_elements):>9} {total.ort_more:>7}")
    print(f"integer kernels fell back to the definition in {total.fallbacks} case(s)")
    print("ort: the lowered QDQ model, fused by onnxruntime into QLinear* kernels when every activation is per-tensor.\n"
          "'ort >1' counts come from divergences of onnxruntime's fused kernels listed in proposal/spec/semantics.md §9\n"
          "(QLinearAveragePool with ceil_mode and count_include_pad, QLinearSoftmax overflow, QGemm bias parameters),\n"
          "each shown by a test in tests/test_reference_onnxruntime.py.")


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
