"""Coercion of user-given parameter values: integers and reals checked one way for QType and statistics alike."""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from onnx_qtypes.proto.errors import QTypeError


def is_int(value: object) -> bool:
    # bool is an int subclass and 3.0 hashes like 3: dict lookups alone would take True for FLOAT, 3.0 for INT8
    if type(value) is int:  # the common case, without the abstract base class's slower test
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _array_as_tuple(value: np.ndarray, kind: type) -> tuple | None:
    """A numeric array's values as Python ints or floats in one vector step; None when one needs a closer look."""
    flat, code = value.reshape(-1), value.dtype.kind
    if kind is float and code in "iuf":
        return tuple(flat.astype(np.float64).tolist())
    if kind is int and code in "iu":
        return tuple(flat.tolist())
    if kind is int and code == "f" and bool(np.all(np.isfinite(flat) & (flat == np.floor(flat)))):
        return tuple(map(int, flat.tolist()))
    return None  # bool, object, strings, or a float zero point that is not integral: the loop below says which


def as_int(value: Any, field: str) -> int | None:
    """An optional integer field. Integral floats (2.0) are taken as zero points are (``as_tuple``);
    a bool or a fraction is refused rather than truncated by int()."""
    if value is None or type(value) is int:
        return value
    if is_int(value) or (isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer()):
        return int(value)
    raise QTypeError(field, f"expected an integer, got {value!r}")


def as_real(value: Any, field: str) -> float | None:
    """An optional real field, checked as scales are."""
    return value if value is None or type(value) is float else as_tuple((value,), float, field)[0]


def as_tuple(value: Any, kind: type, field: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, np.ndarray):
        fast = _array_as_tuple(value, kind)
        if fast is not None:
            return fast
        items = value.reshape(-1).tolist()
    elif isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        items = value if isinstance(value, (list, tuple)) else list(value)
        # Millions of parameters (blocked weights) are common: plain ints and floats skip the per-item checks.
        types = set(map(type, items))
        if types <= {kind}:
            return tuple(items)
        if kind is float and types <= {int, float}:
            with contextlib.suppress(OverflowError):  # an int too large for a float: the loop below names it
                return tuple(map(float, items))
    else:
        items = [value]
    out = []
    for item in items:
        if kind is int:
            if isinstance(item, bool) or not isinstance(item, numbers.Integral):
                if isinstance(item, numbers.Real) and not isinstance(item, bool) and float(item).is_integer():
                    item = int(item)
                else:
                    raise QTypeError(field, f"expected integers, got {item!r}")
            out.append(int(item))
        else:
            if isinstance(item, bool) or not isinstance(item, numbers.Real):
                raise QTypeError(field, f"expected real numbers, got {item!r}")
            try:
                out.append(float(item))
            except OverflowError:
                text = repr(item)
                raise QTypeError(field, f"{text[:20]}… ({len(text)} digits) is too large for a float") from None
    return tuple(out)
