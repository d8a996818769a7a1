"""Feeds checked against a typed model's declared inputs, before anything runs.

Used by ``ReferenceEvaluator.run`` and by ``onnx-qtypes run`` (which checks
the headers of an .npz's arrays with ``check_headers`` before reading their
data, so a wrong shape is refused before memory is allocated for it).

What a feed must be, per declared input:

- its name is a graph input (or ``<x>.scale`` / ``<x>.zero_point`` beside
  a dynamic quantized input ``x`` fed as storage integers); every graph
  input without an initializer is fed;
- its shape matches the declared shape: the rank and every fixed dimension;
  a named symbolic dimension (``dim_param``) is one size wherever it occurs
  in the feeds (ONNX's shape-annotation semantics: one binding per run;
  onnxruntime 1.32 does not check it), while an unnamed one (no value, an
  empty or ``?`` ``dim_param``, or the ``-1`` exporters such as paddle2onnx
  write as ``dim_value``) takes any size, independently per axis and input;
- its element kind matches: storage integers for a static quantized input,
  float values (or integers with the two companions) for a dynamic one, the
  declared kind (float, integer, bool, complex, string) otherwise;
- its values: integers inside the storage range (quantized) or the declared
  integer type's range; an array of another width of the right kind (float64
  or float16 for float32, int16 / int32 / int64 for int8, ...) is converted
  only when every value is exactly representable in the declared type, and
  refused otherwise: nothing is rounded silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import onnx

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.errors import EvaluationError, FeedError

__all__ = ["InputSpec", "check_feeds", "check_headers", "check_values", "input_specs"]

Dim = int | str | None
COMPANIONS = ("scale", "zero_point")

_ML_KINDS = {"int2": "i", "int4": "i", "uint2": "u", "uint4": "u"}


def kind(dtype: np.dtype) -> str:
    """numpy's kind letter, with ml_dtypes' types (kind 'V') read as the integers or floats they are."""
    if dtype.kind != "V":
        return dtype.kind
    if dtype.name in _ML_KINDS:
        return _ML_KINDS[dtype.name]
    if dtype.name.startswith(("bfloat", "float")):
        return "f"
    return "V"


def _float_storage_dtype(qtype: QType) -> np.dtype | None:
    """The ml_dtypes dtype of a float storage type (float8, float4), None for integer storage."""
    st = qtype.storage_type
    return st.np_dtype if st.is_float else None


def _saved_as(dtype: np.dtype | None) -> np.dtype | None:
    """What an ml_dtypes array becomes in an .npz (numpy keeps the bytes, not the type): raw bytes of its width."""
    return None if dtype is None else np.dtype(f"V{dtype.itemsize}")


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One graph input as declared: name, dimensions (None: rank unknown), element type, quantized type."""

    name: str
    dims: tuple[Dim, ...] | None
    elem_type: int  # TensorProto data type; 0 when undeclared or not a tensor
    qtype: QType | None = None
    is_tensor: bool = True
    required: bool = True  # False for an input with an initializer (a default that a feed overrides)

    @property
    def dtype(self) -> np.dtype | None:
        if self.elem_type == onnx.TensorProto.UNDEFINED:
            return None
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(self.elem_type))

    @property
    def shape_text(self) -> str:
        if self.dims is None:
            return "any shape"
        return "shape [" + ", ".join("?" if d is None else str(d) for d in self.dims) + "]"

    def describe(self) -> str:
        """What this input takes, e.g. ``int8 storage of int8:float32<0.5:0>, shape [2, 2]``."""
        if self.qtype is not None and not self.qtype.is_dynamic:
            what = f"{self.qtype.storage} storage of {self.qtype}"
        elif self.qtype is not None:
            what = f"{self.qtype.expressed} values for dynamic {self.qtype}"
        elif not self.is_tensor:
            return "a non-tensor value"
        elif self.dtype is None:
            what = "a tensor"
        else:
            what = self.dtype.name if self.elem_type != onnx.TensorProto.STRING else "string"
        return f"{what}, {self.shape_text}"


UNNAMED = ("", "?", "-1")  # dim_params that name nothing: each binds on its own


def _dim(d: onnx.TensorShapeProto.Dimension) -> Dim:
    """A fixed size, a symbol's name, or None (any size)."""
    if d.HasField("dim_value"):
        return d.dim_value if d.dim_value >= 0 else None  # -1: "unknown", as exporters write it
    return None if d.dim_param.strip() in UNNAMED else d.dim_param


def _dims(vi: onnx.ValueInfoProto) -> tuple[Dim, ...] | None:
    tensor = vi.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return tuple(_dim(d) for d in tensor.shape.dim)


def input_specs(model: onnx.ModelProto, qtypes: Mapping[str, QType]) -> list[InputSpec]:
    """The graph inputs of ``model`` in declaration order, with their quantized types (``qtypes``).
    EvaluationError for an input whose element type ONNX does not define."""
    initializers = {i.name for i in model.graph.initializer} | {s.values.name for s in model.graph.sparse_initializer}
    known = set(onnx.TensorProto.DataType.values())
    specs = []
    for vi in model.graph.input:
        is_tensor = vi.type.WhichOneof("value") in (None, "tensor_type")
        elem = vi.type.tensor_type.elem_type if is_tensor else 0
        if elem not in known and vi.name not in qtypes:  # a quantized input's marker type is no ONNX type
            raise EvaluationError(f"graph input {vi.name!r} declares element type {elem}, which ONNX does not define")
        specs.append(InputSpec(vi.name, _dims(vi) if is_tensor else None, elem, qtypes.get(vi.name), is_tensor,
                               vi.name not in initializers))
    return specs


# --- names, shapes and element kinds (what an .npy header says) -------------------------------


def _companions(specs: Sequence[InputSpec]) -> dict[str, InputSpec]:
    return {f"{s.name}.{part}": s for s in specs if s.qtype is not None and s.qtype.is_dynamic for part in COMPANIONS}


def check_names(specs: Sequence[InputSpec], names: Sequence[str], *, noun: str = "feed") -> None:
    """FeedError for a name that is not a graph input, or a required input that is not there."""
    by_name = {s.name: s for s in specs}
    companions = _companions(specs)
    for name in names:
        if name not in by_name and name not in companions:
            inputs = [s.name for s in specs if s.required]
            raise FeedError(f"{noun} {name!r} is not a graph input; the model's inputs are {inputs}")
    present = set(names)
    for spec in specs:
        if spec.required and spec.name not in present:
            raise FeedError(f"missing input {spec.name!r} ({spec.describe()})")


def _shape_problem(spec: InputSpec, shape: tuple[int, ...], bound: dict[str, tuple[int, str]]) -> str | None:
    dims = spec.dims
    if dims is None:
        return None
    got = f"got shape {list(shape)}"
    if len(dims) != len(shape):
        return got
    for axis, (want, size) in enumerate(zip(dims, shape)):
        if isinstance(want, int) and want != size:
            return got
        if isinstance(want, str):
            earlier = bound.setdefault(want, (size, spec.name))
            if earlier[0] != size:
                where = "earlier in its shape" if earlier[1] == spec.name else f"in input {earlier[1]!r}"
                return f"{got}: dimension {axis} is {want!r}, which is {earlier[0]} {where}"
    return None


def _kind_problem(spec: InputSpec, dtype: np.dtype, names: Sequence[str]) -> str | None:
    got = kind(dtype)
    qtype = spec.qtype
    if qtype is not None and not qtype.is_dynamic:
        if got in "iu" or (float_dtype := _float_storage_dtype(qtype)) is not None and dtype in (
                float_dtype, _saved_as(float_dtype)):
            return None
        if _float_storage_dtype(qtype) is not None:
            return f"quantized type {qtype} takes its storage values as {qtype.storage} (ml_dtypes), got {dtype} values"
        return f"quantized type {qtype} takes its storage integers ({qtype.storage}), got {dtype} values"
    if qtype is not None:  # dynamic: reals alone, or storage with its companions (semantics.md#calling-convention)
        companions = [n for n in (f"{spec.name}.scale", f"{spec.name}.zero_point") if n in names]
        float_dtype = _float_storage_dtype(qtype)
        if float_dtype is not None and f"{spec.name}.scale" in names:  # float storage beside its scale
            if dtype in (float_dtype, _saved_as(float_dtype)):
                return None
            return (f"its type {qtype} is dynamic: beside {spec.name}.scale it takes its storage values as "
                    f"{qtype.storage} (ml_dtypes), got {dtype} values")
        if got == "f" and companions:  # reals are quantized by the schema: the parameters fed would be ignored
            return (f"its type {qtype} is dynamic: {dtype} values are reals, quantized by its schema, so "
                    f"{' and '.join(companions)} would be ignored; feed storage with them, or the reals alone")
        if got == "f":
            return None
        if got in "iu" and f"{spec.name}.scale" in names:
            return None
        return (f"its type {qtype} is dynamic: feed {qtype.expressed} values (quantized by its schema) "
                f"or storage integers with {spec.name}.scale and {spec.name}.zero_point; got {dtype} values")
    want = spec.dtype
    if want is None or not spec.is_tensor:
        return None
    want_kind = kind(want)
    accepted = {"f": "f", "i": "iu", "u": "iu", "b": "b", "c": "c", "O": "USO"}.get(want_kind, want_kind)
    if got in accepted and not (dtype.hasobject and want_kind != "O"):
        return None
    return f"expected {spec.describe()}, got {dtype} values"


def check_headers(specs: Sequence[InputSpec], headers: Mapping[str, tuple[tuple[int, ...], np.dtype]],
                  *, noun: str = "feed") -> None:
    """Names, shapes and element kinds of the feeds (``name -> (shape, dtype)``) against ``specs``.

    Raises FeedError naming the input, what it takes and what was found; needs no data, so a
    caller reading files can refuse a wrong array before allocating it.
    """
    check_names(specs, list(headers), noun=noun)
    bound: dict[str, tuple[int, str]] = {}
    for spec in specs:
        if spec.name not in headers or not spec.is_tensor:
            continue
        shape, dtype = headers[spec.name]
        problem = _kind_problem(spec, np.dtype(dtype), list(headers))
        if problem is not None:
            raise FeedError(f"input {spec.name!r}: {problem}")
        problem = _shape_problem(spec, tuple(int(d) for d in shape), bound)
        if problem is not None:
            raise FeedError(f"input {spec.name!r}: expected {spec.describe()}, {problem}")


# --- values -------------------------------------------------------------------------------------


def _at(shape: tuple[int, ...], flat: int) -> str:
    return f" at index {[int(i) for i in np.unravel_index(flat, shape)]}" if shape else ""


def _integer_range(dtype: np.dtype) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dtype) if dtype.kind == "V" else np.iinfo(dtype)
    return int(info.min), int(info.max)


def _outside(value: np.ndarray, lo: int, hi: int) -> tuple[int, int] | None:
    """(flat index, value) of the first element outside [lo, hi], or None."""
    if value.size == 0:
        return None
    if value.dtype.kind in "iu":
        have_lo, have_hi = _integer_range(value.dtype)
        if have_lo >= lo and have_hi <= hi:
            return None  # every value of this dtype fits
    else:
        value = value.astype(np.int64)  # int2 / int4 arrays
    if value.min() >= lo and value.max() <= hi:
        return None
    flat = int(np.flatnonzero((value < lo) | (value > hi))[0])
    return flat, int(value.reshape(-1)[flat])


def _exactly(spec: InputSpec, value: np.ndarray, target: np.dtype, what: str) -> np.ndarray:
    """``value`` converted to ``target`` when every element is representable exactly; FeedError otherwise."""
    if value.dtype == target:
        return value
    with np.errstate(over="ignore", invalid="ignore"):  # a value too large becomes inf: refused below
        converted = value.astype(target)
        back = converted.astype(value.dtype) if value.size else value
    if value.size:
        differ = back != value
        if np.any(differ):
            differ &= ~(np.isnan(back) & np.isnan(value))
        if np.any(differ):
            flat = int(np.flatnonzero(differ)[0])
            raise FeedError(
                f"input {spec.name!r}: expected {what}, got {value.dtype} values and "
                f"{value.reshape(-1)[flat].item()!r}{_at(value.shape, flat)} is not exactly a {target.name} value "
                f"(convert the array yourself, e.g. .astype(numpy.{target.name}), if that rounding is intended)"
            )
    return converted


def check_values(spec: InputSpec, value: np.ndarray, *, companions: bool = False) -> np.ndarray:
    """``value`` (already through ``check_headers``) in the declared dtype, or FeedError naming the first bad value.

    ``companions``: a dynamic input is fed as storage integers with ``.scale`` / ``.zero_point``.
    """
    qtype = spec.qtype
    float_dtype = None if qtype is None else _float_storage_dtype(qtype)
    if qtype is not None and qtype.is_dynamic and companions and float_dtype is not None:  # .npz bytes: its values
        return value.view(float_dtype) if value.dtype == _saved_as(float_dtype) else value
    if qtype is not None and not (qtype.is_dynamic and companions):
        if qtype.is_dynamic:
            return _exactly(spec, value, qtype.expressed_type.np_dtype, f"{spec.describe()}")
        if float_dtype is not None:  # every value of the type is storable
            return value.view(float_dtype) if value.dtype == _saved_as(float_dtype) else value
        lo, hi = qtype.storage_min, qtype.storage_max
        assert lo is not None and hi is not None
        bad = _outside(value, lo, hi)
        if bad is not None:
            raise FeedError(
                f"input {spec.name!r}: value {bad[1]}{_at(value.shape, bad[0])} is outside the {qtype.storage} "
                f"storage range [{lo}, {hi}] of its type {qtype}"
            )
        return value.astype(qtype.storage_type.np_dtype, copy=False)
    if qtype is not None or not spec.is_tensor or spec.dtype is None:
        return value
    want = spec.dtype
    want_kind = kind(want)
    if want_kind in "iu":
        lo, hi = _integer_range(want)
        bad = _outside(value, lo, hi)
        if bad is not None:
            raise FeedError(
                f"input {spec.name!r}: value {bad[1]}{_at(value.shape, bad[0])} is outside the range [{lo}, {hi}] "
                f"of its type {want.name}"
            )
        return value.astype(want, copy=False)
    if want_kind in "fc":
        return _exactly(spec, value, want, spec.describe())
    return value


def check_feeds(specs: Sequence[InputSpec], feeds: Mapping[str, Any]) -> dict[str, Any]:
    """Every feed checked (names, shapes, kinds, values) and in its declared dtype; FeedError otherwise."""
    by_name = {s.name: s for s in specs}
    arrays: dict[str, Any] = {}
    headers: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for name, value in feeds.items():
        spec = by_name.get(name)
        if spec is not None and spec.is_tensor:
            value = np.asarray(value) if not isinstance(value, np.ndarray) else value
            headers[name] = (value.shape, value.dtype)
        else:
            headers[name] = ((), np.dtype(object))  # companions and non-tensor inputs: names only
        arrays[name] = value
    check_headers(specs, headers)
    out: dict[str, Any] = {}
    for name, value in arrays.items():
        spec = by_name.get(name)
        if spec is None or not spec.is_tensor:
            out[name] = value
        else:
            out[name] = check_values(spec, value, companions=f"{name}.scale" in feeds)
    return out
