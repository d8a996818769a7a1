"""Judging a backend's outputs against a case's expected outputs.

Storage-integer outputs are compared in storage steps (|a - b| as
integers). Float8 and float4 storage outputs (ml_dtypes arrays) are compared
in positions on their grid: the ordinal distance between the two codes, the
codes ordered as the values they stand for, +0 and -0 one position apart
(semantics.md#steps; ``grid_position``); NaN equals NaN and is infinitely far from
anything else. Float outputs are compared in steps of the output's
quantization step when the case knows it (case.json ``steps``: {output:
step}, else the scale of the quantized input a DequantizeLinear output comes
from), and must be exactly equal otherwise (NaN equals NaN; equal values,
infinities included, are 0 steps apart either way). An output that
case.json ``judge`` marks "positive-finite" is judged by that alone (any
positive finite value of the expected shape and type: a parameter the
definition leaves open, semantics.md#all-zero). A missing output, or a shape or dtype
mismatch, fails the case with its reason. Each verdict keeps its worst
elements (index, expected, actual, steps), at most ``WORST`` of them.
"""

from __future__ import annotations

import math

import dataclasses
from collections.abc import Mapping

import ml_dtypes
import numpy as np

from .execution_cases import ExecutionCase, widen

PASS, FAIL, UNSUPPORTED, ERROR = "pass", "fail", "unsupported", "error"
OUTCOMES = (PASS, FAIL, UNSUPPORTED, ERROR)
WORST = 10  # deviating elements a verdict keeps, worst first

# ml_dtypes' float storage types: bits per code, and whether the code with only the sign bit set is -0 (else NaN)
FLOAT_GRIDS = {"float8_e4m3fn": (8, True), "float8_e4m3fnuz": (8, False), "float8_e5m2": (8, True),
               "float8_e5m2fnuz": (8, False), "float4_e2m1fn": (4, True)}


def is_float(dtype: np.dtype) -> bool:
    """A float output judged in steps of its quantization step: numpy's floats and ml_dtypes' bfloat16 (whose
    dtype kind is 'V', not 'f'); float8 / float4 storage is judged on its grid instead."""
    return dtype.kind == "f" or dtype == ml_dtypes.bfloat16


@dataclasses.dataclass
class OutputVerdict:
    name: str
    ok: bool
    max_steps: float | None = None  # None: not measurable (shape / dtype mismatch, or exact float compare)
    elements: int = 0  # elements beyond the tolerance
    total: int = 0
    reason: str = ""
    worst: list = dataclasses.field(default_factory=list)  # [{"index", "expected", "actual", "steps"}], worst first


def steps_text(steps: float) -> str:
    """A distance in steps as a reader compares it: whole from 100 on (and any whole number), any other to 3
    significant digits; inf and nan as such."""
    value = float(steps)
    if not math.isfinite(value):
        return f"{value:.3g}"
    return str(round(value)) if value.is_integer() or abs(value) >= 100 else f"{value:.3g}"


def float_steps(case: ExecutionCase) -> dict[str, object]:
    """The quantization step of each float output, where the case knows it: a number, or for a DequantizeLinear of a
    per-axis or blocked type its ``QType`` (``step_array`` spreads its scales over the output)."""
    steps = case.metadata.get("steps") if isinstance(case.metadata.get("steps"), dict) else {}
    out: dict[str, object] = {n: float(s) for n, s in steps.items() if isinstance(s, (int, float)) and s > 0}
    missing = [n for n in case.outputs if n not in out]
    if not missing:
        return out
    try:
        from onnx_qtypes.proto import load, quantized_tensors

        model = load(str(case.model_path))
        qtypes = quantized_tensors(model)
        for node in model.graph.node:
            if node.op_type == "DequantizeLinear" and node.output and node.output[0] in missing:
                qt = qtypes.get(node.input[0])
                if qt is None or qt.is_dynamic:
                    continue
                value = np.asarray(qt.scale, dtype=np.float64).ravel()
                if qt.axis is None and value.size == 1 and value[0] > 0:
                    out[node.output[0]] = float(value[0])
                elif qt.axis is not None and value.size and (value > 0).all():
                    out[node.output[0]] = qt
    except Exception:  # the step is a refinement: without it floats compare exactly
        pass
    return out


def step_array(step: object, shape: tuple[int, ...]) -> np.ndarray | float | None:
    """A number as is; a per-axis or blocked QType's scales broadcast to ``shape`` (None if they do not fit)."""
    if step is None or isinstance(step, (int, float)):
        return step
    from onnx_qtypes.proto.parameter_layout import parameter_shape

    qt = step
    if not 0 <= qt.axis < len(shape):
        return None
    scales = np.asarray(qt.scale, np.float64)
    try:
        if qt.block_size is None:
            view = [1] * len(shape)
            view[qt.axis] = shape[qt.axis]
            return scales.reshape(view)
        blocked = scales.reshape(parameter_shape(qt, shape))
        return np.repeat(blocked, qt.block_size, axis=qt.axis).take(range(shape[qt.axis]), axis=qt.axis)
    except (ValueError, TypeError):
        return None


def grid_position(values: np.ndarray) -> np.ndarray:
    """Each float8 / float4 code's position on its type's number line (int64): the codes ordered by value,
    adjacent representable values one position apart, -0 one position below +0 (types without -0 have none).
    Infinities sit one position beyond the largest finite value; NaN codes get meaningless positions (judged
    apart)."""
    bits, negative_zero = FLOAT_GRIDS[values.dtype.name]
    codes = np.asarray(values).view(np.uint8).astype(np.int64) & ((1 << bits) - 1)
    sign, magnitude = codes >> (bits - 1), codes & ((1 << (bits - 1)) - 1)
    return np.where(sign == 0, magnitude, -magnitude - (1 if negative_zero else 0))


# element_steps, beyond_tolerance and not_positive_finite (with grid_position and FLOAT_GRIDS) are numpy only: repro.py
# copies their source into each standalone repro script, so a bundle judges with this very code, not a copy of it.


def element_steps(expected: np.ndarray, actual: np.ndarray, step: object) -> np.ndarray:
    """Each element's distance from the expected one in steps (float64, the output's shape): storage integers as
    integer differences; float8 / float4 as positions on their grid; other floats in ``step`` (a number, or an array
    broadcast over the output) and, with no step, 0 where equal and inf elsewhere. Equal values (infinities
    included) and NaN against NaN are 0 steps apart; NaN against a number, or a distance that is not a number, inf."""
    if expected.dtype.kind in "iub":
        return np.abs(actual.astype(np.int64) - expected.astype(np.int64)).astype(np.float64)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if expected.dtype.name in FLOAT_GRIDS:
        diff = np.abs(grid_position(actual) - grid_position(expected)).astype(np.float64)
        return np.where(nan_a & nan_e, 0.0, np.where(nan_a | nan_e, np.inf, diff))
    same = (a == e) | (nan_a & nan_e)
    with np.errstate(invalid="ignore"):  # inf - inf, or an inf step: not a number, judged inf below
        diff = np.where(same, 0.0, np.inf if step is None else np.abs(a - e) / step)
    return np.where(np.isnan(diff), np.inf, diff)


def in_scale_steps(expected: np.ndarray) -> bool:
    """Whether an output is judged in scale steps (a float output of a wide float type), not in whole integers
    or positions on a narrow float type's grid."""
    return expected.dtype.kind not in "iub" and expected.dtype.name not in FLOAT_GRIDS


def beyond_tolerance(diff: np.ndarray, tolerance: float, expected: np.ndarray) -> np.ndarray:
    """Which elements are more than ``tolerance`` steps off; a float output's distance in (scale) steps is a
    quotient of floats, so it gets 1e-9 of slack; integer and grid distances are whole numbers."""
    return diff > tolerance + (1e-9 if in_scale_steps(expected) else 0.0)


def not_positive_finite(actual: np.ndarray) -> np.ndarray:
    """Which elements fail a "positive-finite" output (a parameter the definition leaves open)."""
    values = actual.astype(np.float64)
    return ~(np.isfinite(values) & (values > 0))


def judge_output(name: str, expected: np.ndarray, actual: object, tolerance: float, step: object = None,
                 mode: str = "value") -> OutputVerdict:
    expected = widen(np.asarray(expected))
    try:
        actual = widen(np.asarray(actual))
    except Exception as exc:
        return OutputVerdict(name, False, reason=f"output {name!r} is not an array ({type(exc).__name__})")
    total = int(expected.size)
    if actual.shape != expected.shape:
        return OutputVerdict(name, False, total=total,
                             reason=f"output {name!r} has shape {list(actual.shape)}, expected {list(expected.shape)}")
    if actual.dtype != expected.dtype:
        return OutputVerdict(name, False, total=total,
                             reason=f"output {name!r} has element type {actual.dtype}, expected {expected.dtype}")
    if total == 0:
        return OutputVerdict(name, True, 0, 0, 0)
    if mode == "positive-finite":
        return _positive_finite(name, actual)
    if in_scale_steps(expected):
        step = step_array(step, expected.shape)
        if step is None:  # exact comparison: no distance in steps to report
            same = element_steps(expected, actual, None) == 0
            bad = int(np.count_nonzero(~same))
            if bad:
                where = np.unravel_index(int(np.argmax(~same)), expected.shape)
                worst = _worst(np.where(same, 0.0, np.inf), expected, actual, exact=True)
                return OutputVerdict(name, False, None, bad, total,
                                     f"output {name!r}: {bad} of {total} element(s) differ (exact comparison, no "
                                     f"step known); first at {list(map(int, where))}: {_value(actual[where])}, "
                                     f"expected {_value(expected[where])}",
                                     worst)
            return OutputVerdict(name, True, 0.0, 0, total)
    diff = element_steps(expected, actual, step)
    worst = float(np.max(diff))
    beyond = beyond_tolerance(diff, tolerance, expected)
    bad = int(np.count_nonzero(beyond))
    if bad:
        where = np.unravel_index(int(np.argmax(diff)), expected.shape)
        return OutputVerdict(name, False, worst, bad, total,
                             f"output {name!r}: {bad} of {total} element(s) beyond {steps_text(tolerance)} step(s), "
                             f"at most {steps_text(worst)} step(s); at {list(map(int, where))}: "
                             f"{_value(actual[where])}, expected {_value(expected[where])}",
                             _worst(np.where(beyond, diff, 0.0), expected, actual))
    return OutputVerdict(name, True, worst, 0, total)


def _positive_finite(name: str, actual: np.ndarray) -> OutputVerdict:
    bad = not_positive_finite(actual)
    count = int(np.count_nonzero(bad))
    if not count:
        return OutputVerdict(name, True, 0.0, 0, int(actual.size))
    where = np.unravel_index(int(np.argmax(bad)), actual.shape)
    return OutputVerdict(name, False, None, count, int(actual.size),
                         f"output {name!r}: {count} element(s) not a positive finite value (any is allowed here); "
                         f"at {list(map(int, where))}: {_value(actual[where])}")


def _worst(diff: np.ndarray, expected: np.ndarray, actual: np.ndarray, exact: bool = False) -> list[dict]:
    """The WORST elements with the largest deviation above 0, as JSON-ready records."""
    flat = diff.ravel()
    order = np.argsort(-flat, kind="stable")[:WORST]
    out = []
    for k in order:
        if not flat[k] > 0:
            break
        index = np.unravel_index(int(k), expected.shape)
        out.append({"index": [int(i) for i in index], "expected": _value(expected[index]),
                    "actual": _value(actual[index]), "steps": None if exact else _value(flat[k])})
    return out


def _value(value: object) -> float | int | str | bool:
    """An element as JSON: integers as int, floats as float, NaN / inf as strings."""
    item = np.asarray(value)
    if item.dtype.kind in "iu":
        return int(item)
    if item.dtype.kind == "b":
        return bool(item)
    number = float(item.astype(np.float64))
    if number != number or number in (float("inf"), float("-inf")):
        return str(number)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def judge(case: ExecutionCase, expected: Mapping[str, np.ndarray], actual: Mapping[str, object]) -> list[OutputVerdict]:
    steps = float_steps(case) if any(is_float(np.asarray(v).dtype) for v in expected.values()) else {}
    verdicts = []
    for name in case.outputs:
        if name not in actual:
            verdicts.append(OutputVerdict(name, False, reason=f"output {name!r} missing from the backend's results"))
            continue
        verdicts.append(judge_output(name, expected[name], actual[name], case.tolerance.get(name, 0), steps.get(name),
                                     getattr(case, "judge", {}).get(name, "value")))
    return verdicts


