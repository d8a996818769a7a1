"""A type's referenced parameters read like a tuple, held as their initializer holds them.

A 7B model's blocked weights have tens of millions of scales. As a tuple of Python floats each costs 32 bytes (the
float and its slot), four times the weight's half byte; ``ParameterValues`` keeps them as the initializer stores
them instead: a numpy array in the initializer's own type (float16 scales: 2 bytes each), or, for an initializer
left in its external file (``proto.external``), nothing at all: the values are mapped from the file on each use
and the pages given back after. Every use sees Python floats (ints for zero points), the same values a tuple
would hold: indexing, slicing (a tuple), iteration, ``len``, ``==`` and ``hash`` with tuples of the same values
alike; ``np.asarray`` gives the float64 (int64) values in one step.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

_CHUNK = 1 << 16  # values converted to Python objects at once while iterating


class ParameterValues(Sequence):
    """Read-only scales (``kind`` float) or zero points (``kind`` int) of one type, as a tuple of them reads."""

    __slots__ = ("_hash", "_kind", "_load", "_size")

    def __init__(self, load: Callable[[], np.ndarray], size: int, kind: type) -> None:
        self._load, self._size, self._kind, self._hash = load, size, kind, None

    @classmethod
    def of_array(cls, values: np.ndarray, kind: type) -> ParameterValues:
        """Values held in memory, flat, in their own dtype (converted on each use, never stored wider)."""
        flat = np.asarray(values).reshape(-1)
        return cls(lambda: flat, int(flat.size), kind)

    @classmethod
    def mapped(cls, path: pathlib.Path, offset: int, count: int, dtype: np.dtype, kind: type) -> ParameterValues:
        """Values of ``dtype`` at ``offset`` of file ``path``, mapped on each use (nothing held between uses)."""

        def load() -> np.ndarray:
            if count == 0:
                return np.zeros(0, dtype)
            return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))

        return cls(load, count, kind)

    @classmethod
    def zeros(cls, count: int) -> ParameterValues:
        """``count`` zero points of 0 (none written), in no memory."""
        return cls(lambda: np.broadcast_to(np.int64(0), (count,)), count, int)

    @property
    def kind(self) -> type:
        return self._kind

    @property
    def size(self) -> int:
        return self._size

    def held(self) -> np.ndarray:
        """The values in their own dtype, as held (a file's mapped, not read): read-only."""
        return self._load()

    def array(self) -> np.ndarray:
        """The values as float64 (int64) in a new array: one tensor's worth, dropped by the caller after use."""
        return self._convert(self._load())

    def _convert(self, raw: np.ndarray) -> np.ndarray:
        return raw.astype(np.float64 if self._kind is float else np.int64)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = self.array()
        return values if dtype is None else values.astype(dtype)

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __getitem__(self, index: Any) -> Any:
        raw = self._load()
        if isinstance(index, slice):
            return tuple(self._convert(raw[index]).tolist())
        return self._kind(raw[index])  # numpy's IndexError out of range; float16 -> float is exact

    def __iter__(self) -> Iterator[Any]:
        raw = self._load()
        for start in range(0, self._size, _CHUNK):
            yield from self._convert(raw[start : start + _CHUNK]).tolist()

    def __contains__(self, value: object) -> bool:
        return any(v == value for v in self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (ParameterValues, tuple)):
            return NotImplemented
        if len(other) != self._size:
            return False
        if isinstance(other, tuple) and not all(type(v) in (int, float) for v in other[:1]):
            return tuple(self) == other
        try:
            theirs = np.asarray(other, dtype=np.float64 if self._kind is float else None)
        except (OverflowError, ValueError, TypeError):
            return tuple(self) == other
        return bool(np.array_equal(self.array(), theirs))  # NaN unequal, as fresh float objects are

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self))  # equal to an equal tuple's
        return self._hash

    def __add__(self, other: object) -> tuple:
        return tuple(self) + tuple(other) if isinstance(other, (tuple, ParameterValues)) else NotImplemented

    def __radd__(self, other: object) -> tuple:
        return other + tuple(self) if isinstance(other, tuple) else NotImplemented

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple:
        return (tuple, (tuple(self),))  # pickled (sent to a worker) as the tuple it reads as


def values_array(values: Sequence[Any], dtype: Any) -> np.ndarray:
    """``values`` (a tuple or ParameterValues) as a flat numpy array of ``dtype``, in one step either way."""
    if isinstance(values, (ParameterValues, np.ndarray)):
        return np.asarray(values, dtype=dtype).reshape(-1)
    return np.fromiter(values, dtype=dtype, count=len(values))


def scales_as_stated(values: Sequence[Any], dtype: Any, expressed: Any) -> np.ndarray:
    """A type's scales as a scale input of ``dtype`` must state them, in float64: what a boundary QuantizeLinear /
    DequantizeLinear's scale must equal (validity.md#qt307), for the checker, the reference and lower alike. In the
    type's ``expressed`` dtype, each is the nearest value of that dtype (a double scale no float32 holds: QT102);
    in any other dtype (FLOAT8E8M0's powers of two), exactly the type's."""
    wide = values_array(values, np.float64)
    if np.dtype(dtype) != np.dtype(expressed):
        return wide
    with np.errstate(over="ignore", under="ignore"):
        return wide.astype(dtype).astype(np.float64)


def any_nonzero(values: Sequence[Any]) -> bool:
    """``any(values)``, in one vector step for ParameterValues (on the values as held: no wider copy)."""
    return bool(values.held().any()) if isinstance(values, ParameterValues) else any(values)



__all__ = ["ParameterValues", "any_nonzero", "scales_as_stated", "values_array"]
