"""Judging a backend's outputs against a case's expected outputs.

Storage-integer outputs are compared in storage steps (|a - b| as
integers). Float outputs are compared in steps of the output's quantization
step when the case knows it (case.json ``steps``: {output: step}, else the
scale of the per-tensor quantized input a DequantizeLinear output comes
from), and must be exactly equal otherwise (NaN equals NaN). A missing
output, or a shape or dtype mismatch, fails the case with its reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from .execution_cases import ExecutionCase, widen

PASS, FAIL, UNSUPPORTED, ERROR = "pass", "fail", "unsupported", "error"
OUTCOMES = (PASS, FAIL, UNSUPPORTED, ERROR)


@dataclasses.dataclass
class OutputVerdict:
    name: str
    ok: bool
    max_steps: float | None = None  # None: not measurable (shape / dtype mismatch, or exact float compare)
    elements: int = 0  # elements beyond the tolerance
    total: int = 0
    reason: str = ""


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
    from onnx_qtypes.proto.qtype import parameter_shape

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


def judge_output(name: str, expected: np.ndarray, actual: object, tolerance: float, step: object = None) -> OutputVerdict:
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
    if expected.dtype.kind not in "iub":
        step = step_array(step, expected.shape)
    if expected.dtype.kind in "iub":
        diff = np.abs(actual.astype(np.int64) - expected.astype(np.int64)).astype(np.float64)
        unit = "step"
    elif step is not None:
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        both_nan = np.isnan(a) & np.isnan(e)
        diff = np.where(both_nan, 0.0, np.abs(a - e) / step)
        diff = np.where(np.isnan(diff), np.inf, diff)
        unit = "step"
    else:
        a, e = actual, expected
        same = (a == e) | (np.isnan(a.astype(np.float64)) & np.isnan(e.astype(np.float64)))
        bad = int(np.count_nonzero(~same))
        if bad:
            where = np.unravel_index(int(np.argmax(~same)), expected.shape)
            return OutputVerdict(name, False, None, bad, total,
                                 f"output {name!r}: {bad} of {total} element(s) differ (exact comparison, no step known); "
                                 f"first at {list(map(int, where))}: {a[where]!r}, expected {e[where]!r}")
        return OutputVerdict(name, True, 0.0, 0, total)
    worst = float(np.max(diff))
    beyond = diff > tolerance + 1e-9 * (unit == "step" and expected.dtype.kind == "f")
    bad = int(np.count_nonzero(beyond))
    if bad:
        where = np.unravel_index(int(np.argmax(diff)), expected.shape)
        return OutputVerdict(name, False, worst, bad, total,
                             f"output {name!r}: {bad} of {total} element(s) beyond {_num(tolerance)} step(s), "
                             f"at most {_num(worst)} step(s); at {list(map(int, where))}: "
                             f"{actual[where]!r}, expected {expected[where]!r}")
    return OutputVerdict(name, True, worst, 0, total)


def judge(case: ExecutionCase, expected: Mapping[str, np.ndarray], actual: Mapping[str, object]) -> list[OutputVerdict]:
    steps = float_steps(case) if any(np.asarray(v).dtype.kind == "f" for v in expected.values()) else {}
    verdicts = []
    for name in case.outputs:
        if name not in actual:
            verdicts.append(OutputVerdict(name, False, reason=f"output {name!r} missing from the backend's results"))
            continue
        verdicts.append(judge_output(name, expected[name], actual[name], case.tolerance.get(name, 0), steps.get(name)))
    return verdicts


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"
