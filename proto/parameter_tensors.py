"""Parameters by reference: a type's scales and zero points kept in initializers instead of in the type.

A blocked int4 weight of 4096 x 4096 with blocks of 32 has 524,288 scales: listed in its type they would
sit in the graph (4 MiB of doubles per weight, 1 GiB for a 7B model, past protobuf's 2 GiB for 70B), where
external data cannot take them. In an initializer they are data like the weight itself. The type then names
the initializer (``QuantizedType.scale_tensor`` / ``zero_point_tensor``); readers resolve the name
(``proto.model.referenced_values``), writers place the values here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container

import numpy as np
from onnx import GraphProto, TensorProto, helper, numpy_helper

from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.parameter_layout import parameter_shape
from onnx_qtypes.proto.parameter_values import any_nonzero
from onnx_qtypes.proto.qtype import QType

# Above this many parameters set_qtype and lift keep them in initializers (8 KiB of scales listed at most).
REFERENCE_THRESHOLD = 1024


def wants_reference(qtype: QType) -> bool:
    """True when ``qtype``'s parameters belong in initializers: it names some, or has more than the threshold."""
    return named_parameters(qtype) != set() or (qtype.axis is not None and len(qtype.scale) > REFERENCE_THRESHOLD)


def named_parameters(qtype: QType | None) -> set[str]:
    """The initializer names ``qtype`` gives for its parameters (scales, zero points, offsets)."""
    if qtype is None:
        return set()
    return {n for n in (qtype.scale_tensor, qtype.zero_point_tensor, qtype.offset_tensor) if n}


@dataclasses.dataclass
class Placement:
    """Where one type's parameters go: the type naming them, and the initializers to write (none written yet)."""

    qtype: QType
    writes: list[TensorProto] = dataclasses.field(default_factory=list)

    def apply(self, graph: GraphProto) -> None:
        existing = {init.name: i for i, init in enumerate(graph.initializer)}
        for init in self.writes:
            if init.name in existing:
                graph.initializer[existing[init.name]].CopyFrom(init)
            else:
                graph.initializer.append(init)


def plan_parameters(graph: GraphProto, tensor: str, qtype: QType, shape: tuple[int | None, ...] | None,
                    previous: QType | None = None, taken: Container[str] = (), claimed: set[str] | None = None
                    ) -> Placement:
    """Where ``qtype``'s scales (and non-zero zero points) go in initializers of ``graph``; nothing is written
    until ``Placement.apply``, so that set_qtypes changes the model only when every type fits.

    Names come from ``qtype`` or, when it names none, from the type it replaces (``previous``), else
    ``<tensor>_scale`` / ``<tensor>_zero_point`` made unique. An existing initializer of that name is
    replaced only when it held this tensor's parameters already (``previous`` named it), and kept as it is
    when it holds exactly these values; any other is another tensor's data and is refused, as is a name in
    ``taken`` (a graph input or node output) or in ``claimed`` (named by another type of the same call).
    Without a known parameter shape (a blocked type on a tensor of unknown shape) the parameters stay listed.
    """
    dims = parameter_shape(qtype, shape) if shape is not None else (() if qtype.axis is None else None)
    if dims is None or any(d is None for d in dims):
        if named_parameters(qtype):
            raise QTypesError(f"set_qtype({tensor!r}): parameters by reference need the tensor's shape; declare it")
        return Placement(qtype)
    claimed = set() if claimed is None else claimed
    existing = {init.name: init for init in graph.initializer}
    owned = named_parameters(previous)
    values = {
        "scale": np.asarray(qtype.scale, np.float64).astype(qtype.expressed_type.np_dtype).reshape(dims),
        "zero_point": np.asarray(qtype.zero_point, np.int64).astype(qtype.storage_type.np_dtype).reshape(dims),
        "offset": np.asarray(qtype.offset or [0.0] * len(qtype.scale), np.float64).astype(
            qtype.expressed_type.np_dtype).reshape(dims),
    }
    names: dict[str, str] = {}
    placement = Placement(qtype)
    for field, default in (("scale", qtype.scale_tensor), ("zero_point", qtype.zero_point_tensor),
                           ("offset", qtype.offset_tensor)):
        name = default or (getattr(previous, f"{field}_tensor") if previous else None)
        if field == "zero_point" and name is None and not any_nonzero(qtype.zero_point):
            continue  # all zero: nothing to store
        if field == "offset" and name is None and not qtype.offset:
            continue
        if name in owned and name in existing and marked_storage(existing[name].data_type) is not None:
            names[field] = name  # a quantized parameter tensor (version 3): its values were read from it
            continue
        if name is None:
            name = unique_name(f"{tensor}_{field}", _Taken(existing, claimed, names.values(), taken))
        elif name in claimed or name in names.values():
            raise QTypesError(f"set_qtype({tensor!r}): {name!r} is named for the parameters of another type too; "
                              "a parameter initializer belongs to one type")
        elif name in taken and name not in existing:
            raise QTypesError(f"set_qtype({tensor!r}): {name!r} is a graph input or a node output, not an "
                              "initializer; name a new initializer for the parameters")
        elif name in existing and name not in owned and not _holds(existing[name], values[field]):
            raise QTypesError(
                f"set_qtype({tensor!r}): initializer {name!r} exists and does not hold this tensor's parameters; "
                "name another one (a parameter initializer belongs to one type)"
            )
        names[field] = name
        if not (name in existing and _holds(existing[name], values[field])):  # else kept as it is, marker and all
            placement.writes.append(numpy_helper.from_array(values[field], name))
    claimed.update(names.values())
    placement.qtype = qtype.replace(validate=False, scale_tensor=names.get("scale"),
                                    zero_point_tensor=names.get("zero_point"), offset_tensor=names.get("offset"))
    return placement


class _Taken:
    """Every name already in use, for a fresh one: several containers asked in turn (none copied)."""

    def __init__(self, *containers: Container[str]) -> None:
        self.containers = containers

    def __contains__(self, name: object) -> bool:
        return any(name in c for c in self.containers)


def marked_storage(data_type: int) -> int | None:
    from onnx_qtypes.proto.encoding import marked_storage as storage  # noqa: PLC0415 (imports this module)

    return storage(data_type)


def _holds(tensor, wanted: np.ndarray) -> bool:
    """Whether initializer ``tensor`` holds exactly ``wanted`` (type, dims and values)."""
    from onnx_qtypes.proto.encoding import plain_data_type, tensor_array  # noqa: PLC0415 (imports this module)

    if tuple(tensor.dims) != wanted.shape or plain_data_type(tensor.data_type) != \
            helper.np_dtype_to_tensor_dtype(wanted.dtype):  # (a 0-d wanted too: a per-tensor scale)
        return False
    try:
        return bool(np.array_equal(tensor_array(tensor).astype(np.float64), wanted.astype(np.float64)))
    except Exception:  # noqa: BLE001 - data that does not decode holds nothing
        return False


def drop_unreferenced(graph: GraphProto, names: set[str], still_named: set[str]) -> None:
    """Remove the initializers in ``names`` that no type names any more and no node reads."""
    read = {i for node in graph.node for i in node.input} | {o.name for o in graph.output}
    gone = names - still_named - read
    for i in reversed([i for i, init in enumerate(graph.initializer) if init.name in gone]):
        del graph.initializer[i]


def unique_name(name: str, taken: Container[str]) -> str:
    """``name``, or ``name_2``, ``name_3``, ... whichever ``taken`` does not hold."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    return candidate
