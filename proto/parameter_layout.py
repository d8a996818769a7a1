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


def single_block(shape: Sequence[int | None] | None, block_size: int | None) -> bool:
    """Whether ``shape`` is 1-D and one block of ``block_size`` covers it: its blocked scale is one element, which
    onnxruntime (1.32.0) reads as per-tensor and then refuses with a block_size, so writers make it per-tensor."""
    return (bool(block_size) and shape is not None and len(shape) == 1 and shape[0] is not None
            and shape[0] <= block_size)
