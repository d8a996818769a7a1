"""Small helpers the rules share: summarizing many problems, walking statistics."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import numpy as np

from onnx_qtypes.checker.context import ConstantRef, Context, Declared
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.profile import RoleConstraints
from onnx_qtypes.proto.statistics import Statistics

T = TypeVar("T")


def _more(text: str, more: int, noun: str) -> str:
    return text + f" ({more} more {noun} of this type break the same rule)" if more else text


def summarize_flagged(flagged: np.ndarray, values: Sequence[T], decide: Callable[[int, T], str | None],
                      noun: str) -> tuple[int, str] | None:
    """The first value of one type that breaks a rule and how many more do: one finding per type, not one per
    scale (a per-channel type with 512 bad scales is one thing to fix).

    ``flagged`` marks, per value, whether it breaks the rule: the helper's test in vector form, exact (not a
    screen). ``decide(i, values[i])`` is the helper's text for a value (None: no problem). The first flagged
    value the helper confirms gives the text; the flags after it give the count. A type of ten million scales
    costs a few vector operations and one call, where a call per value cost seconds.
    """
    indices = np.flatnonzero(flagged)
    for k in range(len(indices)):  # the first, unless the helper disagrees
        index = int(indices[k])
        text = decide(index, values[index])
        if text is not None:
            return index, _more(text, len(indices) - k - 1, noun)
    return None


def flagged_constant(ctx: Context, scope: str, name: str, const: ConstantRef, values: np.ndarray,
                     bad: np.ndarray, problem: Callable[[int, object, int], str]) -> Finding | None:
    """One finding at quantized constant ``name`` when ``bad`` marks any of its flattened stored ``values``:
    ``problem(count, first bad value, its flat index)`` says what is wrong; the type's declaration is related."""
    flagged = np.flatnonzero(bad)
    if not flagged.size:
        return None
    first = int(flagged[0])
    return Finding(const.location(), problem(int(flagged.size), values[first], first),
                   related=(ctx.type_location(scope, name),))


def statistics_entries(decl: Declared) -> Iterator[tuple[Statistics, tuple[object, ...], str]]:
    """(statistics, field path below the type, label) for the whole tensor and each slice."""
    stats = decl.statistics
    if stats is None:
        return
    if stats.tensor is not None:
        yield stats.tensor, ("statistics", "tensor"), "tensor statistics"
    for i, entry in enumerate(stats.per_axis):
        yield entry, ("statistics", "per_axis", i), f"statistics of slice {i} along axis {stats.axis}"


def not_pow2(scales: Sequence[float]) -> np.ndarray:
    """Per scale, whether it is not exactly 2^k (is_pow2's test, on every scale at once)."""
    values = np.asarray(scales, np.float64)
    with np.errstate(invalid="ignore"):
        return ~(np.isfinite(values) & (values > 0)) | (np.frexp(values)[0] != 0.5)  # 2^k: the mantissa is 1/2


def fmt(value: float) -> str:
    return f"{value:.6g}"


def constrained(ctx: Context) -> Iterator[tuple[Declared, str, RoleConstraints]]:
    """Quantized declarations whose role (activation / weight / bias) the profile constrains."""
    if not ctx.profile.roles:
        return
    for decl in ctx.quantized_declarations():
        role = ctx.role(decl.scope, decl.name)
        constraints = ctx.profile.role(role)
        if constraints is not None:
            yield decl, role, constraints


def profile_label(ctx: Context, role: str) -> str:
    plural = {"activation": "activations", "weight": "weights", "bias": "biases"}.get(role, role)
    return f"profile {ctx.profile.name!r} ({plural})"
