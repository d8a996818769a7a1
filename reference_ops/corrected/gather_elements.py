"""GatherElements as ONNX defines it: out[i][j][k] = data[indices[i][j][k]][j][k] (axis 0), indices of any
shape whose extent along every other axis fits the data's, negative indices counted from the end.

onnx.reference requires indices and data to agree on every other axis, and picks along the axis with
numpy.choose, which takes at most 64 choices: a gather over 512 positions (HuggingFace BERT's
`token_type_ids` buffer gathered by `position_ids`, torch.gather exported) fails, and the 2-D fallback reads
only the first index of each row. An index outside [-s, s - 1] is refused (onnx.reference wraps it around).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class GatherElements(Corrected):
    def _run(self, data: Any, indices: Any, axis: int | None = None, **_: Any) -> tuple:
        data, indices = np.asarray(data), np.asarray(indices)
        rank = data.ndim
        axis = 0 if axis is None else int(axis)
        if indices.ndim != rank or rank == 0:
            raise Refused(f"GatherElements takes indices of the data's rank {rank} (>= 1), got rank {indices.ndim}")
        if not -rank <= axis < rank:
            raise Refused(f"GatherElements axis {axis} is outside [-{rank}, {rank - 1}]")
        axis %= rank
        for a, (have, want) in enumerate(zip(data.shape, indices.shape)):
            if a != axis and want > have:
                raise Refused(f"GatherElements indices have {want} positions along axis {a}, where the data "
                              f"has {have}")
        size = data.shape[axis]
        index = indices.astype(np.int64)
        bad = (index < -size) | (index >= size)
        if np.any(bad):
            flat = int(np.flatnonzero(bad)[0])
            raise Refused(f"GatherElements index {int(index.reshape(-1)[flat])} at "
                          f"{[int(i) for i in np.unravel_index(flat, index.shape)]} is outside [-{size}, {size - 1}]")
        where = list(np.indices(index.shape, sparse=True))
        where[axis] = np.where(index < 0, index + size, index)
        return (data[tuple(where)],)
