"""Errors a user can cause when calibrating (CLI exit code 2)."""

from onnx_qtypes.proto.errors import QTypesError


class CalibrationError(QTypesError):
    """The model or the calibration data cannot be calibrated; the message names the input, tensor or file."""
