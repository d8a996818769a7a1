"""The ``tract`` backend: Sonos tract (``pip install 'onnx-qtypes[tract]'``) on the standard-ONNX QDQ model.

tract loads ``model.qdq.onnx`` with its ONNX front end, types it with the declared input facts, optimizes it
(``into_runnable``: tract folds DequantizeLinear / QuantizeLinear pairs into its own quantized integer kernels)
and runs it on the CPU. This module imports tract only when the backend is built, so the suite runs without it.

Values cross tract's Python API as numpy arrays of the types tract knows (bool, int8..int64, uint8..uint64,
float16, float32, float64). Tensors of other types (4- and 2-bit integers, float8, float4, bfloat16) have no
tract datum type: a model declaring one is refused by tract's loader, which the suite records as the runtime's
error, not as a harness limit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import onnx

from .backends import BackendError, ModelFileBackend, fed_inputs, feeds_in_order
from .execution_cases import Case


class TractBackend(ModelFileBackend):
    """model.qdq.onnx through tract's ONNX loader, optimized, on the CPU."""

    name = "tract"

    def __init__(self) -> None:
        try:
            import tract
        except ImportError:
            raise BackendError("the tract backend needs tract: pip install 'onnx-qtypes[tract]'") from None
        self._tract = tract
        self.version = str(tract.version())

    def prepare(self, case: Case) -> Any:
        """A runnable per case (tract objects are not shared between cases, so ``-j`` needs no lock); input facts
        are the graph's declared shapes and types, which every case declares in full."""
        path = case.model_file(self.form)
        graph = onnx.load(str(path), load_external_data=False).graph
        inputs, outputs = fed_inputs(graph), [v.name for v in graph.output]
        with _tract_errors(self._tract):
            runnable = self._tract.onnx().load(str(path)).into_model().into_runnable()
        return runnable, inputs, outputs, list(case.outputs)

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        runnable, inputs, outputs, wanted = prepared
        arrays = feeds_in_order(inputs, feeds)
        for name in inputs:  # ml_dtypes arrays (float8, float4, bfloat16): tract's Python API has no tensor for them
            if np.asarray(feeds[name]).dtype.kind not in "biuf":
                raise BackendError(f"graph input {name!r} is {np.asarray(feeds[name]).dtype}: tract's Python API "
                                   "takes bool, integer and float16/32/64 arrays only")
        with _tract_errors(self._tract):
            results = runnable.run(arrays)
            values = {name: _to_numpy(tensor) for name, tensor in zip(outputs, results)}
        return {name: values[name] for name in wanted if name in values}


@contextlib.contextmanager
def _tract_errors(tract: Any) -> Iterator[None]:
    """tract's errors without the Rust stack trace they carry when RUST_BACKTRACE is set: the message is what tract
    says, the same on every machine (so alike failures group in reports and known-deviation files)."""
    try:
        yield
    except tract.TractError as exc:
        message = str(exc).split("Stack backtrace:", 1)[0].strip()
        raise tract.TractError(message) from None


def _to_numpy(tensor: Any) -> np.ndarray:
    """A tract tensor as numpy, a rank-0 one too (tract's to_numpy reshapes by its shape list, empty for a scalar)."""
    return np.asarray(tensor.to_numpy())
