"""The ``Backend`` protocol and the backends the runner knows by name.

A backend says whether it supports a case (``True``, or a string: the reason
it does not), prepares the case once (``prepare(case)``, e.g. a compiled
session) and runs it on feeds (``run(prepared, feeds)`` -> {output name:
array}; quantized tensors are storage integers, sub-byte storage widened to
int8 / uint8). It refuses a model (a must-reject case) by raising from
``prepare`` or ``run``. Optional attributes: ``version`` (the runtime's
version, in reports) and ``form`` ("typed": it runs model.onnx; "qdq": it
runs the standard-ONNX model.qdq.onnx, and the runner calls a case without
one unsupported, "not-expressible", without asking it). The whole contract:
conformance_tests/BACKENDS.md; a file to copy: conformance_tests/template_backend.py.

Named backends (``load_backend(spec)``):

- ``reference``: onnx_qtypes.reference_ops.ReferenceEvaluator on the typed
  model with the definitional kernels; ``reference-integer``: the integer
  kernels.
- ``onnxruntime``: the standard-ONNX QDQ model, default graph optimizations
  (what users run); ``onnxruntime-unoptimized``: ORT_DISABLE_ALL, each node
  as written (the definition path).
- ``openvino``: the QDQ model through openvino.Core on CPU (4- and 2-bit graph
  inputs and outputs packed / unpacked as OpenVINO tensors).
- ``tract``: the QDQ model through Sonos tract, optimized (backend_tract.py;
  extra ``tract``).
- ``iree``: the QDQ model imported by IREE, compiled for llvm-cpu, run on the
  local-sync driver (backend_iree.py; extra ``iree``).
- ``MODULE:CLASS``: a backend class (or factory) of your own, built with no
  arguments; MODULE is found on sys.path, else in the current directory, or
  is a path to a .py file.
- ``results:DIR``: outputs a runtime outside Python wrote to
  ``DIR/<case id>/test_data_set_0/output_k.pb``, or the error it met (a
  refusal, for a must-reject case) in ``DIR/<case id>/error.txt``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import onnx
import onnx.numpy_helper

from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.storage_types import STORAGE_TYPES, StorageType

from .execution_cases import DATA_SET, Case, read_tensor

BACKEND_NAMES = ("reference", "reference-integer", "onnxruntime", "onnxruntime-unoptimized", "openvino", "tract",
                 "iree")


class BackendError(QTypesError):
    """A backend cannot be chosen or set up (unknown name, missing package, bad results folder)."""


@runtime_checkable
class Backend(Protocol):
    name: str

    def supports(self, case: Case) -> bool | str: ...

    def prepare(self, case: Case) -> Any: ...

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

    form = "typed"

    def supports(self, case: Case) -> bool | str:
        return True if case.model_path.is_file() else f"{case.model_path.name} missing"

    def prepare(self, case: Case) -> Any:
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

    form = "qdq"

    def supports(self, case: Case) -> bool | str:
        path = case.model_file(self.form)
        if not path.is_file():
            return f"{path.name} missing"
        graph = onnx.load(str(path), load_external_data=False).graph
        for v in graph.output:
            dims = v.type.tensor_type.shape.dim
            if v.type.tensor_type.elem_type in _SUB_BYTE and not all(d.HasField("dim_value") for d in dims):
                return (f"graph output {v.name!r} is a 4- or 2-bit tensor without a static shape: onnxruntime's "
                        "Python API returns such outputs only into a buffer allocated in advance")
        return True

    def prepare(self, case: Case) -> Any:
        ort = self._ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 4  # a failure to load is the case's error outcome; not also a log line
        options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if self.optimize
                                            else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        path = str(case.model_file(self.form))
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        graph = onnx.load(path, load_external_data=False).graph
        packed = {v.name: (v.type.tensor_type.elem_type, tuple(d.dim_value for d in v.type.tensor_type.shape.dim))
                  for v in (*graph.input, *graph.output) if v.type.tensor_type.elem_type in (*_SUB_BYTE, *_FLOAT8)}
        return session, list(case.outputs), packed

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        session, names, packed = prepared
        if not packed:
            return dict(zip(names, session.run(names, dict(feeds))))
        return self._run_packed(session, names, packed, feeds)

    def _run_packed(self, session: Any, names: list[str], packed: dict, feeds: Mapping[str, np.ndarray]) -> dict:
        """4- and 2-bit tensors have no numpy type: they cross as OrtValues over buffers we pack and unpack
        (ONNX's order, element 0 in the lowest bits), outputs bound to buffers allocated from their static shape.
        Float8 tensors (ml_dtypes arrays, which onnxruntime's numpy bridge does not know) cross as their byte codes
        typed as the float8 type; onnxruntime hands float8 outputs back as those codes."""
        ort = self._ort
        binding = session.io_binding()
        buffers = []  # OrtValues made from numpy arrays borrow their memory: keep the arrays alive
        for name, value in feeds.items():
            if name in packed and packed[name][0] in _FLOAT8:
                codes = np.ascontiguousarray(value).view(np.uint8)
                buffers.append(codes)
                value = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(codes, packed[name][0])
                binding.bind_ortvalue_input(name, value)
                continue
            if name not in packed:
                binding.bind_cpu_input(name, np.ascontiguousarray(value))
                continue
            data_type, _ = packed[name]
            bits, signed = _SUB_BYTE_LAYOUT[data_type]
            value = np.asarray(value)
            buffer = np.zeros(value.shape, np.int8 if signed else np.uint8)  # ORT reads the packed bytes from its start
            raw = pack_sub_byte(value, bits, signed, name)
            buffer.reshape(-1)[:raw.size] = raw.view(buffer.dtype)
            buffers.append(buffer)
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buffer, data_type))
        outputs = {}
        for name in names:
            if name not in packed or packed[name][0] in _FLOAT8:
                binding.bind_output(name, "cpu")
                continue
            data_type, shape = packed[name]
            signed = _SUB_BYTE_LAYOUT[data_type][1]
            buffer = np.zeros(shape, np.int8 if signed else np.uint8)
            buffers.append(buffer)
            outputs[name] = buffer
            binding.bind_ortvalue_output(name, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buffer, data_type))
        session.run_with_iobinding(binding)
        values = binding.get_outputs()  # OrtValues in binding order; sub-byte ones have no .numpy()
        out = {}
        for name, value in zip(names, values):
            if name in outputs:
                data_type, shape = packed[name]
                bits, signed = _SUB_BYTE_LAYOUT[data_type]
                out[name] = unpack_sub_byte(outputs[name].reshape(-1).view(np.uint8), bits, signed, shape)
            elif name in packed:  # float8: the codes, viewed as the ml_dtypes type they are
                out[name] = np.ascontiguousarray(value.numpy()).view(_FLOAT8[packed[name][0]])
            else:
                out[name] = np.asarray(value.numpy())
        return out


_FLOAT8 = {st.data_type: st.np_dtype for st in STORAGE_TYPES.values() if st.is_float and st.bits == 8}  # -> ml_dtypes
_SUB_BYTE_LAYOUT = {onnx.TensorProto.INT4: (4, True), onnx.TensorProto.UINT4: (4, False),
                    onnx.TensorProto.INT2: (2, True), onnx.TensorProto.UINT2: (2, False)}


class OpenVinoBackend:
    """The standard-ONNX QDQ model through OpenVINO (read_model / compile_model on CPU).

    4- and 2-bit graph inputs are handed over as ``openvino.Tensor`` objects of
    the input's element type (i4 / u4 / u2), packed the way OpenVINO packs them:
    element 0 in the lowest bits of byte 0 (for 4-bit: low nibble first), the
    same order as ONNX's int4 / uint4 / uint2 storage. Sub-byte outputs are
    unpacked back to the widened int8 / uint8 arrays the cases hold.
    """

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
        self._packed = _ov_packed_types(openvino)
        # one call into OpenVINO at a time: its CPU plugin runs its own thread pool, and a suite run with two
        # runner threads on a loaded 2-core machine once stalled in a futex wait for 30 minutes
        self._lock = threading.Lock()

    form = "qdq"

    def supports(self, case: Case) -> bool | str:
        path = case.model_file(self.form)
        return True if path.is_file() else f"{path.name} missing"

    def prepare(self, case: Case) -> Any:
        path = str(case.model_file(self.form))
        with self._lock:
            compiled = self._core.compile_model(self._core.read_model(path), self.device)
        inputs = {name: port for port in compiled.inputs for name in port.get_names()}
        outputs = {}  # case output name -> index of the compiled model's output
        graph_outputs: list[str] | None = None
        for name in case.outputs:
            found = [k for k, port in enumerate(compiled.outputs) if name in port.get_names()]
            if found:
                outputs[name] = found[0]
                continue
            if graph_outputs is None:  # a name OpenVINO did not keep: the frontend keeps the graph's output order
                graph_outputs = [o.name for o in onnx.load(path, load_external_data=False).graph.output]
            if name in graph_outputs and len(graph_outputs) == len(compiled.outputs):
                outputs[name] = graph_outputs.index(name)
            # else: left out of run()'s results, which judging reports as a missing output
        return compiled, inputs, outputs

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        compiled, inputs, outputs = prepared
        with self._lock:
            request = compiled.create_infer_request()
            request.infer({name: self._to_ov(name, inputs.get(name), value) for name, value in feeds.items()})
            return {name: self._from_ov(name, request.get_output_tensor(k)) for name, k in outputs.items()}

    def _to_ov(self, name: str, port: Any, value: np.ndarray) -> Any:
        element_type = port.get_element_type() if port is not None else None
        if element_type is None or element_type.bitwidth >= 8:
            return value
        if element_type not in self._packed:
            raise BackendError(f"graph input {name!r} is an OpenVINO {element_type.get_type_name()} tensor, "
                               "which this backend cannot pack")
        bits, signed = self._packed[element_type]
        value = np.asarray(value)
        tensor = self._ov.Tensor(element_type, list(value.shape))
        packed = pack_sub_byte(value, bits, signed, name)
        np.asarray(tensor.data).reshape(-1).view(np.uint8)[:packed.size] = packed
        return tensor

    def _from_ov(self, name: str, tensor: Any) -> np.ndarray:
        element_type = tensor.get_element_type()
        if element_type.bitwidth >= 8:
            return np.array(tensor.data, copy=True)
        if element_type not in self._packed:
            raise BackendError(f"output {name!r} is an OpenVINO {element_type.get_type_name()} tensor, "
                               "which this backend cannot unpack")
        bits, signed = self._packed[element_type]
        shape = tuple(int(d) for d in tensor.get_shape())
        raw = np.asarray(tensor.data).reshape(-1).view(np.uint8)[:tensor.get_byte_size()]
        return unpack_sub_byte(raw, bits, signed, shape)


def _ov_packed_types(openvino: Any) -> dict[Any, tuple[int, bool]]:
    """OpenVINO's sub-byte integer types this backend packs: type -> (bits, signed). OpenVINO has no i2."""
    table = {"i4": (4, True), "u4": (4, False), "i2": (2, True), "u2": (2, False)}
    return {getattr(openvino.Type, n): v for n, v in table.items() if hasattr(openvino.Type, n)}


def _sub_byte(bits: int, signed: bool) -> StorageType:
    return STORAGE_TYPES[f"{'int' if signed else 'uint'}{bits}"]


def pack_sub_byte(values: np.ndarray, bits: int, signed: bool, name: str = "tensor") -> np.ndarray:
    """Widened int8 / uint8 values as packed bytes: element 0 in the lowest ``bits`` bits of byte 0, ONNX's own
    packing (onnx.numpy_helper), which OpenVINO's i4 / u4 / u2 tensors share."""
    storage = _sub_byte(bits, signed)
    flat = np.asarray(values).reshape(-1).astype(np.int64)
    if flat.size and (flat.min() < storage.min or flat.max() > storage.max):
        raise BackendError(f"{name!r} holds values outside [{storage.min}, {storage.max}], which {bits} bits "
                           "cannot carry")
    stored = onnx.numpy_helper.from_array(flat.astype(storage.np_dtype))
    return np.frombuffer(stored.raw_data, np.uint8).copy()


def unpack_sub_byte(raw: np.ndarray, bits: int, signed: bool, shape: tuple[int, ...]) -> np.ndarray:
    """Packed bytes (element 0 in the lowest bits) as a widened int8 (signed) or uint8 array of ``shape``."""
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.asarray(raw, dtype=np.uint8).reshape(-1)
    needed = -(-count * bits // 8)
    if raw.size < needed:
        raise BackendError(f"{raw.size} byte(s) cannot hold {count} {bits}-bit element(s)")
    tensor = onnx.TensorProto(data_type=_sub_byte(bits, signed).data_type, dims=[count],
                              raw_data=raw[:needed].tobytes())
    return onnx.numpy_helper.to_array(tensor).astype(np.int8 if signed else np.uint8).reshape(shape)


def _ov_version(openvino: Any) -> str:
    try:
        return str(openvino.get_version())
    except Exception:
        return ""


class RecordedError(Exception):
    """The error a runtime outside Python recorded for a case (``DIR/<case id>/error.txt``)."""


class ResultsBackend:
    """What a runtime outside Python wrote, per case: ``DIR/<case id>/test_data_set_0/output_k.pb`` (outputs in the
    case's output order) or ``DIR/<case id>/error.txt`` (it refused the model or failed: the text is its message;
    for a must-reject case that is the refusal the case asks for). error.txt wins when both are there; a case with
    neither is unsupported. ``DIR/VERSION`` (first line) names the runtime's version."""

    ERROR_FILE = "error.txt"

    def __init__(self, folder: str | Path, name: str | None = None, version: str = "") -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise BackendError(f"results:{folder}: no such folder")
        self.name = name or f"results:{self.folder}"
        self.version = version or _results_version(self.folder)

    def supports(self, case: Case) -> bool | str:
        folder = self.folder / case.id
        if (folder / self.ERROR_FILE).is_file() or (folder / DATA_SET).is_dir():
            return True
        return f"no results written for this case ({case.id}/{DATA_SET} or {case.id}/{self.ERROR_FILE})"

    def prepare(self, case: Case) -> Any:
        error = self.folder / case.id / self.ERROR_FILE
        if error.is_file():
            try:
                text = " ".join(error.read_text(encoding="utf-8", errors="replace").split())
            except OSError as exc:
                text = f"(unreadable: {exc.strerror or exc})"
            raise RecordedError(text or f"{case.id}/{self.ERROR_FILE} (empty)")
        return self.folder / case.id / DATA_SET, list(case.outputs)

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
    if spec == "tract":  # optional runtimes: their modules import the runtime only when chosen
        from .backend_tract import TractBackend

        return TractBackend()
    if spec == "iree":
        from .backend_iree import IreeBackend

        return IreeBackend()
    if spec.startswith("results:"):
        folder = spec[len("results:"):]
        if not folder:
            raise BackendError("results:DIR needs a folder")
        return ResultsBackend(folder)
    if ":" in spec:
        return _user_backend(spec)
    raise BackendError(f"unknown backend {spec!r}: use one of {', '.join(BACKEND_NAMES)}, MODULE:CLASS or results:DIR")


def _import_backend_module(module_name: str) -> Any:
    """A module by name from sys.path, else from the current directory (no PYTHONPATH needed for a backend file
    beside you), or a .py file by path."""
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            raise BackendError(f"backend module {module_name}: no such file")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        found = None
    here = os.getcwd()
    if found is None and here not in sys.path:
        sys.path.append(here)  # after everything installed: a local file never shadows a package
    return importlib.import_module(module_name)


def _user_backend(spec: str) -> Any:
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise BackendError(f"backend {spec!r}: expected MODULE:CLASS")
    try:
        module = _import_backend_module(module_name)
    except BackendError:
        raise
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
