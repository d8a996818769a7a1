"""Lift a GGUF file (llama.cpp's weights container) into a typed ONNX model: ``onnx-qtypes lift MODEL.gguf OUT``.

A weights container, not an architecture converter: every GGUF tensor becomes a typed initializer (its planes:
``gguf_formats``) and a float graph output named exactly as in the GGUF file, which an ``Identity`` of the typed
initializer computes, so that any runtime reads the weights (after ``lower``) and ``run`` gives gguf's own
dequantized values. Unquantized tensors are initializers that are graph outputs themselves (F32, integers) or
that a Cast widens to the float32 output (F16, BF16), as gguf's dequantizer gives them. The GGUF metadata goes to ``metadata_props`` (key as in the file, value as JSON). A tensor of a format
no quantized type expresses is refused by name before anything is written (proposal/spec/llm_formats.md#lift).

The file is read memory-mapped (gguf's ``GGUFReader``) and written tensor by tensor, each in chunks of rows, to
the external data file ``OUT.data`` when the planes exceed ``INLINE_LIMIT`` bytes (``external`` forces either):
peak memory is a chunk's working set plus one tensor's small planes, whatever the file's size
(benchmarks/bench_gguf.py --layers).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import pathlib
from collections.abc import Iterator
from typing import IO, Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_qtypes.interop.gguf_formats import FORMATS, QK_K, Format, Level, Planes
from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.encoding import marker
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.files import atomic_write, require_regular_file
from onnx_qtypes.proto.model import GGUF_MAGIC, write_view
from onnx_qtypes.proto.packing import pack
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.proto.versions import LLM_FORMATS_VERSION

INLINE_LIMIT = 64 << 20  # planes above this many bytes go to OUT.data
CHUNK_VALUES = 1 << 22  # values unpacked at once (rows of one tensor)
ALIGN = 64  # byte alignment of each tensor in the data file
# unquantized GGML types: the ONNX data type their values keep
PLAIN = {"F32": TensorProto.FLOAT, "F16": TensorProto.FLOAT16, "BF16": TensorProto.BFLOAT16,
         "F64": TensorProto.DOUBLE, "I8": TensorProto.INT8, "I16": TensorProto.INT16, "I32": TensorProto.INT32,
         "I64": TensorProto.INT64}
# suffixes of the initializers a quantized tensor's planes become (the float output keeps the GGUF name)
SUFFIXES = {"codes": ".q", "scale": ".d", "scale_codes": ".q_scales", "scale_d": ".d", "offset": ".m",
            "offset_codes": ".q_mins", "offset_d": ".neg_dmin"}


class GGUFError(QTypesError):
    """A GGUF file that cannot be lifted (unreadable, or holding a tensor no quantized type expresses)."""


@dataclasses.dataclass
class GGUFLiftResult:
    output: str
    tensors: int = 0
    formats: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    external: bool = False
    bytes_read: int = 0
    bytes_written: int = 0

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.formats.items()))
        where = "external data" if self.external else "inline data"
        return f"{self.tensors} GGUF tensor(s) lifted ({kinds}), {self.bytes_written} bytes of {where}"


def is_gguf(path: str | os.PathLike) -> bool:
    """Whether ``path`` is for the GGUF lift: named ``.gguf`` (so that a broken one is told it is no GGUF file, not
    no ONNX model), or a regular file starting with GGUF's magic."""
    if os.fspath(path).lower().endswith(".gguf"):
        return True
    try:
        if not pathlib.Path(path).is_file():
            return False
        with open(path, "rb") as fh:
            return fh.read(4) == GGUF_MAGIC
    except OSError:
        return False


def open_gguf(path: str | os.PathLike) -> Any:
    """gguf's memory-mapped reader of ``path``; GGUFError naming the file (and the tensor, where one is at fault)
    when it is no readable GGUF: not GGUF at all, cut short, a tensor's data outside the file."""
    require_regular_file(path, "a .gguf file", GGUFError)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise GGUFError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head != GGUF_MAGIC:
        found = "it is empty" if not head else f"it starts with {head!r}, not GGUF's magic {GGUF_MAGIC!r}"
        raise GGUFError(f"{path}: not a GGUF file: {found}; give a .gguf file")
    try:
        from gguf import GGUFReader  # noqa: PLC0415 (the optional extra 'gguf')
    except ImportError:
        raise GGUFError(f"{path}: reading GGUF needs the gguf package: pip install 'onnx-qtypes[gguf]'") from None
    try:
        return _located(GGUFReader)(path)
    except GGUFError:
        raise
    except (ValueError, KeyError, IndexError, OSError, OverflowError, MemoryError) as exc:
        raise GGUFError(f"{path}: not a readable GGUF file ({' '.join(str(exc).split())[:160]})") from None


def _located(reader: type) -> type:
    """gguf's reader, made to say where a file is broken: its own reads past the end of the mapping come back
    short (and fail later as an index or reshape error), so every read is bounded first, and each tensor's data
    range is checked against the file, by tensor name, before gguf maps it."""

    class LocatedReader(reader):  # type: ignore[misc, valid-type]
        def __init__(self, path: str | os.PathLike) -> None:
            self._where = os.fspath(path)
            super().__init__(path)

        def _get(self, offset: int, dtype: Any, count: int = 1, override_order: Any = None) -> np.ndarray:
            end = int(offset) + np.dtype(dtype).itemsize * int(count)
            if end > len(self.data):
                raise GGUFError(f"{self._where}: the GGUF header is cut short or corrupt: it reads bytes up to {end} "
                                f"of a {len(self.data)}-byte file (truncated, or a count or length too large)")
            return super()._get(offset, dtype, count, override_order)

        def _build_tensors(self, start_offs: int, fields: list[Any]) -> None:
            from gguf import GGML_QUANT_SIZES, GGMLQuantizationType  # noqa: PLC0415

            for field in fields:
                _, name_data, _, dims, raw_dtype, offset = field.parts
                name = bytes(name_data).decode("utf-8", "backslashreplace")
                try:
                    kind = GGMLQuantizationType(int(raw_dtype[0]))
                except ValueError:
                    raise GGUFError(f"{self._where}: tensor {name!r} has GGML type id {int(raw_dtype[0])}, which "
                                    "the gguf package does not know; nothing written") from None
                block, size = GGML_QUANT_SIZES[kind]
                if len(dims) and int(dims[0]) % block:
                    raise GGUFError(f"{self._where}: tensor {name!r}: its rows hold {int(dims[0])} values, not a "
                                    f"multiple of {kind.name}'s block of {block}; nothing written")
                count = int(np.prod(dims.astype(object)))  # Python integers: no overflow on corrupt dims
                start = int(start_offs) + int(offset[0])
                end = start + count * size // block
                if end > len(self.data):
                    raise GGUFError(f"{self._where}: tensor {name!r}: its data (bytes {start} to {end}) lies beyond "
                                    f"the end of the {len(self.data)}-byte file (truncated, or a corrupt offset "
                                    "or shape); nothing written")
            super()._build_tensors(start_offs, fields)

    return LocatedReader


def tensor_format(tensor: Any) -> Format | str:
    """The ``Format`` of a quantized GGUF tensor, or its GGML type name when it is unquantized (``PLAIN``)."""
    name = tensor.tensor_type.name
    return FORMATS.get(name) or name


def refusal(path: str | os.PathLike, reader: Any) -> str | None:
    """Why the file cannot be lifted as a whole (the first tensor at fault, by name), or None."""
    names = {t.name for t in reader.tensors}
    big_endian = getattr(getattr(reader, "endianess", None), "name", "") == "BIG"
    for tensor in reader.tensors:
        kind = tensor_format(tensor)
        if big_endian and (isinstance(kind, Format) or kind == "BF16"):
            return (f"{path}: tensor {tensor.name!r}: a big-endian GGUF file's {getattr(kind, 'name', kind)} blocks "
                    "keep their float16 / bfloat16 fields in its byte order, which this version does not read "
                    "(its plain F32, F16 and integer tensors it does); nothing written")
        if kind in ("F16", "BF16") and f"{tensor.name}.{kind.lower()}" in names:
            return (f"{path}: tensor {tensor.name!r}: its initializer would be named {tensor.name}.{kind.lower()}, "
                    "which is another tensor of the file; nothing written")
        if isinstance(kind, str) and kind not in PLAIN:
            supported = ", ".join([*FORMATS, *PLAIN])
            return (f"{path}: tensor {tensor.name!r} is GGML type {kind} ({int(tensor.tensor_type)}), which no "
                    f"quantized type of this version expresses (lifted: {supported}); nothing written")
        if isinstance(kind, Format):
            taken = sorted({tensor.name + s for s in SUFFIXES.values()} & names)
            if taken:
                return (f"{path}: tensor {tensor.name!r}: its planes would be named {taken[0]!r}, which is another "
                        "tensor of the file; nothing written")
    return None


def metadata(reader: Any) -> list[tuple[str, str]]:
    """(key, JSON value) of every key-value pair of the file, in file order."""
    out = []
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):  # the header: version and counts
            if key == "GGUF.version":
                out.append(("gguf.version", json.dumps(int(field.parts[field.data[0]][0]))))
            continue
        try:
            value = field.contents()
        except UnicodeDecodeError:
            value = _strings_replaced(field)
        out.append((key, json.dumps(_plain(value), ensure_ascii=False)))
    return out


def _strings_replaced(field: Any) -> Any:
    """A field's value with strings that are not UTF-8 decoded with backslash escapes."""
    values = [bytes(field.parts[i]).decode("utf-8", "backslashreplace") if field.types[-1].name == "STRING"
              else field.parts[i].tolist()[0] for i in field.data]
    return values if field.types[0].name == "ARRAY" else values[0]


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)
    return value


# --- planes of one tensor, chunk by chunk ------------------------------------------------------------------------


def numpy_shape(tensor: Any) -> tuple[int, ...]:
    """The tensor's shape in ONNX (numpy) order: GGUF lists ne0 (the contiguous row) first."""
    return tuple(int(d) for d in reversed(tensor.shape.tolist()))


def block_rows(tensor: Any, fmt: Format) -> np.ndarray:
    """The tensor's bytes as (blocks, bytes per block), memory-mapped."""
    return np.asarray(tensor.data).reshape(-1, fmt.block_bytes)


def chunks(tensor: Any, fmt: Format, chunk_values: int = CHUNK_VALUES) -> Iterator[Planes]:
    """The tensor's planes, a chunk of whole rows at a time (rows stay whole, so every plane's chunk is a run of
    whole rows too)."""
    shape = numpy_shape(tensor)
    per_row = shape[-1] // fmt.block
    blocks = block_rows(tensor, fmt)
    rows = max(1, chunk_values // max(shape[-1], 1))
    for start in range(0, len(blocks), rows * per_row):
        yield fmt.unpack(np.asarray(blocks[start:start + rows * per_row]))


def plane_layout(fmt: Format, shape: tuple[int, ...]) -> list[tuple[str, str, int, tuple[int, ...]]]:
    """(plane, suffix, data type, dims) of every tensor a quantized GGUF tensor of ``shape`` becomes."""
    k = shape[-1]
    lead = shape[:-1]
    sub = (*lead, k // fmt.sub_block)
    sup = (*lead, k // QK_K) if fmt.block == QK_K else None
    out = [("codes", SUFFIXES["codes"], marker(STORAGE_TYPES[fmt.storage].data_type), shape)]
    for field in ("scale", "offset"):
        kind = getattr(fmt, field)
        if kind is None:
            continue
        if isinstance(kind, Level):
            out.append((f"{field}_codes", SUFFIXES[f"{field}_codes"], marker(STORAGE_TYPES[kind.storage].data_type),
                        sub))
            out.append((f"{field}_d", SUFFIXES[f"{field}_d"], TensorProto.FLOAT16, sup))
        else:
            data_type = TensorProto.FLOAT8E8M0 if kind == "e8m0" else TensorProto.FLOAT16
            out.append((field, SUFFIXES[field], data_type, sub))
    return out


def plane_array(fmt: Format, planes: Planes, plane: str) -> np.ndarray:
    """One plane of some whole rows' blocks, flat in row-major order: storage integers (float4 bit patterns),
    float16 values (a ``Level``'s super-block scale negated where it stands for -dmin) or E8M0 bytes."""
    if plane == "codes":
        return planes.codes.reshape(-1)
    field, _, part = plane.partition("_")
    if part == "d":
        d = getattr(planes, f"{field}_d").astype(np.float16).reshape(-1)
        return -d if getattr(fmt, field).negate else d  # -dmin: the sign bit, exact
    values = getattr(planes, field).reshape(-1)
    if part == "codes":
        return values
    return values.astype(np.uint8 if getattr(fmt, field) == "e8m0" else np.float16)


def plane_bytes(fmt: Format, planes: Planes, plane: str) -> bytes:
    """One plane of a chunk as the raw bytes of its ONNX tensor (4- and 2-bit codes packed low bits first)."""
    return plane_raw(fmt, plane, plane_array(fmt, planes, plane))


def plane_raw(fmt: Format, plane: str, values: np.ndarray) -> bytes:
    """A plane's values (row-major) as raw_data bytes."""
    if plane == "codes":
        return pack(np.ravel(values), STORAGE_TYPES[fmt.storage].bits).tobytes()
    field, _, part = plane.partition("_")
    if part == "codes":
        return pack(np.ravel(values), STORAGE_TYPES[getattr(fmt, field).storage].bits).tobytes()
    return np.ascontiguousarray(values).tobytes()



# the float16 fields of a block, by plane: GGUF's names for them
HALF_FIELDS = {"scale": "d", "scale_d": "d", "offset": "m", "offset_d": "dmin"}


def check_chunk(path: str | os.PathLike, name: str, fmt: Format, planes: Planes, first_block: int = 0) -> None:
    """GGUFError for a block the type cannot hold (``first_block``: the chunk's first block in the tensor): an MXFP4
    scale byte 0xFF (NaN in OCP MX, 2^128 in ggml), or a float16 ``d``, ``dmin`` or ``m`` that is infinite or NaN
    (scales and offsets are finite: QT101, QT140)."""
    if fmt.scale == "e8m0" and (planes.scale == 0xFF).any():
        block = first_block + int(np.argmax((planes.scale == 0xFF).any(axis=1)))
        raise GGUFError(f"{path}: tensor {name!r}: block {block}: its MXFP4 scale is 0xFF, which OCP MX defines as "
                        "NaN and ggml reads as 2^128; the type refuses it (nothing written)")
    for plane, field in HALF_FIELDS.items():
        values = getattr(planes, plane)
        if values is None or values.dtype != np.float16 or np.isfinite(values).all():
            continue
        bad = ~np.isfinite(values).reshape(len(values), -1).all(axis=1)
        block = first_block + int(np.argmax(bad))
        value = values.reshape(len(values), -1)[bad][0]
        value = value[~np.isfinite(value)][0]
        raise GGUFError(f"{path}: tensor {name!r}: block {block}: its float16 {field} is {value}, and a type's scales "
                        "and offsets are finite; nothing written")


# --- the typed model ---------------------------------------------------------------------------------------------


def type_messages(fmt: Format, name: str, shape: tuple[int, ...], axis: int | None = None
                  ) -> dict[str, pb.QuantizedType]:
    """The QuantizedType of the codes initializer and of each quantized parameter tensor, by initializer name
    (blocks along ``axis``, by default the last: GGUF's rows)."""
    axis = len(shape) - 1 if axis is None else axis
    codes = pb.QuantizedType(storage_type=STORAGE_TYPES[fmt.storage].data_type, expressed_type=TensorProto.FLOAT,
                             axis=axis, block_size=fmt.sub_block, version=LLM_FORMATS_VERSION)
    _range(codes, fmt.storage, fmt.lo, fmt.hi)
    codes.codebook.extend(fmt.codebook)
    out = {name + SUFFIXES["codes"]: codes}
    for field in ("scale", "offset"):
        kind = getattr(fmt, field)
        if kind is None:
            continue
        if isinstance(kind, Level):
            level_name = name + SUFFIXES[f"{field}_codes"]
            setattr(codes, f"{field}_tensor", level_name)
            level = pb.QuantizedType(storage_type=STORAGE_TYPES[kind.storage].data_type,
                                     expressed_type=TensorProto.FLOAT, axis=axis, block_size=kind.per,
                                     scale_tensor=name + SUFFIXES[f"{field}_d"], version=LLM_FORMATS_VERSION)
            _range(level, kind.storage, kind.lo, kind.hi)
            out[level_name] = level
        else:
            setattr(codes, f"{field}_tensor", name + SUFFIXES[field])
    if fmt.scale == "e8m0":
        codes.schema = pb.SYMMETRIC_POW2_SCALE  # every E8M0 value is 2^k
    elif fmt.offset is None:
        codes.schema = pb.SYMMETRIC  # every zero point is 0 and nothing is added
    return out


def typed_tensors(fmt: Format, name: str, data: np.ndarray, shape: tuple[int, ...], *, transpose: bool = False
                  ) -> tuple[list[TensorProto], list[onnx.ValueInfoProto]]:
    """The initializers and declarations of one GGUF tensor (its bytes ``data``, numpy ``shape``) in memory:
    blocks along the last axis, or with ``transpose`` (2-D) along axis 0, the layout of MatMul's B[K, N] for a
    GGUF weight [N, K]."""
    planes = fmt.unpack(np.asarray(data).reshape(-1, fmt.block_bytes))
    layout = plane_layout(fmt, shape)
    types = type_messages(fmt, name, shape[::-1] if transpose else shape, 0 if transpose else None)
    inits, infos = [], []
    for plane, suffix, data_type, dims in layout:
        values = plane_array(fmt, planes, plane).reshape(dims)
        if transpose:
            values, dims = values.T, dims[::-1]
        init = _initializer(name + suffix, data_type, dims)
        init.raw_data = plane_raw(fmt, plane, np.ascontiguousarray(values))
        inits.append(init)
        if (msg := types.get(name + suffix)) is not None:
            infos.append(declare(name + suffix, data_type, dims, msg))
    return inits, infos


def _range(msg: pb.QuantizedType, storage: str, lo: int, hi: int) -> None:
    st = STORAGE_TYPES[storage]
    if st.is_float:
        return
    if lo != st.min:
        msg.storage_min = lo
    if hi != st.max:
        msg.storage_max = hi


def declare(name: str, data_type: int, dims: tuple[int, ...], msg: pb.QuantizedType | None) -> onnx.ValueInfoProto:
    """A value_info of ``name``: plain, or quantized with ``msg`` and the storage type's marker."""
    vi = helper.make_tensor_value_info(name, data_type if msg is None else msg.storage_type, list(dims))
    if msg is not None:
        view = pb.TensorTypeView()
        view.ParseFromString(vi.type.tensor_type.SerializeToString())
        view.elem_type = marker(msg.storage_type)
        view.quantization.CopyFrom(msg)
        write_view(vi.type.tensor_type, view)
    return vi


class _Sink:
    """Where tensor bytes go: raw_data of the TensorProto (inline) or the data file (external, aligned)."""

    def __init__(self, fh: IO[bytes] | None, location: str) -> None:
        self.fh, self.location, self.offset, self.written = fh, location, 0, 0

    def place(self, tensor: TensorProto, parts: list[bytes] | Iterator[bytes]) -> None:
        if self.fh is None:
            tensor.raw_data = b"".join(parts)
            self.written += len(tensor.raw_data)
            return
        pad = -self.offset % ALIGN
        if pad:
            self.fh.write(b"\0" * pad)
            self.offset += pad
        start = self.offset
        for part in parts:
            self.fh.write(part)
            self.offset += len(part)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.location), ("offset", str(start)), ("length", str(self.offset - start))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        self.written += self.offset - start


def _initializer(name: str, data_type: int, dims: tuple[int, ...]) -> TensorProto:
    tensor = TensorProto(name=name, data_type=data_type)
    tensor.dims.extend(dims)
    return tensor


def _lift_quantized(path: str | os.PathLike, tensor: Any, fmt: Format, sink: _Sink, graph: onnx.GraphProto,
                    chunk_values: int) -> None:
    name, shape = tensor.name, numpy_shape(tensor)
    layout = plane_layout(fmt, shape)
    small: dict[str, list[bytes]] = {plane: [] for plane, *_ in layout if plane != "codes"}
    codes = _initializer(name + SUFFIXES["codes"], layout[0][2], shape)

    def code_parts() -> Iterator[bytes]:  # the codes stream to the sink; the small planes wait in memory
        first = 0
        for planes in chunks(tensor, fmt, chunk_values):
            check_chunk(path, name, fmt, planes, first)
            first += len(planes.codes)
            for plane in small:
                small[plane].append(plane_bytes(fmt, planes, plane))
            yield plane_bytes(fmt, planes, "codes")

    sink.place(codes, code_parts())
    graph.initializer.append(codes)
    types = type_messages(fmt, name, shape)
    for plane, suffix, data_type, dims in layout[1:]:
        init = _initializer(name + suffix, data_type, dims)
        sink.place(init, small.pop(plane))
        graph.initializer.append(init)
    for plane, suffix, data_type, dims in layout:
        msg = types.get(name + suffix)
        if msg is not None:
            graph.value_info.append(declare(name + suffix, data_type, dims, msg))
    graph.node.append(helper.make_node("Identity", [name + SUFFIXES["codes"]], [name], name=f"dequantize {name}"))
    graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))


def _lift_plain(tensor: Any, kind: str, sink: _Sink, graph: onnx.GraphProto) -> None:
    """An unquantized tensor: an initializer that is the graph output itself, or for F16 / BF16 one that a Cast
    turns into the float32 output (exact), as gguf's dequantizer reads them."""
    shape = numpy_shape(tensor)
    data = np.asarray(tensor.data)
    widened = kind in ("F16", "BF16")
    init = _initializer(tensor.name + (f".{kind.lower()}" if widened else ""), PLAIN[kind], shape)
    # little-endian bytes, ONNX's raw_data order (a big-endian file's '>f4' too); BF16 arrives as its bytes
    sink.place(init, [np.ascontiguousarray(data, data.dtype.newbyteorder("<")).tobytes()])
    graph.initializer.append(init)
    if widened:
        graph.node.append(helper.make_node("Cast", [init.name], [tensor.name], to=TensorProto.FLOAT,
                                           name=f"widen {tensor.name}"))
    graph.output.append(helper.make_tensor_value_info(tensor.name, TensorProto.FLOAT if widened else PLAIN[kind],
                                                      list(shape)))


def opset_for(formats: set[str]) -> tuple[int, int]:
    """(IR, opset) the typed model needs: 2-bit storage from opset 25, FLOAT4E2M1 / FLOAT8E8M0 from IR 11."""
    if any(FORMATS[f].storage in ("int2", "uint2") or any(
            isinstance(k, Level) and k.storage in ("int2", "uint2") for k in (FORMATS[f].scale, FORMATS[f].offset))
            for f in formats if f in FORMATS):
        return 13, 25
    if "MXFP4" in formats:
        return 11, 23
    return 10, 21


def lift_gguf(source: str | os.PathLike, output: str | os.PathLike, *, external: bool | None = None,
              chunk_values: int = CHUNK_VALUES) -> GGUFLiftResult:
    """Write the typed model of GGUF file ``source`` to ``output`` (external data ``<output>.data`` when the planes
    pass ``INLINE_LIMIT`` bytes, or as ``external`` says). Nothing is written when a tensor cannot be lifted."""
    reader = open_gguf(source)
    if problem := refusal(source, reader):
        raise GGUFError(problem)
    out = pathlib.Path(output)
    result = GGUFLiftResult(str(out))
    total = sum(int(t.n_bytes) for t in reader.tensors)
    result.external = external if external is not None else total * 5 // 4 > INLINE_LIMIT
    graph = helper.make_graph([], "gguf", [], [])
    kinds = set()
    location = f"{out.name}.data"
    with atomic_write(out.parent / location) if result.external else _nothing() as fh:
        sink = _Sink(fh, location)
        for tensor in reader.tensors:
            kind = tensor_format(tensor)
            if isinstance(kind, Format) and int(tensor.n_elements) == 0:  # no block to type: an empty float32
                _lift_plain(tensor, "F32", sink, graph)                     # tensor, which is what gguf gives
                result.formats["F32"] += 1  # counted as written
            elif isinstance(kind, Format):
                _lift_quantized(source, tensor, kind, sink, graph, chunk_values)
                kinds.add(kind.name)
                result.formats[kind.name] += 1
            else:
                _lift_plain(tensor, kind, sink, graph)
                result.formats[kind] += 1
            result.tensors += 1
            result.bytes_read += int(tensor.n_bytes)
            release(reader, tensor)
    result.bytes_written = sink.written
    ir, opset = opset_for(kinds)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir,
                              producer_name="onnx-qtypes lift (GGUF)")
    for key, value in [("onnx_qtypes.source", "GGUF"), *metadata(reader)]:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    with atomic_write(out) as fh:
        fh.write(model.SerializeToString())
    return result


def release(reader: Any, tensor: Any) -> None:
    """Drop the tensor's pages from this process's resident memory once it is written: they are clean pages of
    the mapped file, read again from it if ever needed, and keeping them would make the lift's resident size grow
    with the file (linux; elsewhere a no-op)."""
    mapped = getattr(reader.data, "_mmap", None)
    if mapped is None or not hasattr(mapped, "madvise") or not hasattr(__import__("mmap"), "MADV_DONTNEED"):
        return
    import mmap  # noqa: PLC0415

    start = int(tensor.data_offset) // mmap.PAGESIZE * mmap.PAGESIZE
    end = int(tensor.data_offset) + int(tensor.n_bytes)
    try:
        mapped.madvise(mmap.MADV_DONTNEED, start, end - start)
    except (OSError, ValueError):  # a mapping that does not allow it: only memory is at stake
        pass


class _nothing:  # noqa: N801 - a context manager standing in for the data file of an inline model
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
