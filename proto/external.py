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
import os
import pathlib
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

import numpy as np
from onnx import TensorProto

BASEPATH = "basepath"  # onnx.external_data_helper's key for the folder a location is relative to
_CHUNK = 64 << 20  # bytes copied at once
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


def tensor_bytes(tensor: TensorProto) -> np.ndarray:
    """A lazy tensor's bytes, uint8, mapped read-only from its file (no copy; an empty array for no bytes)."""
    path, offset, length = region(tensor)
    if length == 0:
        return np.zeros(0, np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(length,))


def copy_into(tensor: TensorProto, out: IO[bytes]) -> int:
    """Append a lazy tensor's bytes to ``out`` in chunks; the count written."""
    path, offset, length = region(tensor)
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


def spill_chunks(tensor: TensorProto, chunks: Iterable[bytes]) -> bool:
    """Write ``tensor``'s data, given in pieces, into the open spill folder (it becomes a lazy external tensor
    holding their concatenation), never all of it in memory; False, ``chunks`` untouched, without a folder."""
    folder = _SPILL.get()
    if folder is None:
        return False
    _spilled(tensor, folder, chunks)
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


__all__ = ["BASEPATH", "IN_ORDER", "attach", "copy_into", "in_order", "is_lazy", "spill", "spill_chunks", "spill_folder", "stored_length", "tensor_bytes"]
