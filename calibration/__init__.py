"""Statistics collection and parameter choice.

- ``calibrate(model, data, ...)``: run a float model on calibration samples
  (an iterable of feed dicts, an object with ``get_next()`` like onnxruntime's
  ``CalibrationDataReader``, or an .npz path) and return the typed model, its
  tensors carrying the statistics; ``stats_only=True`` returns the float model
  annotated with statistics instead.
- ``calibrate_model``: the same with its report (statistics, sample count,
  typed tensors).
"""

from onnx_qtypes.calibration.calibrate import CalibrationResult, calibrate, calibrate_model
from onnx_qtypes.calibration.errors import CalibrationError
from onnx_qtypes.calibration.ranges import METHODS

__all__ = ["METHODS", "CalibrationError", "CalibrationResult", "calibrate", "calibrate_model"]
