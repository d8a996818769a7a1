"""QType: one quantized element type, immutable and validated on construction.

The tables it draws on and the tests it applies each have their own module: storage and expressed types
(``storage_types``), schemas (``schema``), the validity tests shared with the checker's rules (``validity``),
the parameter layout (``parameter_layout``), extension versions (``versions``), parameters by reference read
from a model (``parameter_references``) and statistics (``statistics``). ``QType.from_proto(...,
validate=False)`` builds an unvalidated instance for reporting on models that break the rules.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.coerce import as_int, as_tuple
from onnx_qtypes.proto.parameter_values import ParameterValues, any_nonzero
from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.schema import SCHEMAS_BY_VALUE, Schema
from onnx_qtypes.proto.statistics import TensorStatistics
from onnx_qtypes.proto.storage_types import (
    EXPRESSED_BY_DATA_TYPE,
    STORAGE_BY_DATA_TYPE,
    STORAGE_TYPES,
    ExpressedType,
    StorageType,
    data_type_name,
    expressed_problem,
    expressed_type,
    storage_problem,
    storage_type,
)
from onnx_qtypes.proto.validity import (
    first_not_finite,
    count_problem,
    first_bad_scale,
    first_outside,
    float_storage_problem,
    codebook_problem,
    negative_scale_problem,
    offset_problem,
    range_problem,
    scale_problem,
    schema_problem,
    zero_point_problem,
    zero_scale_allowed,
)
from onnx_qtypes.proto.versions import fields_version


@dataclasses.dataclass(frozen=True)
class QType:
    """A quantized element type: ``real = scale[i] * (q - zero_point[i])``.

    ``scale`` empty means dynamic (parameters computed at run time by the
    schema). ``zero_point`` empty with scales given means all zeros.
    ``storage_min``/``storage_max`` default to the storage type's range.
    ``statistics`` is metadata and takes no part in equality or hashing.
    """

    storage: str
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    axis: int | None = None
    block_size: int | None = None
    schema: Schema = Schema.ASYMMETRIC
    storage_min: int | None = None
    storage_max: int | None = None
    expressed: str = "float32"
    statistics: TensorStatistics | None = dataclasses.field(default=None, compare=False)
    # Where the parameters are stored, not what they are: names of initializers holding the scales / zero
    # points (parameters by reference), None when listed in the type. Never part of type identity.
    scale_tensor: str | None = dataclasses.field(default=None, compare=False)
    zero_point_tensor: str | None = dataclasses.field(default=None, compare=False)
    # Version 3 (proposal/spec/llm_formats.md): real-domain offsets, real = scale * (q - zero_point) + offset
    # (empty: all 0), and a codebook, real = scale * codebook[q - storage_min] + offset (empty: none).
    offset: tuple[float, ...] = ()
    codebook: tuple[float, ...] = ()
    offset_tensor: str | None = dataclasses.field(default=None, compare=False)
    # The extension version the type needs or was declared with (the higher); how it is written, not what it is.
    version: int = dataclasses.field(default=1, compare=False)

    def __init__(
        self,
        storage: str | int,
        scale: float | Sequence[float] | np.ndarray | None = (),
        zero_point: int | Sequence[int] | np.ndarray | None = (),
        axis: int | None = None,
        block_size: int | None = None,
        schema: Schema | str | int = Schema.ASYMMETRIC,
        storage_min: int | None = None,
        storage_max: int | None = None,
        expressed: str | int = "float32",
        statistics: TensorStatistics | None = None,
        scale_tensor: str | None = None,
        zero_point_tensor: str | None = None,
        *,
        offset: float | Sequence[float] | np.ndarray | None = (),
        codebook: Sequence[float] | np.ndarray | None = (),
        offset_tensor: str | None = None,
        version: int | None = None,
        validate: bool = True,
    ) -> None:
        # Unvalidated construction keeps unknown storage / expressed types for reporting.
        st = storage_type(storage) if validate or storage_problem(storage) is None else None
        ex = expressed_type(expressed) if validate or expressed_problem(expressed) is None else None
        scales = _parameters(scale, float, "scale")
        zps = _parameters(zero_point, int, "zero_point")
        if scales and not zps:
            zps = _zeros(scales)
        sets = object.__setattr__
        sets(self, "storage", st.name if st else data_type_name(storage))
        sets(self, "scale", scales)
        sets(self, "zero_point", zps)
        sets(self, "axis", as_int(axis, "axis"))
        sets(self, "block_size", as_int(block_size, "block_size"))
        sets(self, "schema", Schema.parse(schema))
        sets(self, "storage_min", as_int(storage_min, "storage_min") if storage_min is not None else (st.min if st else None))
        sets(self, "storage_max", as_int(storage_max, "storage_max") if storage_max is not None else (st.max if st else None))
        sets(self, "expressed", ex.name if ex else data_type_name(expressed))
        if statistics is not None and not isinstance(statistics, TensorStatistics):
            raise QTypeError("statistics", f"expected a TensorStatistics or None, got {statistics!r}")
        sets(self, "statistics", statistics)
        for field, name in (("scale_tensor", scale_tensor), ("zero_point_tensor", zero_point_tensor),
                            ("offset_tensor", offset_tensor)):
            if name is not None and (not isinstance(name, str) or not name):
                raise QTypeError(field, f"expected an initializer name (a non-empty str), got {name!r}")
            sets(self, field, name)
        offsets = _parameters(offset, float, "offset")
        sets(self, "offset", offsets if _offsets_kept(offsets) else ())  # 0s: none
        sets(self, "codebook", as_tuple(codebook, float, "codebook"))
        declared = as_int(version, "version") if version is not None else 1
        sets(self, "version", max(declared, fields_version(self)))
        if validate:
            self._validate()

    # -- derived properties
    @property
    def storage_type(self) -> StorageType:
        return storage_type(self.storage)

    @property
    def expressed_type(self) -> ExpressedType:
        return expressed_type(self.expressed)

    @property
    def is_dynamic(self) -> bool:
        return not self.scale

    @functools.cached_property
    def has_negative_scale(self) -> bool:
        """Some scale is negative: real values run against the stored integers' order in those slices
        (cached: a blocked weight has millions of scales, and evaluators ask per node and run)."""
        if isinstance(self.scale, ParameterValues):  # min over a tuple, in one vector step where no NaN makes the
            values = self.scale.array()             # order of the scales matter
            if not np.isnan(values).any():
                return bool(values.size) and bool(values.min() < 0)
        return bool(self.scale) and min(self.scale) < 0

    @property
    def is_affine(self) -> bool:
        """``real = scale * (q - zero_point)`` exactly: no offset, no codebook (what versions 1 and 2 say)."""
        return not self.codebook and not any_nonzero(self.offset)

    @property
    def granularity(self) -> str:
        if self.axis is None:
            return "per-tensor"
        return "per-axis" if self.block_size is None else "blocked"

    def with_statistics(self, statistics: TensorStatistics | None) -> QType:
        """The same type with other statistics (never revalidated: statistics do not affect validity)."""
        copy = object.__new__(QType)
        object.__getattribute__(copy, "__dict__").update(self.__dict__, statistics=statistics)
        return copy

    def replace(self, *, validate: bool = True, **changes: Any) -> QType:
        """A copy with ``changes``; ``validate=False`` keeps invalid values (as in from_proto)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields.update(changes)
        return QType(**fields, validate=validate)

    # -- validation (shape-independent; see count_problem for the rest)
    def _validate(self) -> None:
        st = self.storage_type
        lo, hi = self.storage_min, self.storage_max
        assert lo is not None and hi is not None
        if problem := range_problem(st, lo, hi) or float_storage_problem(st, (), lo, hi):
            raise QTypeError("storage_min", problem)
        if self.block_size is not None:
            if self.block_size <= 0:
                raise QTypeError("block_size", f"block_size {self.block_size} must be > 0")
            if self.axis is None:
                raise QTypeError("block_size", "a blocked type needs an axis")
        if self.axis is not None and self.axis < 0:
            raise QTypeError("axis", f"axis {self.axis} must be >= 0 (store the normalized axis)")
        if self.is_dynamic:
            if self.zero_point:
                raise QTypeError("zero_point", "a dynamic type (no scale) carries no zero points")
            if problem := offset_problem(self.offset, 0) or (self.codebook and "a dynamic type has no codebook"):
                raise QTypeError("offset" if self.offset else "codebook", problem)
            return
        if len(self.zero_point) != len(self.scale):
            raise QTypeError(
                "zero_point", f"{len(self.scale)} scales need {len(self.scale)} zero points, found {len(self.zero_point)}"
            )
        if self.axis is None and len(self.scale) != 1:
            raise QTypeError("scale", f"a per-tensor type needs exactly 1 scale, found {len(self.scale)}; set axis")
        zero_allowed = zero_scale_allowed(self.version, self.scale_tensor is not None)  # a GGUF block of zeros
        if (bad := first_bad_scale(self.scale, zero_allowed)) is not None:
            raise QTypeError("scale", scale_problem(bad))
        if problem := offset_problem(self.offset, len(self.scale)):
            raise QTypeError("offset", problem)
        if problem := codebook_problem(self.codebook, st, lo, hi, self.zero_point):
            raise QTypeError("codebook", problem)
        if problem := float_storage_problem(st, self.zero_point, lo, hi):
            raise QTypeError("zero_point", problem)
        if (bad_zp := first_outside(self.zero_point, lo, hi)) is not None:
            raise QTypeError("zero_point", zero_point_problem(bad_zp, lo, hi))
        if problem := schema_problem(self.schema, self.scale, self.zero_point, lo, hi, st):
            raise QTypeError("schema", problem)
        if self.has_negative_scale and (problem := negative_scale_problem(self.schema, self.scale, self.zero_point, lo)):
            raise QTypeError("scale", problem)

    def check_shape(self, shape: Sequence[int | None], tensor: str | None = None) -> None:
        """Raise QTypeError when the parameters do not fit ``shape``."""
        if problem := count_problem(self, shape):
            raise QTypeError("scale", problem, tensor)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (statistics included when present)."""
        out: dict[str, Any] = {
            "storage": self.storage,
            "expressed": self.expressed,
            "granularity": "dynamic" if self.is_dynamic else self.granularity,
            "scale": list(self.scale),
            "zero_point": list(self.zero_point),
            "axis": self.axis,
            "block_size": self.block_size,
            "schema": self.schema.name.lower(),
            "storage_min": self.storage_min,
            "storage_max": self.storage_max,
        }
        if self.offset:
            out["offset"] = list(self.offset)
        if self.codebook:
            out["codebook"] = list(self.codebook)
        if self.scale_tensor is not None or self.zero_point_tensor is not None or self.offset_tensor is not None:
            out["parameters_in"] = {"scale": self.scale_tensor, "zero_point": self.zero_point_tensor}
            if self.offset_tensor is not None:
                out["parameters_in"]["offset"] = self.offset_tensor
        if self.statistics is not None:
            out["statistics"] = self.statistics.to_dict()
        return out

    # -- proto conversion
    def to_proto(self) -> pb.QuantizedType:
        """The message declaring this type; parameters by reference name their initializers instead of being
        listed (the initializers themselves are the model's: ``proto.model.set_qtype`` writes them)."""
        msg = pb.QuantizedType()
        msg.storage_type = self.storage_type.data_type
        msg.expressed_type = self.expressed_type.data_type
        if self.scale_tensor is not None:
            msg.scale_tensor = self.scale_tensor
        else:
            msg.scale.extend(self.scale)
        if self.zero_point_tensor is not None:
            msg.zero_point_tensor = self.zero_point_tensor
        elif any_nonzero(self.zero_point) or self.scale_tensor is None:
            msg.zero_point.extend(self.zero_point)
        if self.offset_tensor is not None:
            msg.offset_tensor = self.offset_tensor
        elif any_nonzero(self.offset):
            msg.offset.extend(self.offset)
        msg.codebook.extend(self.codebook)
        if self.version > 1:
            msg.version = self.version
        if self.axis is not None:
            msg.axis = self.axis
        if self.block_size is not None:
            msg.block_size = self.block_size
        msg.schema = self.schema.value
        st = self.storage_type
        if self.storage_min != st.min:
            msg.storage_min = self.storage_min  # type: ignore[assignment]
        if self.storage_max != st.max:
            msg.storage_max = self.storage_max  # type: ignore[assignment]
        return msg

    @classmethod
    def from_values(
        cls, storage: StorageType, scale: list[float], zero_point: list[int], axis: int | None,
        block_size: int | None, expressed: ExpressedType, schema: Schema = Schema.ASYMMETRIC,
        scale_tensor: str | None = None, zero_point_tensor: str | None = None,
    ) -> QType:
        """``QType(storage.data_type, scale, zero_point, axis, block_size, schema, expressed=..., validate=False)``
        for values already of their field types (Python floats and ints, as numpy's ``tolist`` gives them, known
        storage and expressed types), without coercing each again: the lift reads thousands of them."""
        held = isinstance(scale, ParameterValues)  # by reference: kept as the initializer holds them
        if held and (not zero_point or isinstance(zero_point, ParameterValues)):
            pass
        elif (held or not all(type(v) is float for v in scale) or not all(type(v) is int for v in zero_point)
                or any(n is not None and (type(n) is not str or not n) for n in (scale_tensor, zero_point_tensor))
                or not all(v is None or type(v) is int for v in (axis, block_size))):
            return cls(storage.data_type, scale, zero_point, axis, block_size, schema, expressed=expressed.data_type,
                       scale_tensor=scale_tensor, zero_point_tensor=zero_point_tensor, validate=False)
        qtype = object.__new__(cls)
        object.__getattribute__(qtype, "__dict__").update(
            storage=storage.name, scale=scale if held else tuple(scale),
            zero_point=(zero_point if held else tuple(zero_point)) or _zeros(scale), axis=axis,
            block_size=block_size, schema=schema, storage_min=storage.min, storage_max=storage.max,
            expressed=expressed.name, statistics=None, scale_tensor=scale_tensor, zero_point_tensor=zero_point_tensor,
            offset=(), codebook=(), offset_tensor=None)
        object.__setattr__(qtype, "version", fields_version(qtype))
        return qtype

    @classmethod
    def from_proto(
        cls, msg: pb.QuantizedType, statistics: TensorStatistics | None = None, *, validate: bool = True,
        values: dict[str, Sequence] | None = None,
    ) -> QType:
        """The QType a message declares; ``validate=False`` keeps invalid values for reporting. ``values``: the
        parameters the message names by reference, by field (``parameter_references.read_references``), read in
        place of the message's lists (the type then holds them as the initializer does: ``ParameterValues``).

        Fields this version does not define are not looked at here (``proto.model.require_known_fields``).
        """
        storage = STORAGE_BY_DATA_TYPE.get(msg.storage_type)
        expressed = EXPRESSED_BY_DATA_TYPE.get(msg.expressed_type)
        has = msg.HasField
        given = values or {}
        if storage is None or expressed is None:  # unknown types: the general constructor names them
            return cls(
                storage=msg.storage_type,
                scale=given.get("scale", tuple(msg.scale)),
                zero_point=given.get("zero_point", tuple(msg.zero_point)),
                axis=msg.axis if has("axis") else None,
                block_size=msg.block_size if has("block_size") else None,
                schema=SCHEMAS_BY_VALUE.get(msg.schema, Schema.ASYMMETRIC),
                storage_min=msg.storage_min if has("storage_min") else None,
                storage_max=msg.storage_max if has("storage_max") else None,
                expressed=msg.expressed_type,
                statistics=statistics,
                scale_tensor=msg.scale_tensor if has("scale_tensor") else None,
                zero_point_tensor=msg.zero_point_tensor if has("zero_point_tensor") else None,
                offset=given.get("offset", tuple(msg.offset)),
                codebook=tuple(msg.codebook),
                offset_tensor=msg.offset_tensor if has("offset_tensor") else None,
                version=msg.version if has("version") else None,
                validate=validate,
            )
        # Protobuf already typed every field: skip the generic coercion (checker reads thousands of these).
        scales = given.get("scale") or tuple(msg.scale[:])  # a slice converts in one call, iteration one at a time
        offsets = given.get("offset") or tuple(msg.offset[:])
        qtype = object.__new__(cls)
        object.__getattribute__(qtype, "__dict__").update(
            storage=storage.name,
            scale=scales,
            zero_point=given.get("zero_point") or tuple(msg.zero_point[:]) or _zeros(scales),
            axis=msg.axis if has("axis") else None,
            block_size=msg.block_size if has("block_size") else None,
            schema=SCHEMAS_BY_VALUE.get(msg.schema, Schema.ASYMMETRIC),
            storage_min=msg.storage_min if has("storage_min") else storage.min,
            storage_max=msg.storage_max if has("storage_max") else storage.max,
            expressed=expressed.name,
            statistics=statistics,
            scale_tensor=msg.scale_tensor if has("scale_tensor") else None,
            zero_point_tensor=msg.zero_point_tensor if has("zero_point_tensor") else None,
            offset=offsets if _offsets_kept(offsets) else (),
            codebook=tuple(msg.codebook[:]),
            offset_tensor=msg.offset_tensor if has("offset_tensor") else None,
        )
        object.__setattr__(qtype, "version", max(msg.version if has("version") else 1, fields_version(qtype)))
        if validate:
            qtype._validate()
        return qtype

    def __str__(self) -> str:
        params = "dynamic" if self.is_dynamic else _format_params(self)
        extra = []
        if self.axis is not None:
            extra.append(f"axis={self.axis}")
        if self.block_size is not None:
            extra.append(f"block={self.block_size}")
        st = STORAGE_TYPES.get(self.storage)
        if st and (self.storage_min, self.storage_max) != (st.min, st.max):
            extra.append(f"range=[{self.storage_min},{self.storage_max}]")
        if self.schema is not Schema.ASYMMETRIC:
            extra.append(self.schema.name.lower())
        if any_nonzero(self.offset):
            extra.append("offset")
        if self.codebook:
            extra.append(f"codebook[{len(self.codebook)}]")
        tail = (", " + ", ".join(extra)) if extra else ""
        return f"{self.storage}:{self.expressed}<{params}{tail}>"


def _parameters(value: Any, kind: type, field: str) -> tuple | ParameterValues:
    """A parameter field's values: a tuple of Python numbers, or ParameterValues kept as they are (read from an
    initializer already, of the field's kind)."""
    if isinstance(value, ParameterValues):
        if value.kind is not kind:
            raise QTypeError(field, f"expected {'integers' if kind is int else 'real numbers'}, got {value.kind.__name__}s")
        return value
    return as_tuple(value, kind, field)


def _zeros(scales: Sequence[float]) -> tuple | ParameterValues:
    """The zero points of a type that writes none: one 0 per scale (in no memory for scales held by reference)."""
    return ParameterValues.zeros(len(scales)) if isinstance(scales, ParameterValues) else (0,) * len(scales)


def _offsets_kept(offsets: Sequence[float]) -> bool:
    """Whether offsets say something: one is non-zero or not finite (all 0 means none)."""
    return any_nonzero(offsets) or first_not_finite(offsets) is not None


def _format_params(qt: QType, limit: int = 4) -> str:
    pairs = [f"{s:.6g}:{z}" for s, z in zip(qt.scale[:limit], qt.zero_point[:limit])]
    more = f", ... ({len(qt.scale)} pairs)" if len(qt.scale) > limit else ""
    return ", ".join(pairs) + more


# Names this module held before it was split by concern, for code outside the project that imports them from
# here; each is defined in (and the project imports it from) the module named.
_MOVED = {
    **dict.fromkeys(("STORAGE_TYPES", "STORAGE_BY_DATA_TYPE", "EXPRESSED_TYPES", "EXPRESSED_BY_DATA_TYPE",
                     "StorageType", "ExpressedType", "integer_range", "storage_type", "expressed_type",
                     "data_type_name", "storage_problem", "expressed_problem"), "storage_types"),
    "Schema": "schema",
    **dict.fromkeys(("range_problem", "float_storage_problem", "scale_problem", "negative_scale_problem",
                     "scale_warning", "zero_point_problem", "is_pow2", "unsigned_midpoint",
                     "symmetric_with_unsigned_zero_points", "schema_problem", "count_problem"), "validity"),
    **dict.fromkeys(("block_count", "parameter_shape"), "parameter_layout"),
    **dict.fromkeys(("KNOWN_VERSIONS", "REFERENCES_VERSION", "unknown_fields", "unknown_field_problem"), "versions"),
    **dict.fromkeys(("reference_dims", "reference_values", "listing"), "parameter_references"),
    "stored_outside_type": "encoding",
    **dict.fromkeys(("Statistics", "TensorStatistics"), "statistics"),
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib  # noqa: PLC0415 (parameter_references and encoding import this module)

        return getattr(importlib.import_module(f"onnx_qtypes.proto.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
