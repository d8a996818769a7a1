"""Parameters by reference, read from the model: the initializers a type names for its scales, zero points and
(version 3) offsets.

A referenced scale or offset initializer holds values of the expressed type, or (version 3) of a narrower float
type the expressed type holds exactly (``storage_types.EXACT_PARAMETER_TYPES``: a GGUF float16 ``d`` kept as
float16, an MX E8M0 scale in one byte), or is itself a quantized tensor whose exact real values are the
parameters (a K-quant's 6-bit sub-block scales against their float16 super-block scale:
proposal/spec/llm_formats.md). Such a quantized parameter tensor's own parameters are plain: one level.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnx_qtypes.proto import external, onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.encoding import marked_storage, plain_data_type, tensor_array
from onnx_qtypes.proto.parameter_layout import block_count
from onnx_qtypes.proto.parameter_values import ParameterValues
from onnx_qtypes.proto.storage_types import EXACT_PARAMETER_TYPES, byte_dtype, data_type_name
from onnx_qtypes.proto.versions import LLM_FORMATS_VERSION, declared_version

FIELDS = ("scale", "zero_point", "offset")
# initializer name -> the QuantizedType its declaration carries (None: not a quantized initializer)
Declared = Callable[[str], "pb.QuantizedType | None"]


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


@dataclasses.dataclass
class References:
    """What a type's references hold: flat row-major arrays per field (absent: listed in the type), or why they
    cannot be read (``problem``, naming the field first; the arrays are then empty)."""

    problem: str | None = None
    values: dict[str, ParameterValues] = dataclasses.field(default_factory=dict)  # read as tuples, held as stored
    quantized: frozenset[str] = frozenset()  # fields read from a quantized parameter tensor

    @property
    def field(self) -> str:
        """The field the problem is about ("scale_tensor", ...)."""
        return (self.problem or "scale_tensor").split(" ", 1)[0]


def has_references(msg: pb.QuantizedType) -> bool:
    return any(msg.HasField(f"{field}_tensor") for field in FIELDS)


def read_references(msg: pb.QuantizedType, lookup: Callable[[str], Any], shape: Sequence[int | None] | None,
                    declared: Declared | None = None, *, nested: bool = False) -> References:
    """The parameters ``msg`` names by reference, read through ``lookup`` (initializer name -> TensorProto or
    None); ``declared`` gives the type of a quantized initializer (None: the reader knows none, and a quantized
    parameter tensor cannot be read). ``nested``: ``msg`` is a parameter tensor's own type (its references must
    be plain)."""
    wanted = reference_dims(msg, shape)
    out = References()
    version = declared_version(msg)
    for field in FIELDS:
        if not msg.HasField(f"{field}_tensor"):
            continue
        name = getattr(msg, f"{field}_tensor")
        where = f"{field}_tensor {name!r}"
        if len(getattr(msg, field)):
            return References(f"{where}: the type lists {field} values too; give one form, not both")
        init = lookup(name)
        if init is None:
            return References(f"{where} names no initializer of the graph (parameters by reference live in "
                              "initializers)")
        if problem := _dims_problem(where, tuple(init.dims), wanted, msg):
            return References(problem)
        inner = declared(name) if declared is not None and field != "zero_point" else None
        quantized = field != "zero_point" and (inner is not None or marked_storage(init.data_type) is not None)
        if quantized:  # a marked initializer, or (in a plain copy, markers replaced) one declared quantized
            values, problem = _quantized_values(msg, where, init, lookup, inner, nested, version)
        else:
            values, problem = _plain_values(msg, field, where, init, version)
        if problem:
            return References(problem)
        out.values[field] = values
        if quantized:
            out.quantized |= {field}
    count = out.values["scale"].size if "scale" in out.values else len(msg.scale)
    for field, what in (("zero_point", "zero points"), ("offset", "offsets")):
        if field in out.values and out.values[field].size != count:
            return References(f"{field}_tensor {getattr(msg, f'{field}_tensor')!r} holds {out.values[field].size} "
                              f"{what} for {count} scales")
    return out


def _dims_problem(where: str, dims: tuple[int, ...], wanted: tuple[int | None, ...] | None,
                  msg: pb.QuantizedType) -> str | None:
    fits = dims in ((), (1,)) if wanted == () else (
        len(dims) == 1 if wanted is None and not msg.HasField("block_size") else
        wanted is None or (len(dims) == len(wanted) and all(w is None or w == d for w, d in zip(wanted, dims))))
    if fits:
        return None
    shown = "[] or [1]" if wanted == () else "[" + ",".join("?" if w is None else str(w) for w in wanted) + "]" \
        if wanted is not None else "1-D"
    return f"{where} has dims {list(dims)}, but the parameter shape is {shown}"


def _decoded(where: str, init: Any) -> tuple[np.ndarray | None, str | None]:
    try:
        return np.asarray(tensor_array(init)), None
    except Exception as exc:  # noqa: BLE001 - onnx raises several types for data unlike its dims
        return None, f"{where}: its data does not decode ({' '.join(str(exc).split())[:120]})"


def _plain_values(msg: pb.QuantizedType, field: str, where: str, init: Any, version: int
                  ) -> tuple[np.ndarray | None, str | None]:
    data_type = plain_data_type(init.data_type)  # a zero point a boundary op reads is marked
    wanted = msg.storage_type if field == "zero_point" else msg.expressed_type
    if data_type != wanted:
        narrower = field != "zero_point" and data_type in EXACT_PARAMETER_TYPES.get(wanted, ())
        if not narrower:
            return None, (f"{where} holds {data_type_name(init.data_type)}, but {field}s of this type are "
                          f"{data_type_name(wanted)}")
        if version < LLM_FORMATS_VERSION:
            return None, (f"{where} holds {data_type_name(data_type)} {field}s for a {data_type_name(wanted)} type, "
                          f"which extension version {LLM_FORMATS_VERSION} allows; the type declares version {version}")
    kind = int if field == "zero_point" else float
    if external.is_lazy(init):  # left in its file: mapped on each use, never held (its extent checked on reading)
        return lazy_values(init, kind), None
    values, problem = _decoded(where, init)
    if problem:
        return None, problem
    return ParameterValues.of_array(values, kind), None


def lazy_values(init: Any, kind: type) -> ParameterValues:
    """The values of an initializer left in its external file, read from there on each use."""
    path, offset, length = external.readable_region(init)
    dtype = byte_dtype(plain_data_type(init.data_type))
    count = math.prod(init.dims)
    if dtype is not None and not init.HasField("segment") and length == count * dtype.itemsize:
        return ParameterValues.mapped(path, offset, count, dtype, kind)
    kept = type(init)()
    kept.CopyFrom(init)  # its name, type and place: a few bytes
    decoded: list[np.ndarray] = []

    def load() -> np.ndarray:  # a type numpy cannot map (float8 scales): decoded once, at its stored size, then kept
        if not decoded:
            decoded.append(tensor_array(kept).reshape(-1))
        return decoded[0]

    return ParameterValues(load, count, kind)


def _quantized_values(msg: pb.QuantizedType, where: str, init: Any, lookup: Callable[[str], Any],
                      inner: pb.QuantizedType | None, nested: bool, version: int) -> tuple[np.ndarray | None, str | None]:
    """The exact reals of a quantized parameter tensor (its type's own references read too, plain only)."""
    if nested:
        return None, (f"{where} is a quantized tensor, but it names the parameters of a quantized parameter "
                      "tensor, whose own parameters must be plain (one level)")
    if version < LLM_FORMATS_VERSION:
        return None, (f"{where} is a quantized tensor (extension version {LLM_FORMATS_VERSION}), but the type "
                      f"declares version {version}")
    if inner is None:
        return None, f"{where} holds {data_type_name(init.data_type)} but no declaration gives it a quantized type"
    if inner.expressed_type != msg.expressed_type:
        return None, (f"{where} is quantized with expressed type {data_type_name(inner.expressed_type)}; parameters "
                      f"of this type are {data_type_name(msg.expressed_type)}")
    if not (len(inner.scale) or inner.HasField("scale_tensor")):
        return None, f"{where} has a dynamic type; a parameter tensor's type is static"
    refs = read_references(inner, lookup, tuple(init.dims), nested=True)
    if refs.problem:
        return None, f"{where}: its own {refs.problem}"
    codes, problem = _decoded(where, init)
    if problem:
        return None, problem
    from onnx_qtypes.proto.qtype import QType  # noqa: PLC0415 (qtype's compatibility names import this module)
    from onnx_qtypes.reference_ops.quant import dequantize  # noqa: PLC0415 (the one home of the formula)

    try:
        qtype = QType.from_proto(listing(inner, refs), validate=True)
        return ParameterValues.of_array(dequantize(codes, qtype, tensor=init.name), float), None
    except Exception as exc:  # noqa: BLE001 - the type's own findings are its declaration's rules
        return None, f"{where}: its quantized type cannot be read ({' '.join(str(exc).split())[:160]})"


def listing(msg: pb.QuantizedType, refs: References | np.ndarray | None, zero_points: np.ndarray | None = None
            ) -> pb.QuantizedType:
    """A copy of ``msg`` with referenced parameters listed (``read_references``'s values). The older call
    ``listing(msg, scales, zero_points)`` with ``reference_values``'s arrays still works."""
    values = refs.values if isinstance(refs, References) else {
        k: v for k, v in (("scale", refs), ("zero_point", zero_points)) if v is not None}
    out = pb.QuantizedType()
    out.CopyFrom(msg)
    for field, array in values.items():
        getattr(out, field)[:] = np.asarray(array).reshape(-1).tolist()
    return out


def reference_values(
    msg: pb.QuantizedType, lookup: Callable[[str], Any], shape: Sequence[int | None] | None,
    declared: Declared | None = None,
) -> tuple[str | None, np.ndarray | None, np.ndarray | None]:
    """(problem, scales, zero points) of ``read_references`` (offsets: read them with that function)."""
    refs = read_references(msg, lookup, shape, declared)
    if refs.problem:
        return refs.problem, None, None
    return None, refs.values.get("scale"), refs.values.get("zero_point")
