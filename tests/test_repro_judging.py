"""A repro bundle's standalone repro.py judges exactly as the suite's judge_output does.

repro.py cannot import the suite (a vendor runs it with numpy and the runtime only), so it carries the suite's
judging functions by source. Here a real bundle's repro.py is executed as written, and its ``steps_off`` and
judge_output judge the same outputs of real suite cases: what the reference and onnxruntime's unoptimized session
return, the expected values themselves, and elements moved to exactly the tolerance and one step beyond it, NaN and
infinities, sub-byte arrays as onnx hands them out, and wrong shapes and types. Every verdict must agree: whether the
output passes, how many elements are beyond tolerance, and the largest distance in steps.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from builders import ROOT
from onnx_qtypes.conformance import OnnxRuntimeBackend, ReferenceBackend, load_cases
from onnx_qtypes.conformance.judging import FLOAT_GRIDS, float_steps, judge_output, step_array
from onnx_qtypes.conformance.repro import save_bundle
from onnx_qtypes.conformance.runner import run_case

CASES = ROOT / "conformance_tests" / "cases"
# one case for each way an output is judged (output type, step, tolerance class, mode)
CASE_IDS = [
    "add-int4-float16-per-tensor",  # sub-byte storage, exact
    "quantize_linear-near-ties-int8-float16",  # near-tie samples, one step
    "quantize-linear-nan-inf-int8-float32",  # NaN / inf into integer storage
    "add-nan-inf-uint8-float16",
    "matmul-add-int8-float16-per-axis",  # two steps (a chain of two)
    "quantize_linear-nan-inf-float8e4m3fn-float32",  # float8 grid positions, NaN kept
    "add-float8e5m2-float16-per-tensor",  # grid, one position
    "quantize_linear-float4e2m1-float32-per-tensor",
    "dequantize_linear-int16-float16-per-tensor",  # a float output in steps of one scale
    "dequantize_linear-int16-float16-blocked",  # steps varying over the output (steps.npz)
    "dequantize_linear-uint8-bfloat16-per-axis",  # bfloat16 (dtype kind "V")
    "dynamic-symmetric_with_unsigned-uint8-bfloat16",
    "dequantize_linear-negative-scale-int16-float16-per-axis",  # a float output compared exactly (no step)
    "dynamic-quantize-linear-all-zero",  # "positive-finite" scale
]


def _script_judge(case, tmp_path: Path):
    """The bundle's repro.py, run as written (it reruns the reference on the case): its namespace."""
    result = run_case(ReferenceBackend(), case)
    bundle = save_bundle(tmp_path, result, case, ReferenceBackend(), "reference")
    path = bundle / "repro.py"
    namespace = {"__file__": str(path), "__name__": "repro"}
    with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit):
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102 (the bundle we wrote)
    return namespace


def _moved(want: np.ndarray, steps: float, step: object) -> np.ndarray:
    """``want`` with every other element moved ``steps`` steps up (down where up leaves the type)."""
    out = want.copy()
    flat = out.reshape(-1)
    pick = np.arange(flat.size) % 2 == 0
    if want.dtype.kind in "iu":
        info = np.iinfo(want.dtype)
        wide = flat.astype(np.int64)
        up = wide + int(steps)
        flat[pick] = np.where(up <= info.max, up, wide - int(steps))[pick].astype(want.dtype)
    elif want.dtype.name in FLOAT_GRIDS:
        bits = FLOAT_GRIDS[want.dtype.name][0]
        codes = flat.view(np.uint8).astype(np.int64)
        magnitude = codes & ((1 << (bits - 1)) - 1)
        room = magnitude + int(steps) < (1 << (bits - 1)) - 2  # stay below the top codes (inf / NaN)
        moved = np.where(room, codes + int(steps), codes - int(steps))
        flat.view(np.uint8)[pick] = moved[pick].astype(np.uint8)
    else:
        unit = np.broadcast_to(np.asarray(step if step is not None else 0.0, np.float64), want.shape).reshape(-1)
        if step is None:  # no step: the next representable value
            flat[pick] = np.nextafter(flat, np.asarray(np.inf, flat.dtype))[pick]
        else:
            flat[pick] = (flat.astype(np.float64) + steps * unit).astype(want.dtype)[pick]
    return out


def _variants(want: np.ndarray, tolerance: float, step: object, real: list[np.ndarray]) -> list[np.ndarray]:
    out = [*real, want.copy()]
    for steps in {tolerance, tolerance + 1, 1}:
        out.append(_moved(want, steps, step))
    if want.size >= 3:
        specials = want.astype(np.float64).reshape(-1).copy()
        specials[:3] = [np.nan, np.inf, -np.inf]
        if want.dtype.kind in "iu":  # no NaN in integer storage: the extremes instead
            info = np.iinfo(want.dtype)
            specials[:3] = [info.min, info.max, info.min]
        out.append(specials.astype(want.dtype).reshape(want.shape))
    out.append(want.reshape(-1)[:-1] if want.size else want.reshape(1, 0))  # shape mismatch
    out.append(want.astype(np.float32 if want.dtype != np.float32 else np.float64))  # type mismatch
    if want.dtype == np.int8 and want.size and want.min() >= -8 and want.max() <= 7:
        out.append(want.astype(ml_dtypes.int4))  # as onnx's numpy_helper hands int4 out
    return out


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_repro_script_and_judge_output_agree_element_wise(case_id, tmp_path):
    case = load_cases(CASES, case_id)[0]
    script = _script_judge(case, tmp_path)
    steps = float_steps(case)
    reference = run_case(ReferenceBackend(), case).actual or {}
    runtime = run_case(OnnxRuntimeBackend(optimize=False), case).actual or {}
    checked = 0
    for name, want in case.expected().items():
        want = np.asarray(want)
        bundled = script["expected"][name]
        assert bundled.dtype == want.dtype and np.array_equal(bundled, want, equal_nan=True)  # the .npz round trip
        tolerance = case.tolerance.get(name, 0)
        mode = getattr(case, "judge", {}).get(name, "value")
        step = steps.get(name)
        real = [np.asarray(r[name]) for r in (reference, runtime) if name in r]
        wants = [want]
        if want.dtype.kind == "f" and want.size >= 2:  # an expected infinity met by the same infinity
            wants.append(want.copy())
            wants[-1].reshape(-1)[:2] = [np.inf, -np.inf]
        for expected in wants:
            unit = step_array(step, expected.shape) if want.dtype.kind not in "iu" else None
            for actual in _variants(expected, tolerance, unit, real):
                verdict = judge_output(name, expected, actual, tolerance, step, mode)
                bad, worst, _ = script["steps_off"](name, expected, np.asarray(actual))
                about = f"{case_id} {name}: expected {expected.ravel()[:6]}, actual {np.asarray(actual).ravel()[:6]}"
                assert (bad == 0) == verdict.ok, about
                if "has shape" in verdict.reason or "has element type" in verdict.reason:
                    continue  # both fail; the script counts every element, the verdict none
                assert bad == verdict.elements, about
                if verdict.max_steps is not None:
                    assert worst == verdict.max_steps, about
                checked += 1
    assert checked >= 4  # the case really had outputs to judge
