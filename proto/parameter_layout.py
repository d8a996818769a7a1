"""How many parameters a per-axis or blocked type has, and in which shape, for a tensor of a given shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnx_qtypes.proto.qtype import QType


def block_count(dim: int, block_size: int) -> int:
    """Number of blocks along a dimension; the last block may be short."""
    return -(-dim // block_size)


def parameter_shape(qtype: QType, shape: Sequence[int | None]) -> tuple[int | None, ...] | None:
    """Expected shape of the scale/zero-point array for a tensor of ``shape``.

    () for per-tensor, (dim,) for per-axis, the tensor shape with the axis
    dimension divided into blocks for blocked; None when the axis is out of
    range. Unknown dimensions stay None.
    """
    if qtype.axis is None:
        return ()
    if not 0 <= qtype.axis < len(shape):
        return None
    dim = shape[qtype.axis]
    if qtype.block_size is None:
        return (dim,)
    blocks = None if dim is None else block_count(dim, qtype.block_size)
    return tuple(blocks if i == qtype.axis else d for i, d in enumerate(shape))
