"""Import onnxruntime's calibration results (``TensorData``) as TensorStatistics.

onnxruntime keeps calibration results outside the model: a ``TensorsData``
(tensor name -> ``TensorData`` with some of ``lowest, highest, avg, std,
hist, hist_edges, bins``) that ``quantize_static(calibration_cache_path=...)``
and ``write_calibration_table`` save as JSON. What the fields mean depends on
the calibration method, and this import keeps only what is true of the
observed values:

- MinMax: ``lowest`` / ``highest`` are the observed extremes -> min / max
  (with ``CalibMovingAverage`` they are smoothed extremes, as onnxruntime
  reports them).
- Entropy, Percentile, Distribution: ``lowest`` / ``highest`` are the
  *chosen clipping range*, not observations, so they are not imported as
  min / max (the type's scale and zero point already encode that range).
  The histogram is imported (edges from ``hist_edges``, or from ``bins``
  where onnxruntime stores the edges there), with count = sum of the bins;
  Distribution's ``avg`` / ``std`` become mean / std. A Percentile histogram
  of absolute values (symmetric calibration) describes |x|, not x, and is
  left out. (onnxruntime 1.31's Percentile result actually keeps only the
  first two bin counts, ``hist[:2]`` in ``compute_percentile``; that is not
  a histogram and is left out too.)
- Per-channel ranges (arrays with more than one value) become per-axis
  statistics along axis 1, the axis onnxruntime's per-channel calibration
  keeps.

Reading the JSON needs no onnxruntime; objects are read by attribute, so a
live ``TensorsData`` works as well.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from onnx_qtypes.interop.errors import StatisticsImportError
from onnx_qtypes.proto.files import require_regular_file
from onnx_qtypes.proto.qtype import Statistics, TensorStatistics

FIELDS = ("lowest", "highest", "avg", "std", "hist", "hist_edges", "bins")
PER_CHANNEL_AXIS = 1


def _array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, Mapping) and value.get("CLS") == "numpy.array":
        return np.asarray(value.get("data"), dtype=np.float64)
    if isinstance(value, (int, float, list, tuple, np.ndarray, np.generic)):
        return np.asarray(value, dtype=np.float64)
    raise TypeError(f"expected a number or array, got {type(value).__name__}")


def _fields(data: Any) -> dict[str, np.ndarray]:
    if isinstance(data, Mapping):
        raw = {k: data[k] for k in FIELDS if k in data}
    else:
        raw = {k: getattr(data, k) for k in FIELDS if hasattr(data, k)}
    out: dict[str, np.ndarray] = {}
    for key, value in raw.items():
        array = _array(value)
        if array is not None:
            out[key] = array
    return out


def _method_name(method: Any) -> str | None:
    if method is None:
        return None
    if isinstance(method, Mapping):  # {"CLS": "CalibrationMethod", "value": "CalibrationMethod.MinMax"}
        method = method.get("value")
    name = getattr(method, "name", None) or str(method)
    return name.split(".")[-1]


def _histogram(fields: dict[str, np.ndarray], method: str | None) -> tuple[tuple[float, ...], tuple[int, ...]]:
    hist = fields.get("hist")
    if hist is None:
        return (), ()
    edges = fields.get("hist_edges")
    if edges is None and "bins" in fields and fields["bins"].size == hist.size + 1:
        edges = fields["bins"]  # the (lowest, highest, hist, edges) tuple form stores the edges as "bins"
    if edges is None or edges.size != hist.size + 1:
        return (), ()
    if method == "Percentile" and not np.isclose(edges[0], -edges[-1]):
        return (), ()  # symmetric Percentile calibration histograms |x|
    counts = hist.reshape(-1)
    if np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("histogram counts must be non-negative integers")
    return tuple(float(e) for e in edges.reshape(-1)), tuple(int(c) for c in counts)


def statistics_from_tensor_data(data: Any, method: Any = None) -> TensorStatistics:
    """One ``TensorData`` (object or its JSON dict) as TensorStatistics."""
    name = _method_name(method)
    fields = _fields(data)
    observed = name in (None, "MinMax")
    lo, hi = (fields.get("lowest"), fields.get("highest")) if observed else (None, None)
    per_channel = lo is not None and lo.size > 1
    edges, counts = _histogram(fields, name)
    mean = fields.get("avg") if name in ("Distribution", None) else None
    std = fields.get("std") if name in ("Distribution", None) else None

    def one(i: int | None) -> Statistics:
        def pick(a: np.ndarray | None) -> float | None:
            if a is None:
                return None
            flat = a.reshape(-1)
            return float(flat[0] if i is None else flat[i])

        return Statistics(
            min=pick(lo),
            max=pick(hi),
            mean=None if per_channel else pick(mean),
            std=None if per_channel else pick(std),
            count=sum(counts) if counts and i is None else None,
            histogram_edges=edges if i is None else (),
            histogram_counts=counts if i is None else (),
        )

    method_text = f"onnxruntime:{name.lower()}" if name else "onnxruntime"
    if per_channel:
        assert lo is not None
        channels = tuple(one(i) for i in range(lo.size))
        whole = Statistics(min=float(lo.min()), max=float(hi.max()) if hi is not None else None)
        return TensorStatistics(tensor=whole, axis=PER_CHANNEL_AXIS, per_axis=channels, method=method_text)
    return TensorStatistics(tensor=one(None), method=method_text)


def _check(name: str, stats: TensorStatistics) -> None:
    for s in (stats.tensor, *stats.per_axis):
        if s is None:
            continue
        if s.min is not None and s.max is not None and s.min > s.max:
            raise StatisticsImportError(f"tensor {name!r}: lowest {s.min} is above highest {s.max}")
        edges = s.histogram_edges
        if edges and any(b <= a for a, b in zip(edges, edges[1:])):
            raise StatisticsImportError(f"tensor {name!r}: histogram edges are not strictly increasing")


def statistics_from_tensors_data(tensors_data: Any) -> dict[str, TensorStatistics]:
    """A whole ``TensorsData`` (object, its JSON dict, or a plain name -> TensorData mapping)."""
    method = None
    if isinstance(tensors_data, Mapping) and tensors_data.get("CLS") == "TensorsData":
        method, items = tensors_data.get("calibration_method"), tensors_data.get("data", {})
    elif hasattr(tensors_data, "data") and hasattr(tensors_data, "calibration_method"):
        method, items = tensors_data.calibration_method, tensors_data.data
    else:
        items = tensors_data
    if not isinstance(items, Mapping):
        raise StatisticsImportError("calibration data must map tensor names to onnxruntime TensorData")
    out: dict[str, TensorStatistics] = {}
    for name, data in items.items():
        if isinstance(data, TensorStatistics):
            out[name] = data
            continue
        try:
            stats = statistics_from_tensor_data(data, method)
        except (TypeError, ValueError) as exc:
            raise StatisticsImportError(f"tensor {name!r}: {exc}") from None
        _check(name, stats)
        out[name] = stats
    return out


def load_calibration_cache(path: str | os.PathLike) -> dict[str, TensorStatistics]:
    """Read onnxruntime's calibration JSON (``calibration_cache_path`` or ``calibration.json``)."""
    source = pathlib.Path(path)
    require_regular_file(source, "a calibration .json file", StatisticsImportError)  # a FIFO would block
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise StatisticsImportError(f"{source}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise StatisticsImportError(f"{source}: not JSON (not UTF-8 text)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StatisticsImportError(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise StatisticsImportError(f"{source}: not calibration data (nested too deeply)") from None
    try:
        return statistics_from_tensors_data(doc)
    except StatisticsImportError as exc:
        raise StatisticsImportError(f"{source}: {exc}") from None
