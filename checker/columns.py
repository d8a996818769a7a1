"""Every scale and zero point of the model in flat arrays, for rules that screen them all at once.

Type rules call the validity helpers of proto/qtype.py for their messages;
on a model with thousands of per-channel types, calling a helper per scale
costs more than the whole of onnx.checker. The rules screen these arrays
with one vector operation and call the helper only for the declarations it
flags, so the helper still decides every finding.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from onnx_qtypes.checker.context import Context, Declared


@dataclasses.dataclass(frozen=True)
class Columns:
    decls: list[Declared]  # the unique quantized declarations, in model order
    scales: np.ndarray  # float64, every scale of every declaration
    scale_owner: np.ndarray  # index into decls, per scale
    zero_points: np.ndarray  # int64, every zero point of the types (absent ones read as 0, as they mean)
    zero_point_owner: np.ndarray

    def owners(self, mask: np.ndarray, of_zero_points: bool = False) -> list[Declared]:
        """The declarations owning at least one flagged element, in model order."""
        owner = self.zero_point_owner if of_zero_points else self.scale_owner
        return [self.decls[i] for i in np.unique(owner[mask])]

    def per_scale(self, values: list, dtype: type) -> np.ndarray:
        """A per-declaration value broadcast to every scale."""
        return np.asarray(values, dtype=dtype)[self.scale_owner]

    def per_zero_point(self, values: list, dtype: type) -> np.ndarray:
        """A per-declaration value broadcast to every zero point."""
        return np.asarray(values, dtype=dtype)[self.zero_point_owner]


def columns(ctx: Context) -> Columns:
    return ctx.memo("columns", lambda: _build(ctx))


def _build(ctx: Context) -> Columns:
    decls = list(ctx.quantized_declarations())
    scale_counts = [len(d.qtype.scale) for d in decls]
    zp_counts = [len(d.qtype.zero_point) for d in decls]
    scales = np.fromiter(itertools.chain.from_iterable(d.qtype.scale for d in decls), np.float64, sum(scale_counts))
    zero_points = np.fromiter(itertools.chain.from_iterable(d.qtype.zero_point for d in decls), np.int64,
                              sum(zp_counts))
    index = np.arange(len(decls))
    return Columns(decls, scales, np.repeat(index, scale_counts), zero_points, np.repeat(index, zp_counts))
