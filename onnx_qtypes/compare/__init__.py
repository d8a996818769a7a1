"""``onnx-qtypes compare``: the first tensor where a backend departs from the reference.

- ``compare(model, backend, feeds=None, seed=0) -> Comparison`` (``comparison``): every tensor a node writes
  that both the reference and the backend hold (quantized ones in storage steps, float ones in reals), with the
  first one beyond its tolerance;
- ``sides``: the typed model the reference runs and the standard-ONNX one a backend runs, under the user's names;
- ``observe``: reading a backend's intermediates through the conformance ``Backend`` protocol without letting
  the exposure change what it computes;
- the tolerance is the suite's one rule, ``onnx_qtypes.conformance.tolerance`` (proposal/spec/semantics.md §8);
  ``steps``: distances in storage steps;
- ``inputs``: deterministic inputs when none are given; ``render``: text, JSON and the HTML page.
"""

from .comparison import (BEYOND, NO_BOUND, NOT_OBSERVED, OK, Comparison, CompareError, InputState, Row,
                         compare)

__all__ = ["BEYOND", "Comparison", "CompareError", "InputState", "NO_BOUND", "NOT_OBSERVED", "OK", "Row", "compare"]
