"""The experiments the RFC cites about stock onnx / onnxruntime run, and the facts it rests on hold.

What is asserted is what the proposal's argument needs: onnx.checker accepts
every malformed case (onnx's behaviour, pinned by the installed onnx; if a
future onnx refuses one, the RFC's motivation must be updated, so this fails
loudly), and our reference quantize is the exact result. What onnx.reference
and onnxruntime compute is reported by the scripts, never asserted here.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from builders import load_script

from onnx_qtypes import QType
from onnx_qtypes.reference_ops.quant import quantize

checker_cases = load_script("proposal/experiments/onnx_checker_accepts.py")
rounding = load_script("proposal/experiments/quantize_rounding_agreement.py")
float_zero_points = load_script("proposal/experiments/float_zero_points.py")
stock = checker_cases.st


@pytest.mark.parametrize("case", checker_cases.CASES, ids=lambda c: c.id)
def test_onnx_checker_accepts_malformed_case(case):
    verdict = stock.check(case.build())
    assert verdict == "accepts", (
        f"onnx.checker now refuses case {case.id} ({case.what}): {verdict}. "
        "proposal/0001-quantized-element-types.md (Motivation) says it accepts it: update the RFC."
    )


def test_checker_case_ids_are_unique_and_the_table_has_a_row_each(capsys):
    ids = [case.id for case in checker_cases.CASES]
    assert len(ids) == len(set(ids))
    assert checker_cases.main() == 0
    out = capsys.readouterr().out
    assert all(f"`{i}`" in out for i in ids)


def exact_quantize(x: np.ndarray, scale: float, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """clamp(round_half_to_even(x / scale) + zero_point) in rational arithmetic."""
    s = Fraction(scale)
    return np.array([min(hi, max(lo, round(Fraction(float(v)) / s) + zero_point)) for v in x], np.int64)


@pytest.mark.parametrize("x_type,scale_type,opset", rounding.PAIRS)
@pytest.mark.parametrize("storage", list(rounding.STORAGE))
def test_reference_quantize_is_exact_on_the_experiment_inputs(storage, x_type, scale_type, opset):
    scale = float(rounding.FLOATS[scale_type][0](rounding.SCALE))
    zero_point = rounding.STORAGE[storage][1]
    qtype = QType(storage, scale, zero_point)
    x = rounding.random_inputs(storage, x_type, scale, 3000, seed=1)
    expected = exact_quantize(x, scale, zero_point, qtype.storage_min, qtype.storage_max)
    np.testing.assert_array_equal(quantize(x, qtype).astype(np.int64), expected)


@pytest.mark.parametrize("storage", list(rounding.STORAGE))
def test_reference_quantize_is_exact_on_ties(storage):
    qtype = QType(storage, 0.5, rounding.STORAGE[storage][1])
    steps = np.arange(qtype.storage_min - qtype.zero_point[0] - 3, qtype.storage_max - qtype.zero_point[0] + 3)
    if steps.size > 4000:
        steps = steps[:: steps.size // 4000]
    x = ((steps + 0.5) * 0.5).astype(np.float32)  # x / scale = steps + 0.5 exactly
    expected = exact_quantize(x, 0.5, qtype.zero_point[0], qtype.storage_min, qtype.storage_max)
    np.testing.assert_array_equal(quantize(x, qtype).astype(np.int64), expected)


def test_rounding_experiment_runs_every_row_at_a_small_size(capsys):
    rows = rounding.measure_all(500)
    assert len(rows) == len(rounding.PAIRS) * len(rounding.STORAGE)
    assert all(row.exact.shape == (500,) and len(row.cells()) == 10 for row in rows)
    # semantics.md#quantize-precision: dividing x of the expressed type in that type misses near ties only
    for row in rows:
        if row.x_type == row.scale_type and not (row.scale_type == "float16" and row.storage.endswith("16")):
            assert row.beyond(row.reference) == row.beyond(row.onnxruntime) == "0", row.cells()
    assert rounding.main(["--n", "200"]) == 0
    assert "onnxruntime ≠ exact" in capsys.readouterr().out


def test_float_zero_point_experiment_runs(capsys):
    assert float_zero_points.main() == 0
    out = capsys.readouterr().out
    assert all(f"| {storage} |" in out for storage in float_zero_points.FLOAT_STORAGE)


def test_onnxruntime_kernel_probe_runs_every_part(capsys):
    kernels = load_script("proposal/experiments/ort_cpu_kernels.py")
    assert kernels.main() == 0
    out = capsys.readouterr().out
    assert all(f"\n{part}. " in out for part in range(1, 6))
    assert all(f"   {storage} (opset" in out for storage in kernels.FLOAT_STORAGE)


def test_listed_parameter_size_experiment_lists_a_double_per_scale(capsys):
    sizes = load_script("proposal/experiments/listed_parameter_size.py")
    assert sizes.main() == 0
    out = capsys.readouterr().out
    scales = sizes.K * sizes.N // sizes.BLOCK
    assert f"{scales:,} scales" in out
    listed = int(out.split("parameters listed:")[1].split("bytes")[0].replace(",", ""))
    assert listed >= 8 * scales  # every scale a double in the type


def test_nncf_negative_scale_count_has_a_row_per_weight_and_mode(capsys):
    counts = load_script("proposal/experiments/nncf_negative_scales.py")
    assert counts.main() == 0
    out = capsys.readouterr().out
    assert out.count("| handmade |") == 2 * 3


def test_interop_margin_experiment_runs_every_part(capsys):
    margins = load_script("proposal/experiments/interop_margins.py")
    assert margins.main() == 0
    out = capsys.readouterr().out
    assert all(f"\n{part}. " in out for part in (1, 2, 3))
    assert out.count("max |difference|") >= 3 + 2


def test_onnx_reference_gap_experiment_runs_every_part(capsys):
    gaps = load_script("proposal/experiments/onnx_reference_gaps.py")
    assert gaps.main() == 0
    out = capsys.readouterr().out
    assert all(f"\n{part}. " in out for part in range(1, 8))
