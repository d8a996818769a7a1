"""External data read where it lies: a model's weights stay in their files until a value is needed.

A model of billions of weights keeps them in external data (ONNX's ``data_location: EXTERNAL``). ``load(path,
load_external_data="lazy")`` reads the graph and leaves every weight in its file: each external tensor is
checked as a loaded one would be (its location inside the model's folder, its offset and length inside the
file, its length what its dims need) and gets ONNX's own ``basepath`` entry, the absolute folder its location is
relative to, so that the tensor alone says where its bytes are. Then:

- ``tensor_bytes`` maps a tensor's bytes (numpy over ``mmap``: pages are read when touched, and given back when
  the array is dropped); ``proto.encoding.tensor_array`` reads values through it;
- ``save`` (``write_lazy``) copies each such tensor into the new model's data file in chunks, and ``basepath``
  never reaches a written file;
- ``spill`` moves a tensor a step computes (the lift's repacked MatMulNBits weight) out of memory into a file
  of the ``spill_folder`` the command opened, read back the same way; without one it stays in memory.

So a command on a 7-billion-weight model holds one weight at a time, not all of them.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import pathlib
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import numpy as np
from onnx import TensorProto

BASEPATH = "basepath"  # onnx.external_data_helper's key for the folder a location is relative to
_CHUNK = 4 << 20  # bytes copied at once
_SPILL_THRESHOLD = 1 << 20  # tensors smaller than this stay in memory


def entries(tensor: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in tensor.external_data}


def is_lazy(tensor: TensorProto) -> bool:
    """Whether ``tensor``'s data is in a file this process can read (external, with its folder known)."""
    return tensor.data_location == TensorProto.EXTERNAL and any(e.key == BASEPATH for e in tensor.external_data)


def region(tensor: TensorProto) -> tuple[pathlib.Path, int, int]:
    """(file, offset, length) of a lazy tensor's bytes (the length to the end of the file when not given)."""
    found = entries(tensor)
    path = pathlib.Path(found[BASEPATH]) / found["location"]
    offset = int(found.get("offset") or 0)
    length = int(found["length"]) if found.get("length") else path.stat().st_size - offset
    return path, offset, length


def attach(tensor: TensorProto, folder: pathlib.Path) -> None:
    """Give an external tensor (its location and extent checked by the caller) the folder it is relative to."""
    kept = [(e.key, e.value) for e in tensor.external_data if e.key != BASEPATH]
    del tensor.external_data[:]
    for key, value in [*kept, (BASEPATH, str(folder.resolve()))]:
        tensor.external_data.add(key=key, value=value)


def extent_problem(tensor: TensorProto, path: pathlib.Path) -> str | None:
    """What onnx's reader says when a tensor's offset or length lies beyond its file (read_external_data's
    bounds), or None."""
    found = entries(tensor)
    size = path.stat().st_size
    offset = int(found.get("offset") or 0)
    if found.get("offset") is not None and offset > size:
        return f"External data offset ({offset}) exceeds file size ({size}) for tensor {tensor.name!r}"
    if found.get("length") is not None and int(found["length"]) > size - offset:
        return (f"External data length ({int(found['length'])}) exceeds available data ({size - offset} bytes from "
                f"offset {offset}) for tensor {tensor.name!r}")
    return None


def stored_length(tensor: TensorProto) -> int:
    """How many bytes a lazy tensor has in its file (what loading it would put in raw_data)."""
    return region(tensor)[2]


def readable_region(tensor: TensorProto) -> tuple[pathlib.Path, int, int]:
    """``region``, its bytes written first when a step deferred them (``spill_deferred``): for the readers of the
    bytes (``region`` alone reads no byte, and makes none)."""
    path, offset, length = region(tensor)
    if str(path) in _DEFERRED:
        try:
            with open(path, "wb") as out:
                _made_into(tensor, str(path), out)
        except BaseException:  # no half-made file is ever read: the next reader makes it again
            path.unlink(missing_ok=True)
            raise
        _DEFERRED.pop(str(path), None)
    return path, offset, length


def _made_into(tensor: TensorProto, path: str, out: IO[bytes]) -> int:
    """Write the bytes a step deferred for ``path`` to ``out``; their count."""
    chunks, size = _DEFERRED[path]
    written = 0
    for chunk in chunks():
        out.write(chunk)
        written += len(chunk)
    if written != size:  # the step's own arithmetic: never fewer bytes than the tensor says
        raise RuntimeError(f"deferred tensor {tensor.name!r}: {written} bytes made, {size} announced")
    return written


def tensor_bytes(tensor: TensorProto) -> np.ndarray:
    """A lazy tensor's bytes, uint8, mapped read-only from its file (no copy; an empty array for no bytes)."""
    path, offset, length = readable_region(tensor)
    if length == 0:
        return np.zeros(0, np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(length,))


def copy_into(tensor: TensorProto, out: IO[bytes]) -> int:
    """Append a lazy tensor's bytes to ``out`` in chunks; the count written. Bytes a step deferred and nothing read
    yet are streamed from their maker (``save`` of a lifted MatMulNBits model: written once, not to the spill folder
    and back); they stay deferred for a later reader."""
    path, offset, length = region(tensor)
    if str(path) in _DEFERRED:
        return _made_into(tensor, str(path), out)
    with open(path, "rb") as source:
        source.seek(offset)
        left = length
        while left:
            chunk = source.read(min(left, _CHUNK))
            if not chunk:
                break
            out.write(chunk)
            left -= len(chunk)
    return length - left


# --- spilling what a step computes ------------------------------------------------------------------------------

_SPILL: contextvars.ContextVar[pathlib.Path | None] = contextvars.ContextVar("onnx_qtypes_spill", default=None)
# the files of every open spill folder whose bytes a step deferred, by path: (their chunks' maker, their size). One
# registry for all folders: a folder opened inside another (diagnose on a model lifted in an open folder) reads the
# outer folder's deferred tensors too; a folder's entries go when it closes
_DEFERRED: dict[str, tuple[Callable[[], Iterable[bytes]], int]] = {}
_DEFERRED_NAMES = itertools.count()  # a name never given twice in the process (files are made, entries dropped)


@contextlib.contextmanager
def spill_folder(parent: str | os.PathLike | None = None) -> Iterator[pathlib.Path | None]:
    """While open, ``spill`` moves large computed tensors into a temporary folder (in ``parent``), removed on
    leaving: whatever holds those tensors must be written (``save``) before then. Where no folder can be made
    at all, tensors stay in memory (None)."""
    made = None
    for where in (parent, None):  # no such folder, or not ours to write in (/dev): the system's temporary folder
        try:
            made = tempfile.TemporaryDirectory(prefix=".qtypes-spill-", dir=where)
            break
        except OSError:
            continue
    if made is None:
        yield None
        return
    with made as folder:
        token = _SPILL.set(pathlib.Path(folder))
        try:
            yield pathlib.Path(folder)
        finally:
            _SPILL.reset(token)
            inside = str(pathlib.Path(folder)) + os.sep
            for path in [p for p in _DEFERRED if p.startswith(inside)]:
                del _DEFERRED[path]


IN_ORDER = "onnx_qtypes.in_order"  # a spilled tensor save writes where it writes those held in memory


def spill(tensor: TensorProto, *, in_order: bool = False) -> None:
    """Move ``tensor``'s raw_data into the open spill folder (it becomes a lazy external tensor); nothing
    without an open folder, or for a tensor under 1 MiB. ``in_order``: ``save`` writes it among the tensors held
    in memory, as it would have written it unspilled (the data file is laid out the same either way)."""
    folder = _SPILL.get()
    if folder is None or not tensor.HasField("raw_data") or len(tensor.raw_data) < _SPILL_THRESHOLD:
        return
    raw = tensor.raw_data
    tensor.ClearField("raw_data")
    _spilled(tensor, folder, (raw,))
    if in_order:
        tensor.external_data.add(key=IN_ORDER, value="1")


def in_order(tensor: TensorProto) -> bool:
    """Whether ``tensor`` was spilled with ``in_order``."""
    return tensor.data_location == TensorProto.EXTERNAL and any(e.key == IN_ORDER for e in tensor.external_data)


def spill_chunks(tensor: TensorProto, chunks: Iterable[bytes], size: int) -> bool:
    """Write ``tensor``'s data, given in pieces (``size`` bytes in all), into the open spill folder (it becomes a
    lazy external tensor holding their concatenation), never all of it in memory; False, ``chunks`` untouched,
    without a folder or for less than 1 MiB (as ``spill``)."""
    folder = _SPILL.get()
    if folder is None or size < _SPILL_THRESHOLD:
        return False
    _spilled(tensor, folder, chunks)
    return True


def spill_deferred(tensor: TensorProto, chunks: Callable[[], Iterable[bytes]], size: int) -> bool:
    """As ``spill_chunks``, but ``chunks()`` runs only when the tensor's bytes are first read (``tensor_bytes``,
    ``copy_into``, ``save``): a weight a step computes and nobody reads (check and show of a MatMulNBits model
    read its types, not its codes) is never written. What ``chunks`` reads must stay as it is until then."""
    folder = _SPILL.get()
    if folder is None or size < _SPILL_THRESHOLD:
        return False
    path = folder / f"deferred{next(_DEFERRED_NAMES)}.data"
    _DEFERRED[str(path)] = (chunks, size)
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", path.name), ("offset", "0"), ("length", str(size)), (BASEPATH, str(folder))):
        tensor.external_data.add(key=key, value=value)
    return True


def _spilled(tensor: TensorProto, folder: pathlib.Path, chunks: Iterable[bytes]) -> None:
    path = folder / "spilled.data"
    with open(path, "ab") as out:
        offset = out.tell()
        for chunk in chunks:
            out.write(chunk)
        length = out.tell() - offset
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in (("location", path.name), ("offset", str(offset)), ("length", str(length)),
                       (BASEPATH, str(folder))):
        tensor.external_data.add(key=key, value=value)


__all__ = ["BASEPATH", "IN_ORDER", "attach", "copy_into", "in_order", "is_lazy", "readable_region", "spill",
           "spill_chunks", "spill_deferred", "spill_folder", "stored_length", "tensor_bytes", "varint"]


# --- writing a model as if its lazy tensors had been loaded ------------------------------------------------------

_LEN = 2  # protobuf's wire type of length-delimited fields
_GRAPH_FIELD, _INITIALIZER_FIELD, _RAW_DATA_FIELD = 7, 5, 9  # ModelProto.graph, GraphProto.initializer, raw_data


def loaded_size(model) -> int | None:
    """The bytes ``model`` would serialize to with every lazy tensor loaded (as ``load`` reads it), or None when a
    lazy tensor sits elsewhere than among the main graph's initializers (``write_loaded`` writes only those)."""
    lazy = sum(1 for t in model.graph.initializer if is_lazy(t))
    if sum(1 for t in _every_tensor(model) if is_lazy(t)) != lazy:
        return None
    length = _field_length(_graph_pieces(model.graph))
    return len(_shell(model, "graph")) + len(_tag(_GRAPH_FIELD)) + len(varint(length)) + length


def write_loaded(model, out: IO[bytes]) -> None:
    """Write ``model`` serialized, byte for byte as ``SerializeToString`` would with its lazy tensors loaded, each
    tensor's data copied from its file in chunks (never all in memory); ``loaded_size`` must not be None."""
    graph = _graph_pieces(model.graph)
    before, after = _split(_shell(model, "graph"), _GRAPH_FIELD)
    out.write(before + _tag(_GRAPH_FIELD) + varint(_field_length(graph)))
    for piece in graph:
        if isinstance(piece, bytes):
            out.write(piece)
        else:
            copy_into(piece, out)
    out.write(after)


def _every_tensor(model) -> Iterator[TensorProto]:
    from onnx.external_data_helper import _get_all_tensors  # noqa: PLC0415 - onnx's own walk, as save uses it

    return _get_all_tensors(model)


def _graph_pieces(graph) -> list:
    """The graph's serialization as bytes, with each lazy tensor's data left as the tensor itself (to copy)."""
    before, after = _split(_shell(graph, "initializer"), _INITIALIZER_FIELD)
    pieces: list = [before]
    for tensor in graph.initializer:
        if not is_lazy(tensor):
            body = tensor.SerializeToString()
            pieces.append(_tag(_INITIALIZER_FIELD) + varint(len(body)) + body)
            continue
        loaded = TensorProto()
        loaded.CopyFrom(tensor)
        del loaded.external_data[:]
        if in_order(tensor):  # computed and spilled: as it would have been written held in memory
            loaded.ClearField("data_location")
        else:
            loaded.data_location = TensorProto.DEFAULT  # as onnx's loader leaves a loaded tensor
        head, tail = _split(loaded.SerializeToString(), _RAW_DATA_FIELD)
        length = stored_length(tensor)
        raw_head = _tag(_RAW_DATA_FIELD) + varint(length)
        size = len(head) + len(raw_head) + length + len(tail)
        pieces += [_tag(_INITIALIZER_FIELD) + varint(size) + head + raw_head, tensor, tail]
    pieces.append(after)
    return pieces


def _field_length(pieces: list) -> int:
    return sum(len(p) if isinstance(p, bytes) else stored_length(p) for p in pieces)


def _shell(message, field: str) -> bytes:
    """``message`` serialized without ``field`` (a copy: small, its lazy tensors hold no data)."""
    shell = type(message)()
    shell.CopyFrom(message)
    shell.ClearField(field)
    return shell.SerializeToString()


def _split(data: bytes, field: int) -> tuple[bytes, bytes]:
    """``data`` (a message's bytes) cut where a field numbered ``field`` goes: after every known field of a lower
    number (protobuf writes known fields in number order)."""
    at = 0
    while at < len(data):
        start = at
        key, at = _read_varint(data, at)
        if key >> 3 > field:
            return data[:start], data[start:]
        wire = key & 7
        if wire == 0:
            _, at = _read_varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 2:
            length, at = _read_varint(data, at)
            at += length
        elif wire == 5:
            at += 4
        else:
            raise ValueError(f"wire type {wire} is not written by protobuf")
    return data, b""


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def varint(value: int) -> bytes:
    """Protobuf's base-128 encoding of a non-negative integer (a field's length, a tag)."""
    if value < 0x80:
        return _ONE_BYTE[value]  # (most lengths and tags: thousands of declarations are written so)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_ONE_BYTE = [bytes((v,)) for v in range(0x80)]


def _tag(field: int) -> bytes:
    return varint(field << 3 | _LEN)


@contextlib.contextmanager
def checkable(model) -> Iterator:
    """What ``onnx.checker.check_model`` can check: ``model`` itself, or, when it holds lazy tensors (whose
    locations are relative to folders the checker does not know), the path of a copy in a temporary folder
    where an empty file stands for each data file: the checker asks only that the location name a regular file
    beside the model, and the reader checked each tensor's file and extent already (nothing is read or copied)."""
    if not any(is_lazy(t) for t in _every_tensor(model)):
        yield model
        return
    from onnx import ModelProto  # noqa: PLC0415

    copy = ModelProto()
    copy.CopyFrom(model)  # small: lazy tensors hold no data
    with tempfile.TemporaryDirectory(prefix=".qtypes-check-") as folder:
        links: dict[pathlib.Path, str] = {}
        for tensor in _every_tensor(copy):
            if not is_lazy(tensor):
                continue
            path, offset, length = region(tensor)
            name = links.get(path)
            if name is None:
                name = links[path] = f"data{len(links)}"
                open(os.path.join(folder, name), "wb").close()  # noqa: SIM115 - the checker only asks for a file
            del tensor.external_data[:]
            for key, value in (("location", name), ("offset", str(offset)), ("length", str(length))):
                tensor.external_data.add(key=key, value=value)
        target = os.path.join(folder, "model.onnx")
        with open(target, "wb") as out:
            out.write(copy.SerializeToString())
        yield target
