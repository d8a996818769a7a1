"""A tensor's statistics as the model stores them, decoded only when and as far as a view needs them.

A calibrated model records a histogram of up to 2048 bins on every tensor. Decoded into Python tuples all at
once, ten thousand of them take gigabytes; `show` keeps each one as its protobuf message (packed numbers) and
decodes one tensor at a time: the table reads the summary fields only, a per-tensor type's estimate the
whole-tensor part only, the JSON and a card everything.
"""

from __future__ import annotations

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.statistics import Statistics, TensorStatistics


class StoredStatistics:
    """One tensor's ``statistics`` message; ``decode()`` gives its TensorStatistics."""

    __slots__ = ("message",)

    def __init__(self, message: pb.TensorStatistics) -> None:
        self.message = message

    def decode(self) -> TensorStatistics:
        return TensorStatistics.from_proto(self.message)

    def whole(self) -> TensorStatistics:
        """The whole-tensor statistics only (all a per-tensor type's estimate reads), with the method."""
        m = self.message
        return TensorStatistics(tensor=Statistics.from_proto(m.tensor) if m.HasField("tensor") else None,
                                method=m.method if m.HasField("method") else None)

    def summary(self) -> dict:
        """min / max / mean / std / count and the bin count of the whole tensor, the per-axis slice count and
        axis, and the method: what one line of the table shows, read without decoding any histogram."""
        m = self.message
        t = m.tensor if m.HasField("tensor") else None
        out = {}
        if t is not None:
            out = {name: getattr(t, name) for name in ("min", "max", "mean", "std", "count") if t.HasField(name)}
            out["bins"] = len(t.histogram_counts)
        out["per_axis"] = len(m.per_axis)
        out["axis"] = m.axis if m.HasField("axis") else None
        out["method"] = m.method if m.HasField("method") else None
        return out
