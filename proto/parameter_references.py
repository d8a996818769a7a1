"""Parameters by reference, read from the model: the initializers a type names for its scales / zero points."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.encoding import plain_data_type, tensor_array
from onnx_qtypes.proto.parameter_layout import block_count
from onnx_qtypes.proto.storage_types import data_type_name


def reference_dims(msg: pb.QuantizedType, shape: Sequence[int | None] | None) -> tuple[int | None, ...] | None:
    """The dims a parameter initializer of ``msg`` must have for a tensor of ``shape``; None when unknown."""
    if not msg.HasField("axis"):
        return ()
    if shape is None:
        return None
    if not msg.HasField("block_size"):
        return (shape[msg.axis],) if 0 <= msg.axis < len(shape) else None
    if not 0 <= msg.axis < len(shape) or msg.block_size <= 0:
        return None
    return tuple(
        (None if d is None else block_count(d, msg.block_size)) if i == msg.axis else d for i, d in enumerate(shape)
    )


def reference_values(
    msg: pb.QuantizedType, lookup: Callable[[str], Any], shape: Sequence[int | None] | None
) -> tuple[str | None, np.ndarray | None, np.ndarray | None]:
    """(problem, scales, zero points) of the parameters ``msg`` names by reference, read through ``lookup``
    (initializer name -> TensorProto or None); the arrays are flat, row-major, None for a parameter listed in
    the type. ``problem`` says why they cannot be read (the values are then None)."""
    wanted = reference_dims(msg, shape)
    arrays: dict[str, np.ndarray] = {}
    for field, listed, data_type, kind in (
        ("scale", msg.scale, msg.expressed_type, np.float64),
        ("zero_point", msg.zero_point, msg.storage_type, np.int64),
    ):
        if not msg.HasField(f"{field}_tensor"):
            continue
        name = getattr(msg, f"{field}_tensor")
        where = f"{field}_tensor {name!r}"
        if listed:
            return f"{where}: the type lists {field} values too; give one form, not both", None, None
        init = lookup(name)
        if init is None:
            return f"{where} names no initializer of the graph (parameters by reference live in initializers)", None, None
        if plain_data_type(init.data_type) != data_type:  # a zero point a boundary op reads is marked
            return (f"{where} holds {data_type_name(init.data_type)}, but {field}s of this type are "
                    f"{data_type_name(data_type)}"), None, None
        dims = tuple(init.dims)
        fits = dims in ((), (1,)) if wanted == () else (
            len(dims) == 1 if wanted is None and not msg.HasField("block_size") else
            wanted is None or (len(dims) == len(wanted) and all(w is None or w == d for w, d in zip(wanted, dims))))
        if not fits:
            shown = "[] or [1]" if wanted == () else "[" + ",".join("?" if w is None else str(w) for w in wanted) + "]" \
                if wanted is not None else "1-D"
            return f"{where} has dims {list(dims)}, but the parameter shape is {shown}", None, None
        try:
            values = tensor_array(init)
        except Exception as exc:  # noqa: BLE001 - onnx raises several types for data unlike its dims
            return f"{where}: its data does not decode ({' '.join(str(exc).split())[:120]})", None, None
        arrays[field] = np.asarray(values).astype(kind).reshape(-1)
    scales, zero_points = arrays.get("scale"), arrays.get("zero_point")
    count = scales.size if scales is not None else len(msg.scale)
    if zero_points is not None and zero_points.size != count:
        return (f"zero_point_tensor {msg.zero_point_tensor!r} holds {zero_points.size} zero points for {count} "
                "scales"), None, None
    return None, scales, zero_points


def listing(msg: pb.QuantizedType, scales: np.ndarray | None, zero_points: np.ndarray | None) -> pb.QuantizedType:
    """A copy of ``msg`` with referenced parameters listed (``reference_values``'s arrays; None: as it was)."""
    out = pb.QuantizedType()
    out.CopyFrom(msg)
    if scales is not None:
        out.scale[:] = scales.tolist()
    if zero_points is not None:
        out.zero_point[:] = zero_points.tolist()
    return out
