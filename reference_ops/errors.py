"""The reference ops' own errors (a light module: no onnx.reference import)."""

from __future__ import annotations

from onnx_qtypes.proto.errors import QTypeError, QTypesError

__all__ = ["EvaluationError", "FeedError", "type_problem"]


class EvaluationError(QTypesError):
    """A typed model that cannot be run as given (names the node or tensor)."""


class FeedError(EvaluationError):
    """Feeds that do not fit the model's declared inputs (names the input, the expected and the found)."""


def type_problem(exc: QTypeError) -> str:
    """What is wrong with a type, without the ``tensor 'x': QType.field:`` prefix of a QTypeError."""
    text = str(exc)
    marker = f"QType.{exc.field}: "
    return text.split(marker, 1)[1] if marker in text else text
