"""The data-movement operators, listed once.

A data-movement operator's every output element is one of its input elements, or the maximum / minimum of some:
it moves stored values without computing new ones. On quantized tensors with equal parameters it is exact on
the storage integers (dequantization is strictly increasing, so it commutes with max and min), and its output
keeps the input's type (proposal/spec/semantics.md#data-movement). The checker's QT401, interop's pass-through
of QOperator models and the spec all cite this table.

``DATA_MOVEMENT`` maps op type -> (input positions, output positions) whose tensors share one type
(``None``: every position).
"""

from __future__ import annotations

_DATA = ((0,), (0,))

DATA_MOVEMENT: dict[str, tuple[tuple[int, ...] | None, tuple[int, ...] | None]] = {
    "Identity": _DATA,
    "Reshape": _DATA,
    "Flatten": _DATA,
    "Squeeze": _DATA,
    "Unsqueeze": _DATA,
    "Transpose": _DATA,
    "Slice": _DATA,
    "Expand": _DATA,
    "Tile": _DATA,
    "DepthToSpace": _DATA,
    "SpaceToDepth": _DATA,
    "Gather": _DATA,
    "GatherElements": _DATA,
    "GatherND": _DATA,
    "MaxPool": _DATA,  # output 1 (indices) is int64, not quantized
    "GlobalMaxPool": _DATA,
    "ReduceMax": _DATA,
    "ReduceMin": _DATA,
    "Resize": _DATA,  # mode "nearest" only: see moves_data
    "Pad": ((0, 2), (0,)),  # the constant value is a value of the same type
    "Split": ((0,), None),
    "Concat": (None, (0,)),
}


# the data-movement operators that pick the largest or smallest element: they read the stored order as the real order
ORDER_SELECTING = frozenset({"MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin"})


def moves_data(op_type: str, mode: object = b"nearest") -> bool:
    """True for a data-movement operator; Resize only in mode "nearest" (interpolation computes new values)."""
    if op_type not in DATA_MOVEMENT:
        return False
    return op_type != "Resize" or mode in (b"nearest", "nearest")
