"""The reference ops' own errors (a light module: no onnx.reference import)."""

from __future__ import annotations

from onnx_qtypes.proto.errors import QTypesError

__all__ = ["EvaluationError", "FeedError"]


class EvaluationError(QTypesError):
    """A typed model that cannot be run as given (names the node or tensor)."""


class FeedError(EvaluationError):
    """Feeds that do not fit the model's declared inputs (names the input, the expected and the found)."""
