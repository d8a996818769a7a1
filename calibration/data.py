"""Calibration data: feed dicts from an iterable, an onnxruntime-style reader, or an .npz file.

An .npz holds, per graph input name, the samples stacked on a new leading
axis (``[N, *input_shape]``). It is read one sample at a time straight from
the zip member (the .npy header, then one sample's bytes), so memory does not
grow with N.
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, IO

import numpy as np
from numpy.lib import format as npy_format

from onnx_qtypes.calibration.errors import CalibrationError
from onnx_qtypes.proto.files import require_regular_file

_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError)


def feeds(data: Any) -> Iterator[Mapping[str, np.ndarray]]:
    """Each sample of ``data``: an .npz path, an object with ``get_next()`` (None ends it), or an iterable of dicts."""
    if isinstance(data, (str, os.PathLike)):
        yield from NpzSamples(data)
    elif hasattr(data, "get_next"):
        while (sample := data.get_next()) is not None:
            yield sample
    elif isinstance(data, Iterable) and not isinstance(data, Mapping):
        yield from data
    else:
        raise CalibrationError(f"calibration data: expected an iterable of feed dicts, an object with get_next() "
                               f"or an .npz path, got {type(data).__name__}")


def _read_header(stream: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype]:
    version = npy_format.read_magic(stream)
    if version == (1, 0):
        return npy_format.read_array_header_1_0(stream)
    if version == (2, 0):
        return npy_format.read_array_header_2_0(stream)
    raise ValueError(f".npy format version {version[0]}.{version[1]} is not supported")


class NpzSamples:
    """The samples of an .npz file, one feed dict at a time."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        require_regular_file(self.path, "an .npz file of calibration samples", CalibrationError)
        try:
            with zipfile.ZipFile(self.path) as archive:
                self.members = {n[:-4] if n.endswith(".npy") else n: n for n in archive.namelist()}
                self.headers = {name: self._header(archive, member) for name, member in self.members.items()}
        except CalibrationError:
            raise
        except _READ_ERRORS as exc:
            raise CalibrationError(f"{self.path}: not a readable .npz file ({exc})") from None
        counts = {name: shape[0] for name, (shape, _, _) in self.headers.items()}
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{n!r}: {c}" for n, c in counts.items())
            raise CalibrationError(f"{self.path}: the arrays hold different numbers of samples ({listed})")
        self.count = next(iter(counts.values()), 0)

    def _header(self, archive: zipfile.ZipFile, member: str) -> tuple[tuple[int, ...], np.dtype, bool]:
        with archive.open(member) as stream:
            shape, fortran, dtype = _read_header(stream)
        if dtype.hasobject:
            raise CalibrationError(f"{self.path}: array {member!r} holds Python objects; expected numbers")
        if len(shape) == 0:
            raise CalibrationError(f"{self.path}: array {member!r} is a scalar; expected samples stacked on a "
                                   "leading axis ([N, *input_shape])")
        if fortran and len(shape) > 1:  # sample i is not contiguous: refused rather than read whole
            raise CalibrationError(f"{self.path}: array {member!r} is stored in Fortran order; save it C-ordered")
        return shape, dtype, fortran

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        try:
            with zipfile.ZipFile(self.path) as archive:
                streams = {name: self._open(archive, member) for name, member in self.members.items()}
                try:
                    for _ in range(self.count):
                        yield {name: self._next(name, stream) for name, stream in streams.items()}
                finally:
                    for stream in streams.values():
                        stream.close()
        except _READ_ERRORS as exc:
            raise CalibrationError(f"{self.path}: not a readable .npz file ({exc})") from None

    def _open(self, archive: zipfile.ZipFile, member: str) -> IO[bytes]:
        stream = archive.open(member)
        _read_header(stream)
        return stream

    def _next(self, name: str, stream: IO[bytes]) -> np.ndarray:
        shape, dtype, fortran = self.headers[name]
        sample = shape[1:]
        size = math.prod(sample) * dtype.itemsize
        raw = stream.read(size)
        if len(raw) != size:
            raise CalibrationError(f"{self.path}: array {name!r} ends early")
        return np.frombuffer(raw, dtype=dtype).reshape(sample)
