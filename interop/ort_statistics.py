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
live ``TensorsData`` works as well. Only onnxruntime's own shapes are read:
a ``TensorsData`` document (``CLS``, ``data``, ``calibration_method``,
``smooth_quant``), as ``save_tensors_data`` and ``write_calibration_table``
write it, or a plain map of tensor names to ``TensorData`` objects. Anything
else (a profile, a report, ``{"r1": 5}``) is refused, naming the first key
that does not fit, never read as empty statistics. A tensor whose values no
calibration produces is refused, naming the tensor and the field: NaN or
infinite values, empty arrays, every field null, ``lowest`` / ``highest`` of
different lengths, several ``avg`` / ``std`` values, a ``hist`` without edges
(or edges without a ``hist``), or edges that are not one more than the counts
(except onnxruntime's own Percentile ``hist[:2]``, which is left out).
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
from onnx_qtypes.proto.statistics import Statistics, TensorStatistics

FIELDS = ("lowest", "highest", "avg", "std", "hist", "hist_edges", "bins")
TENSORS_DATA_KEYS = ("CLS", "data", "calibration_method", "smooth_quant")
METHODS = ("MinMax", "Entropy", "Percentile", "Distribution")  # onnxruntime's CalibrationMethod
PER_CHANNEL_AXIS = 1
TENSOR_DATA = f"a TensorData object (some of {', '.join(FIELDS)})"
EXPECTED = (f"expected a TensorsData document ({', '.join(TENSORS_DATA_KEYS)}) "
            f"or a map of tensor names to {TENSOR_DATA}")


class _NotCalibrationData(StatisticsImportError):
    """The document is not shaped like onnxruntime's calibration results at all."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"not onnxruntime calibration data: {detail}")
        self.detail = detail


def _kind(value: Any) -> str:
    """What a JSON value (or any object) is, in words."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    for types, word in ((str, "a string"), ((int, float), "a number"), (Mapping, "an object"),
                        ((list, tuple), "a list")):
        if isinstance(value, types):
            return word
    return f"an instance of {type(value).__name__}"


def _array(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, Mapping) and value.get("CLS") == "numpy.array" and "data" in value:
        return np.asarray(value["data"], dtype=np.float64)
    if isinstance(value, (int, float, list, tuple, np.ndarray, np.generic)) and not isinstance(value, bool):
        return np.asarray(value, dtype=np.float64)
    raise TypeError(f"expected a number or array, got {type(value).__name__}")


def _fields(data: Any) -> dict[str, np.ndarray]:
    if isinstance(data, Mapping):
        for key in data:
            if key not in (*FIELDS, "CLS") or (key == "CLS" and data[key] != "TensorData"):
                raise _NotCalibrationData(f"{key!r} is not a TensorData field; expected {TENSOR_DATA}")
        raw = {k: data[k] for k in FIELDS if k in data}
    else:
        raw = {k: getattr(data, k) for k in FIELDS if hasattr(data, k)}
    if not raw:
        what = "an object with no TensorData field" if isinstance(data, Mapping) else _kind(data)
        raise _NotCalibrationData(f"{what}; expected {TENSOR_DATA}")
    out: dict[str, np.ndarray] = {}
    for key, value in raw.items():
        array = _array(value)
        if array is not None:
            out[key] = array
    if not out:
        raise ValueError(f"no statistics: every field ({', '.join(raw)}) is null")
    _validate(out)
    return out


def _validate(fields: dict[str, np.ndarray]) -> None:
    """Refuse values no calibration produces: empty, NaN or infinite, or of lengths that do not fit together."""
    for key, array in fields.items():
        if array.size == 0:
            raise ValueError(f"{key} is empty")
        flat = array.reshape(-1)
        bad = flat[~np.isfinite(flat)]
        if bad.size:
            raise ValueError(f"{key} is {'NaN' if np.isnan(bad[0]) else bad[0]}, not a finite number")
    ranges = {k: fields[k].size for k in ("lowest", "highest") if k in fields}
    if len(set(ranges.values())) > 1:
        raise ValueError(f"lowest has {ranges['lowest']} value(s) but highest has {ranges['highest']}; "
                         "per-channel ranges need one of each per channel")
    for key in ("avg", "std"):
        if key in fields and fields[key].size != 1:
            raise ValueError(f"{key} has {fields[key].size} values; expected one")
    hist = fields.get("hist")
    if hist is None:
        for key in ("hist_edges", "bins"):
            if key in fields:
                raise ValueError(f"{key} without hist: histogram edges need their counts")
        return
    if "hist_edges" in fields:
        edges_key = "hist_edges"
    elif "bins" in fields:  # the (lowest, highest, hist, edges) tuple form stores the edges as "bins"
        edges_key = "bins"
        if hist.size == 1 and fields["bins"].size == 1:
            return  # onnxruntime's Percentile result: the first two bin counts (hist[:2]), not a histogram
    else:
        raise ValueError("hist without hist_edges: a histogram needs its edges")
    if fields[edges_key].size != hist.size + 1:
        raise ValueError(f"hist has {hist.size} count(s) but {edges_key} has {fields[edges_key].size} edge(s); "
                         "a histogram needs one edge more than counts")


def _method_name(method: Any) -> str | None:
    if method is None:
        return None
    if isinstance(method, Mapping):  # {"CLS": "CalibrationMethod", "value": "CalibrationMethod.MinMax"}
        method = method.get("value")
    name = (getattr(method, "name", None) or str(method)).split(".")[-1]
    if name not in METHODS:
        raise _NotCalibrationData(f"calibration_method {method!r} is not one of {', '.join(METHODS)}")
    return name


def _histogram(fields: dict[str, np.ndarray], method: str | None) -> tuple[tuple[float, ...], tuple[int, ...]]:
    hist = fields.get("hist")
    if hist is None:
        return (), ()
    edges = fields.get("hist_edges")
    if edges is None:
        edges = fields.get("bins")  # the (lowest, highest, hist, edges) tuple form stores the edges as "bins"
    if edges is None or edges.size != hist.size + 1:
        return (), ()  # only onnxruntime's Percentile hist[:2] gets here (_validate refuses the rest)
    if method == "Percentile" and not np.isclose(edges[0], -edges[-1]):
        return (), ()  # symmetric Percentile calibration histograms |x|
    counts = hist.reshape(-1)
    if np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("histogram counts must be non-negative integers")
    if np.any(counts >= 2.0**63):
        raise ValueError(f"hist count {counts.max():.6g} is more than a 64-bit count can hold")
    return tuple(float(e) for e in edges.reshape(-1)), tuple(int(c) for c in counts)


def statistics_from_tensor_data(data: Any, method: Any = None) -> TensorStatistics:
    """One ``TensorData`` (object or its JSON dict) as TensorStatistics."""
    name = _method_name(method)
    fields = _fields(data)
    observed = name in (None, "MinMax")
    lo, hi = (fields.get("lowest"), fields.get("highest")) if observed else (None, None)
    ranged = lo if lo is not None else hi
    per_channel = ranged is not None and ranged.size > 1
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
        assert ranged is not None
        channels = tuple(one(i) for i in range(ranged.size))
        whole = Statistics(min=float(lo.min()) if lo is not None else None,
                           max=float(hi.max()) if hi is not None else None)
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
    if isinstance(tensors_data, Mapping) and "CLS" in tensors_data:
        method, items = _tensors_data_document(tensors_data)
    elif hasattr(tensors_data, "data") and hasattr(tensors_data, "calibration_method"):
        method, items = tensors_data.calibration_method, tensors_data.data
    else:
        items = tensors_data
    if not isinstance(items, Mapping):
        raise _NotCalibrationData(f"it must map tensor names to onnxruntime TensorData, got {_kind(items)}; {EXPECTED}")
    _method_name(method)  # an unknown method is refused even when there are no tensors
    out: dict[str, TensorStatistics] = {}
    for name, data in items.items():
        if isinstance(data, TensorStatistics):
            out[name] = data
            continue
        try:
            stats = statistics_from_tensor_data(data, method)
        except _NotCalibrationData as exc:
            raise _NotCalibrationData(f"key {name!r}: {exc.detail}") from None
        except (TypeError, ValueError, OverflowError) as exc:  # an integer past float's range overflows
            raise StatisticsImportError(f"tensor {name!r}: {exc}") from None
        _check(name, stats)
        out[name] = stats
    return out


def _tensors_data_document(doc: Mapping[str, Any]) -> tuple[Any, Any]:
    """(calibration_method, data) of a TensorsData JSON document, its keys checked."""
    if doc["CLS"] != "TensorsData":
        raise _NotCalibrationData(f"CLS is {doc['CLS']!r}, not 'TensorsData'; {EXPECTED}")
    for key in doc:
        if key not in TENSORS_DATA_KEYS:
            raise _NotCalibrationData(f"key {key!r} is not part of a TensorsData document; {EXPECTED}")
    for key in ("data", "calibration_method"):
        if key not in doc:
            raise _NotCalibrationData(f"the TensorsData document has no {key!r}; {EXPECTED}")
    return doc["calibration_method"], doc["data"]


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
        stats = statistics_from_tensors_data(doc)
        if not stats:
            raise _NotCalibrationData(f"it names no tensors; {EXPECTED}")
    except StatisticsImportError as exc:
        raise StatisticsImportError(f"{source}: {exc}") from None
    return stats
