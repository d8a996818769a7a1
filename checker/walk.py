"""Small helpers the rules share: summarizing many problems, walking statistics."""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, Declared
from onnx_qtypes.checker.profile import RoleConstraints
from onnx_qtypes.proto.qtype import Statistics


def summarize(problems: list[tuple[int, str]], noun: str) -> tuple[int, str]:
    """The first problem's index and text, with how many more there are.

    One finding per type, not one per scale: a per-channel type with 512 bad
    scales is one thing to fix.
    """
    index, text = problems[0]
    if len(problems) > 1:
        text += f" ({len(problems) - 1} more {noun} of this type break the same rule)"
    return index, text


def statistics_entries(decl: Declared) -> Iterator[tuple[Statistics, tuple[object, ...], str]]:
    """(statistics, field path below the type, label) for the whole tensor and each slice."""
    stats = decl.statistics
    if stats is None:
        return
    if stats.tensor is not None:
        yield stats.tensor, ("statistics", "tensor"), "tensor statistics"
    for i, entry in enumerate(stats.per_axis):
        yield entry, ("statistics", "per_axis", i), f"statistics of slice {i} along axis {stats.axis}"


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
