"""A conformance backend for your runtime: copy this file, fill in ``prepare`` and ``run``, and run

    onnx-qtypes conformance --backend my_backend:MyBackend --id relu-int8-float32-per-tensor

from the folder holding it (the module is found in the current directory; no PYTHONPATH needed).
The contract every line below follows: conformance_tests/BACKENDS.md (onnx-qtypes' README links it).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class MyBackend:
    name = "my-runtime"  # how reports and known-deviation files name this backend
    version = "0.0.0"  # your runtime's version (e.g. my_runtime.__version__): reports and --known match on it
    form = "qdq"  # "qdq": run the standard-ONNX model.qdq.onnx; "typed": run model.onnx (your runtime reads the types)

    def supports(self, case: Any) -> bool | str:
        """True to run ``case``, or a one-line reason why your runtime does not (the case is then "unsupported")."""
        # e.g. if case.tags.get("storage") in ("int2", "uint2"): return "no 2-bit storage"
        return True

    def prepare(self, case: Any) -> Any:
        """Load the model once; raise if your runtime refuses it (for a must-reject case that is the pass)."""
        path = str(case.model_file(self.form))
        # FILL IN: load and compile `path` with your runtime and return what `run` needs
        raise NotImplementedError(f"prepare: load {path} with your runtime")

    def run(self, prepared: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on ``feeds`` ({input name: array}) and return {output name: array} in the dtypes BACKENDS.md lists
        (quantized outputs as storage integers). May be called from several threads at once with -j N.
        4- / 2-bit, float8, bfloat16 and float4 tensors: an API taking raw typed buffers gets them from
        onnx_qtypes.conformance.to_bytes(array, onnx_type) and gives them back through from_bytes."""
        # FILL IN: run `prepared` on `feeds` and return every output by name
        raise NotImplementedError("run: run the model with your runtime")
