"""The ``Backend`` protocol and the backends the runner knows by name.

A backend says whether it supports a case (``True``, or a string: the reason
it does not), prepares the case once (``prepare(case)``, e.g. a compiled
session) and runs it on feeds (``run(prepared, feeds)`` -> {output name:
array}; quantized tensors are storage integers, sub-byte storage widened to
int8 / uint8).

Named backends (``load_backend(spec)``):

- ``reference``: onnx_qtypes.reference_ops.ReferenceEvaluator on the typed
  model with the definitional kernels; ``reference-integer``: the integer
  kernels.
- ``onnxruntime``: the standard-ONNX QDQ model, default graph optimizations
  (what users run); ``onnxruntime-unoptimized``: ORT_DISABLE_ALL, each node
  as written (the definition path).
- ``openvino``: the QDQ model through openvino.Core on CPU.
- ``MODULE:CLASS``: a backend class (or factory) of your own, built with no
  arguments.
- ``results:DIR``: outputs a runtime outside Python wrote to
  ``DIR/<case id>/test_data_set_0/output_k.pb``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import onnx

from onnx_qtypes.proto.errors import QTypesError

from .execution_cases import DATA_SET, ExecutionCase, read_tensor

BACKEND_NAMES = ("reference", "reference-integer", "onnxruntime", "onnxruntime-unoptimized", "openvino")


class BackendError(QTypesError):
    """A backend cannot be chosen or set up (unknown name, missing package, bad results folder)."""


@runtime_checkable
class Backend(Protocol):
    name: str

    def supports(self, case: ExecutionCase) -> bool | str: ...

    def prepare(self, case: ExecutionCase) -> Any: ...

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


def backend_version(backend: object) -> str:
    return str(getattr(backend, "version", "") or "")


class ReferenceBackend:
    """The typed model on onnx_qtypes' ReferenceEvaluator: the definition (or its integer kernels)."""

    def __init__(self, kernels: str = "definitional") -> None:
        from onnx_qtypes import __version__

        self.kernels = kernels
        self.name = "reference" if kernels == "definitional" else f"reference-{kernels}"
        self.version = __version__

    def supports(self, case: ExecutionCase) -> bool | str:
        return True if case.model_path.is_file() else f"{case.model_path.name} missing"

    def prepare(self, case: ExecutionCase) -> Any:
        from onnx_qtypes.reference_ops import ReferenceEvaluator

        return ReferenceEvaluator(str(case.model_path), kernels=self.kernels), list(case.outputs)

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        evaluator, names = prepared
        results = evaluator.run(names, dict(feeds))
        return {name: np.array(value) for name, value in zip(names, results)}


_SUB_BYTE = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4, onnx.TensorProto.INT2, onnx.TensorProto.UINT2)


class OnnxRuntimeBackend:
    """The standard-ONNX QDQ model on onnxruntime's CPU provider."""

    def __init__(self, optimize: bool = True) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise BackendError("the onnxruntime backend needs onnxruntime: pip install onnxruntime") from None
        self._ort = onnxruntime
        self.optimize = optimize
        self.name = "onnxruntime" if optimize else "onnxruntime-unoptimized"
        self.version = onnxruntime.__version__

    def supports(self, case: ExecutionCase) -> bool | str:
        if case.qdq_model_path is None:
            return case.qdq_unavailable
        if not case.qdq_model_path.is_file():
            return f"{case.qdq_model_path.name} missing"
        graph = onnx.load(str(case.qdq_model_path), load_external_data=False).graph
        packed = [v.name for v in (*graph.input, *graph.output) if v.type.tensor_type.elem_type in _SUB_BYTE]
        if packed:  # the runtime may compute them; its Python API cannot hand them over
            return (f"graph input/output {packed[0]!r} is a 4- or 2-bit tensor, which onnxruntime's Python API "
                    "cannot take or return (no numpy type)")
        return True

    def prepare(self, case: ExecutionCase) -> Any:
        ort = self._ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if self.optimize
                                            else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        session = ort.InferenceSession(str(case.qdq_model_path), options, providers=["CPUExecutionProvider"])
        return session, list(case.outputs)

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        session, names = prepared
        return dict(zip(names, session.run(names, dict(feeds))))


class OpenVinoBackend:
    """The standard-ONNX QDQ model through OpenVINO (read_model / compile_model on CPU)."""

    def __init__(self, device: str = "CPU") -> None:
        try:
            import openvino
        except ImportError:
            raise BackendError("the openvino backend needs OpenVINO: pip install openvino") from None
        self._ov = openvino
        self.device = device
        self.name = "openvino"
        self.version = getattr(openvino, "__version__", "") or _ov_version(openvino)
        self._core = openvino.Core()

    def supports(self, case: ExecutionCase) -> bool | str:
        if case.qdq_model_path is None:
            return case.qdq_unavailable
        return True if case.qdq_model_path.is_file() else f"{case.qdq_model_path.name} missing"

    def prepare(self, case: ExecutionCase) -> Any:
        model = self._core.read_model(str(case.qdq_model_path))
        compiled = self._core.compile_model(model, self.device)
        return compiled, list(case.outputs)

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        compiled, names = prepared
        results = compiled.infer_new_request(dict(feeds))
        by_name = {}
        for port, value in results.items():
            for name in port.get_names():
                by_name[name] = np.asarray(value)
        return {name: by_name[name] for name in names if name in by_name}


def _ov_version(openvino: Any) -> str:
    try:
        return str(openvino.get_version())
    except Exception:
        return ""


class ResultsBackend:
    """Outputs written by a runtime outside Python: DIR/<case id>/test_data_set_0/output_k.pb."""

    def __init__(self, folder: str | Path, name: str | None = None, version: str = "") -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise BackendError(f"results:{folder}: no such folder")
        self.name = name or f"results:{self.folder}"
        self.version = version or _results_version(self.folder)

    def _case_folder(self, case: ExecutionCase) -> Path:
        return self.folder / case.id / DATA_SET

    def supports(self, case: ExecutionCase) -> bool | str:
        return True if self._case_folder(case).is_dir() else f"no results written for this case ({case.id}/{DATA_SET})"

    def prepare(self, case: ExecutionCase) -> Any:
        return self._case_folder(case), list(case.outputs)

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        folder, names = prepared
        out = {}
        for k, name in enumerate(names):
            path = folder / f"output_{k}.pb"
            if path.exists():
                out[name] = read_tensor(path)
        return out


def _results_version(folder: Path) -> str:
    for name in ("VERSION", "version.txt"):
        path = folder / name
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8").strip().splitlines()[0]
            except (OSError, UnicodeDecodeError, IndexError):
                return ""
    return ""


def load_backend(spec: str) -> Any:
    """A backend from its command-line spelling (see the module doc)."""
    if spec == "reference":
        return ReferenceBackend()
    if spec == "reference-integer":
        return ReferenceBackend("integer")
    if spec == "onnxruntime":
        return OnnxRuntimeBackend()
    if spec == "onnxruntime-unoptimized":
        return OnnxRuntimeBackend(optimize=False)
    if spec == "openvino":
        return OpenVinoBackend()
    if spec.startswith("results:"):
        folder = spec[len("results:"):]
        if not folder:
            raise BackendError("results:DIR needs a folder")
        return ResultsBackend(folder)
    if ":" in spec:
        return _user_backend(spec)
    raise BackendError(f"unknown backend {spec!r}: use one of {', '.join(BACKEND_NAMES)}, MODULE:CLASS or results:DIR")


def _user_backend(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise BackendError(f"backend {spec!r}: expected MODULE:CLASS")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise BackendError(f"backend {spec!r}: cannot import {module_name} ({type(exc).__name__}: {exc})") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise BackendError(f"backend {spec!r}: {module_name} has no {attr}")
    try:
        backend = target() if callable(target) else target
    except Exception as exc:
        raise BackendError(f"backend {spec!r}: constructing it failed ({type(exc).__name__}: {exc})") from None
    missing = [m for m in ("supports", "prepare", "run") if not callable(getattr(backend, m, None))]
    if missing:
        raise BackendError(f"backend {spec!r}: not a Backend (no {', '.join(missing)} method)")
    if not getattr(backend, "name", None):
        try:
            backend.name = spec
        except Exception:
            pass
    return backend
