"""Errors of lift and lower. Every message names the node or tensor and says
what would be valid; the CLI prints it as its one line (exit 2)."""

from __future__ import annotations

from onnx_qtypes.proto.errors import QTypesError


class MalformedQDQError(QTypesError):
    """A QDQ / QOperator model whose quantization cannot be lifted without changing its meaning."""


class LowerError(QTypesError):
    """A typed model that has no faithful standard-ONNX form."""


class StatisticsImportError(QTypesError):
    """Calibration statistics that cannot be read or do not fit their tensor."""
