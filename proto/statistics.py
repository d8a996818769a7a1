"""Calibration statistics: metadata on any tensor, never part of a type's identity."""

from __future__ import annotations

import dataclasses
from typing import Any

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.coerce import as_int, as_real, as_tuple
from onnx_qtypes.proto.errors import QTypeError


@dataclasses.dataclass(frozen=True)
class Statistics:
    """Statistics of one set of real values; None means unknown."""

    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    count: int | None = None
    histogram_edges: tuple[float, ...] = ()
    histogram_counts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        sets = object.__setattr__
        for name in ("min", "max", "mean", "std"):
            sets(self, name, as_real(getattr(self, name), f"statistics.{name}"))
        sets(self, "count", as_int(self.count, "statistics.count"))
        sets(self, "histogram_edges", as_tuple(self.histogram_edges, float, "statistics.histogram_edges"))
        sets(self, "histogram_counts", as_tuple(self.histogram_counts, int, "statistics.histogram_counts"))

    def to_proto(self) -> pb.Statistics:
        msg = pb.Statistics()
        for name in ("min", "max", "mean", "std", "count"):
            value = getattr(self, name)
            if value is not None:
                setattr(msg, name, value)
        msg.histogram_edges.extend(self.histogram_edges)
        msg.histogram_counts.extend(self.histogram_counts)
        return msg

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {n: getattr(self, n) for n in ("min", "max", "mean", "std", "count")}
        out = {k: v for k, v in out.items() if v is not None}
        if self.histogram_edges or self.histogram_counts:
            out["histogram_edges"] = list(self.histogram_edges)
            out["histogram_counts"] = list(self.histogram_counts)
        return out

    @classmethod
    def from_proto(cls, msg: pb.Statistics) -> Statistics:
        fields = {n: getattr(msg, n) for n in ("min", "max", "mean", "std", "count") if msg.HasField(n)}
        return cls(**fields, histogram_edges=tuple(msg.histogram_edges), histogram_counts=tuple(msg.histogram_counts))


# calibrate's methods that choose a range inside the recorded [min, max] on purpose (calibration.ranges.METHODS
# adds minmax): QT208 names them instead of asking to widen. (onnxruntime's imported statistics keep a min and max
# for MinMax only, interop.ort_statistics, so no other producer's method reaches QT208.)
CLIPPING_METHODS = ("percentile", "entropy", "mse")


def clipping_method(method: str | None) -> bool:
    """Whether ``method`` (a statistics record's) clips outliers by design."""
    return method in CLIPPING_METHODS


@dataclasses.dataclass(frozen=True)
class TensorStatistics:
    """Calibration statistics of a tensor: whole-tensor and per-slice."""

    tensor: Statistics | None = None
    axis: int | None = None
    per_axis: tuple[Statistics, ...] = ()
    method: str | None = None

    def __post_init__(self) -> None:
        per_axis = tuple(self.per_axis)
        for name, value in (("tensor", self.tensor), *(("per_axis", s) for s in per_axis)):
            if value is not None and not isinstance(value, Statistics):
                raise QTypeError(f"statistics.{name}", f"expected a Statistics, got {value!r}")
        if self.method is not None and not isinstance(self.method, str):
            raise QTypeError("statistics.method", f"expected a string, got {self.method!r}")
        object.__setattr__(self, "per_axis", per_axis)
        object.__setattr__(self, "axis", as_int(self.axis, "statistics.axis"))

    def to_proto(self) -> pb.TensorStatistics:
        msg = pb.TensorStatistics()
        if self.tensor is not None:
            msg.tensor.CopyFrom(self.tensor.to_proto())
        if self.axis is not None:
            msg.axis = self.axis
        msg.per_axis.extend(s.to_proto() for s in self.per_axis)
        if self.method is not None:
            msg.method = self.method
        return msg

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tensor is not None:
            out["tensor"] = self.tensor.to_dict()
        if self.axis is not None:
            out["axis"] = self.axis
        if self.per_axis:
            out["per_axis"] = [s.to_dict() for s in self.per_axis]
        if self.method is not None:
            out["method"] = self.method
        return out

    @classmethod
    def from_proto(cls, msg: pb.TensorStatistics) -> TensorStatistics:
        return cls(
            tensor=Statistics.from_proto(msg.tensor) if msg.HasField("tensor") else None,
            axis=msg.axis if msg.HasField("axis") else None,
            per_axis=tuple(Statistics.from_proto(s) for s in msg.per_axis),
            method=msg.method if msg.HasField("method") else None,
        )
