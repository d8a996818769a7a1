"""``onnx-qtypes compare``: the first tensor where a backend departs from the reference.

- ``compare(model, backend, feeds=None, seed=0) -> Comparison`` (``comparison``): every quantized intermediate
  tensor of the reference and of the backend, in storage steps, with the first one beyond its tolerance;
- ``sides``: the typed model the reference runs and the standard-ONNX one a backend runs, under the user's names;
- ``observe``: reading a backend's intermediates through the conformance ``Backend`` protocol without letting
  the exposure change what it computes;
- ``tolerance``: the per-tensor tolerance (decisions A.2-A.4); ``steps``: distances in storage steps;
- ``inputs``: deterministic inputs when none are given; ``render``: text, JSON and the HTML page.
"""

from .comparison import BEYOND, NOT_OBSERVED, OK, Comparison, CompareError, InputState, Row, compare

__all__ = ["BEYOND", "Comparison", "CompareError", "InputState", "NOT_OBSERVED", "OK", "Row", "compare"]
