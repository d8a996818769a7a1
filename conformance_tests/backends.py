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
- ``openvino``: the QDQ model through openvino.Core on CPU.
- ``tract``: the QDQ model through Sonos tract, optimized (backend_tract.py;
  extra ``tract``).
- ``iree``: the QDQ model imported by IREE, compiled for llvm-cpu, run on the
  local-sync driver (backend_iree.py; extra ``iree``).

The onnxruntime and OpenVINO backends hand float8, bfloat16, float4 and 4- / 2-bit graph inputs
and outputs over typed by their element type, over their bytes (``to_bytes`` /
``from_bytes``; ``pack_sub_byte`` / ``unpack_sub_byte`` are ONNX's packing).
- ``MODULE:CLASS``: a backend class (or factory) of your own, built with no
  arguments; MODULE is found on sys.path, else in the current directory, or
  is a path to a .py file.
- ``results:DIR``: outputs a runtime outside Python wrote to
  ``DIR/<case id>/test_data_set_0/output_k.pb``, or the error it met (a
  refusal, for a must-reject case) in ``DIR/<case id>/error.txt``.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import ml_dtypes
import numpy as np
import onnx
import onnx.numpy_helper

from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.storage_types import STORAGE_TYPES, StorageType

from .execution_cases import DATA_SET, FORMS, Case, read_tensor
from .text import clean_text

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
    return clean_text(getattr(backend, "version", "") or "")


class ModelFileBackend:
    """What the named backends share (backend_tract.py and backend_iree.py too): a backend runs the case's model in
    its ``form`` and supports every case that has that file."""

    form = "qdq"

    def supports(self, case: Case) -> bool | str:
        path = case.model_file(self.form)
        if path is None:  # a typed-only case: lower writes no standard form for it
            return case.qdq_unavailable or f"no {self.form} model"
        return True if path.is_file() else f"{path.name} missing"

    def _own_name(self, shipped: str) -> str:
        """``shipped``, or the name a vendor's subclass declares (its reports name its runtime, not ours)."""
        return getattr(type(self), "name", None) or shipped


def fed_inputs(graph: onnx.GraphProto) -> list[str]:
    """The graph inputs a caller feeds, in order. An input an initializer also names is an overridable default
    (IR >= 4), but IREE's importer reads it as a constant and takes no argument for it (OpenVINO gives it no port;
    tract's runner is handed the same list): its feed is not applied (a case that feeds another value there fails,
    which is what those runtimes compute)."""
    constants = {i.name for i in graph.initializer}
    return [v.name for v in graph.input if v.name not in constants]


def feeds_in_order(inputs: Sequence[str], feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """``feeds`` as a list in the order of ``inputs``, C-contiguous (np.require keeps a rank-0 feed rank 0, where
    np.ascontiguousarray makes it 1-D), for runtimes that take their inputs by position; BackendError naming the
    first input not fed."""
    missing = [n for n in inputs if n not in feeds]
    if missing:
        raise BackendError(f"no feed for graph input {missing[0]!r}")
    return [np.require(feeds[n], requirements="C") for n in inputs]


class ReferenceBackend(ModelFileBackend):
    """The typed model on onnx_qtypes' ReferenceEvaluator: the definition (or its integer kernels)."""

    def __init__(self, kernels: str = "definitional") -> None:
        from onnx_qtypes import __version__

        self.kernels = kernels
        self.name = self._own_name("reference" if kernels == "definitional" else f"reference-{kernels}")
        self.version = __version__

    form = "typed"

    def prepare(self, case: Case) -> Any:
        from onnx_qtypes.reference_ops import ReferenceEvaluator

        return ReferenceEvaluator(str(case.model_path), kernels=self.kernels), list(case.outputs)

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        evaluator, names = prepared
        results = evaluator.run(names, dict(feeds))
        return {name: np.array(value) for name, value in zip(names, results)}


class OnnxRuntimeBackend(ModelFileBackend):
    """The standard-ONNX QDQ model on onnxruntime's CPU provider."""

    def __init__(self, optimize: bool = True) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise BackendError("the onnxruntime backend needs onnxruntime: pip install onnxruntime") from None
        self._ort = onnxruntime
        self.optimize = optimize
        self.name = self._own_name("onnxruntime" if optimize else "onnxruntime-unoptimized")
        self.version = onnxruntime.__version__

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
        typed = {v.name: v.type.tensor_type.elem_type for v in (*graph.input, *graph.output)
                 if v.type.tensor_type.elem_type in BOUND_BY_TYPE}
        return session, list(case.outputs), typed

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        session, names, typed = prepared
        if not typed:
            return dict(zip(names, session.run(names, dict(feeds))))
        return self._run_typed(session, names, typed, feeds)

    def _run_typed(self, session: Any, names: list[str], typed: dict[str, int], feeds: Mapping[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
        """Float8, bfloat16, float4 and 4- / 2-bit integer tensors have no type onnxruntime's numpy bridge knows:
        they cross as OrtValues of their ONNX type over their bytes (``to_bytes``: codes, sub-byte values packed
        in ONNX's order), and come back as the bytes of the output OrtValue, read by type (``from_bytes``)."""
        ort = self._ort
        binding = session.io_binding()
        buffers = []  # OrtValues made from numpy arrays borrow their memory: keep the arrays alive
        for name, value in feeds.items():
            if name not in typed:
                binding.bind_cpu_input(name, np.ascontiguousarray(value))
                continue
            buffer = to_bytes(value, typed[name], name)
            # ORT takes the tensor's shape from the array and reads its bytes from the start: packed sub-byte
            # values sit at the start of an array of the tensor's shape
            shaped = np.zeros(np.shape(value), buffer.dtype)
            shaped.reshape(-1)[:buffer.size] = buffer
            buffers.append(shaped)
            binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy_with_onnx_type(shaped, typed[name]))
        for name in names:
            binding.bind_output(name, "cpu")
        session.run_with_iobinding(binding)
        out = {}
        for name, value in zip(names, binding.get_outputs()):
            if name in typed:
                out[name] = from_bytes(_ort_value_bytes(value), typed[name], tuple(value.shape()))
            else:
                out[name] = np.asarray(value.numpy())
        return out


def _ort_value_bytes(value: Any) -> np.ndarray:
    """The bytes of a CPU OrtValue (numpy() refuses float8 / bfloat16 / 4-bit element types)."""
    size = int(value.tensor_size_in_bytes())
    if size == 0:
        return np.zeros(0, np.uint8)
    return np.frombuffer(ctypes.string_at(value.data_ptr(), size), np.uint8).copy()


# ONNX element types numpy cannot hand to a runtime as they are: ml_dtypes arrays (float8, bfloat16, float4) and the
# widened int8 / uint8 arrays of 4- and 2-bit storage
_BY_CODE = {**{st.data_type: st.np_dtype for st in STORAGE_TYPES.values() if st.is_float and st.bits == 8},
            onnx.TensorProto.BFLOAT16: ml_dtypes.bfloat16}  # one code of 1 or 2 bytes per element
_FLOAT4 = {st.data_type: st.np_dtype for st in STORAGE_TYPES.values() if st.is_float and st.bits == 4}
_SUB_BYTE_LAYOUT = {onnx.TensorProto.INT4: (4, True), onnx.TensorProto.UINT4: (4, False),
                    onnx.TensorProto.INT2: (2, True), onnx.TensorProto.UINT2: (2, False)}
BOUND_BY_TYPE = frozenset((*_BY_CODE, *_FLOAT4, *_SUB_BYTE_LAYOUT))


def to_bytes(value: np.ndarray, data_type: int, name: str = "tensor") -> np.ndarray:
    """A feed of ONNX element type ``data_type`` as the bytes a runtime API taking raw data wants (flat): float8 /
    bfloat16 as their codes (uint8 / uint16), float4 and 4- / 2-bit integers packed, element 0 in the lowest bits
    of byte 0 (ONNX's order). BackendError when the array is not of the type the case gives such a tensor."""
    value = np.ascontiguousarray(value)
    if data_type in _SUB_BYTE_LAYOUT:
        bits, signed = _SUB_BYTE_LAYOUT[data_type]
        if value.dtype != (np.int8 if signed else np.uint8):
            raise BackendError(f"{name!r}: a {bits}-bit tensor is fed as a widened {'int8' if signed else 'uint8'} "
                               f"array, got {value.dtype}")
        return pack_sub_byte(value, bits, signed, name)
    want = _BY_CODE.get(data_type) or _FLOAT4.get(data_type)
    if want is None:
        raise BackendError(f"{name!r}: element type {onnx.TensorProto.DataType.Name(data_type)} is not bound by bytes")
    if value.dtype != want:
        raise BackendError(f"{name!r}: a {onnx.TensorProto.DataType.Name(data_type)} tensor is fed as an "
                           f"ml_dtypes.{np.dtype(want).name} array, got {value.dtype}")
    if data_type in _FLOAT4:
        return pack_sub_byte(value.view(np.uint8) & 0x0F, 4, False, name)
    return value.reshape(-1).view(np.uint16 if value.dtype.itemsize == 2 else np.uint8)


def from_bytes(raw: np.ndarray, data_type: int, shape: tuple[int, ...]) -> np.ndarray:
    """``to_bytes`` undone: a runtime's output bytes of ``data_type`` as the array the cases hold (ml_dtypes for
    float8 / bfloat16 / float4, widened int8 / uint8 for 4- and 2-bit integers)."""
    raw = np.asarray(raw).reshape(-1).view(np.uint8)
    if data_type in _SUB_BYTE_LAYOUT:
        bits, signed = _SUB_BYTE_LAYOUT[data_type]
        return unpack_sub_byte(raw, bits, signed, shape)
    if data_type in _FLOAT4:
        return unpack_sub_byte(raw, 4, False, shape).view(_FLOAT4[data_type])
    dtype = np.dtype(_BY_CODE[data_type])
    count = int(np.prod(shape, dtype=np.int64))
    if raw.size < count * dtype.itemsize:
        raise BackendError(f"{raw.size} byte(s) cannot hold {count} {dtype.name} element(s)")
    return raw[:count * dtype.itemsize].copy().view(dtype).reshape(shape)


class OpenVinoBackend(ModelFileBackend):
    """The standard-ONNX QDQ model through OpenVINO (read_model / compile_model on CPU).

    Graph inputs and outputs numpy cannot carry as they are cross as ``openvino.Tensor`` objects of the port's
    element type over their bytes (``to_bytes`` / ``from_bytes``): f8e4m3 / f8e5m2 / bf16 as their codes, f4e2m1
    and i4 / u4 / u2 packed the way OpenVINO packs them, element 0 in the lowest bits of byte 0 (for 4-bit: low
    nibble first), the same order as ONNX's storage. Outputs come back as the arrays the cases hold.
    """

    def __init__(self, device: str = "CPU") -> None:
        try:
            import openvino
        except ImportError:
            raise BackendError("the openvino backend needs OpenVINO: pip install openvino") from None
        self._ov = openvino
        self.device = device
        self.name = self._own_name("openvino")
        self.version = getattr(openvino, "__version__", "") or _ov_version(openvino)
        self._core = openvino.Core()
        self._types = _ov_bound_types(openvino)
        # one call into OpenVINO at a time: its CPU plugin runs its own thread pool, and a suite run with two
        # runner threads on a loaded 2-core machine once stalled in a futex wait for 30 minutes
        self._lock = threading.Lock()

    def prepare(self, case: Case) -> Any:
        path = str(case.model_file(self.form))
        with self._lock:
            compiled = self._core.compile_model(self._core.read_model(path), self.device)
        inputs = {name: port for port in compiled.inputs for name in port.get_names()}
        graph = onnx.load(path, load_external_data=False).graph
        # a graph input an initializer also names (an overridable default, IR >= 4) that OpenVINO's frontend read
        # as a constant: it has no port, so its feed is not applied, as tract and IREE (fed_inputs) do not apply it
        constants = {v.name for v in graph.input} - set(fed_inputs(graph)) - set(inputs)
        outputs = {}  # case output name -> index of the compiled model's output
        graph_outputs: list[str] | None = None
        for name in case.outputs:
            found = [k for k, port in enumerate(compiled.outputs) if name in port.get_names()]
            if found:
                outputs[name] = found[0]
                continue
            if graph_outputs is None:  # a name OpenVINO did not keep: the frontend keeps the graph's output order
                graph_outputs = [o.name for o in graph.output]
            if name in graph_outputs and len(graph_outputs) == len(compiled.outputs):
                outputs[name] = graph_outputs.index(name)
            # else: left out of run()'s results, which judging reports as a missing output
        return compiled, inputs, outputs, constants

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        compiled, inputs, outputs, constants = prepared
        with self._lock:
            request = compiled.create_infer_request()
            request.infer({name: self._to_ov(name, inputs.get(name), value) for name, value in feeds.items()
                           if name not in constants})
            return {name: self._from_ov(name, request.get_output_tensor(k)) for name, k in outputs.items()}

    def _to_ov(self, name: str, port: Any, value: np.ndarray) -> Any:
        element_type = port.get_element_type() if port is not None else None
        if element_type is None or (element_type.bitwidth >= 8 and element_type not in self._types):
            return value
        if element_type not in self._types:
            raise BackendError(f"graph input {name!r} is an OpenVINO {element_type.get_type_name()} tensor, "
                               "which this backend cannot pack")
        value = np.asarray(value)
        tensor = self._ov.Tensor(element_type, list(value.shape))
        raw = to_bytes(value, self._types[element_type], name).view(np.uint8)
        np.asarray(tensor.data).reshape(-1).view(np.uint8)[:raw.size] = raw
        return tensor

    def _from_ov(self, name: str, tensor: Any) -> np.ndarray:
        element_type = tensor.get_element_type()
        if element_type.bitwidth >= 8 and element_type not in self._types:
            return np.array(tensor.data, copy=True)
        if element_type not in self._types:
            raise BackendError(f"output {name!r} is an OpenVINO {element_type.get_type_name()} tensor, "
                               "which this backend cannot unpack")
        shape = tuple(int(d) for d in tensor.get_shape())
        raw = np.asarray(tensor.data).reshape(-1).view(np.uint8)[:tensor.get_byte_size()]
        return from_bytes(raw, self._types[element_type], shape)


def _ov_bound_types(openvino: Any) -> dict[Any, int]:
    """OpenVINO element types this backend hands over by bytes -> the ONNX type they are (OpenVINO's f8e4m3 is
    ONNX's float8e4m3fn; it has no i2 and no fnuz float8)."""
    table = {"i4": onnx.TensorProto.INT4, "u4": onnx.TensorProto.UINT4, "i2": onnx.TensorProto.INT2,
             "u2": onnx.TensorProto.UINT2, "f8e4m3": onnx.TensorProto.FLOAT8E4M3FN,
             "f8e5m2": onnx.TensorProto.FLOAT8E5M2, "bf16": onnx.TensorProto.BFLOAT16,
             "f4e2m1": onnx.TensorProto.FLOAT4E2M1}
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
    neither is unsupported. ``DIR/NAME`` (first line) names the runtime, as reports and known-deviation files show
    it (default ``results:<the folder's own name>``, however its path was typed); ``DIR/VERSION`` its version."""

    ERROR_FILE = "error.txt"
    NAME_FILE, VERSION_FILES = "NAME", ("VERSION", "version.txt")

    def __init__(self, folder: str | Path, name: str | None = None, version: str = "") -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise BackendError(f"results:{folder}: no such folder")
        recorded = _first_line(self.folder, (self.NAME_FILE,))
        if recorded is not None and not recorded.strip():
            raise BackendError(f"{self.folder / self.NAME_FILE}: empty; its first line names the runtime")
        self.name = name or (clean_text(recorded.strip()) if recorded else f"results:{self.folder.resolve().name}")
        self.version = version or (_first_line(self.folder, self.VERSION_FILES) or "").strip()

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

    def stray_folders(self, case_ids: Iterable[str]) -> list[str]:
        """Folders of DIR that name no case of the suite (a typo, a renamed case): nothing reads them."""
        known = set(case_ids)
        try:
            return sorted(p.name for p in self.folder.iterdir()
                          if p.is_dir() and not p.name.startswith(".") and p.name not in known)
        except OSError:
            return []


def _first_line(folder: Path, names: Sequence[str]) -> str | None:
    """The first line of the first of ``names`` in ``folder`` ("" when it is empty or unreadable), None when none
    is there."""
    for name in names:
        path = folder / name
        if path.is_file():
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                return ""
            return lines[0] if lines else ""
    return None


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
    except (BackendError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # SystemExit at import time too: a located error, not the process's end
        raise BackendError(f"backend {spec!r}: cannot import {module_name} ({type(exc).__name__}: {exc})") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise BackendError(f"backend {spec!r}: {module_name} has no {attr}")
    try:
        backend = target() if callable(target) else target
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise BackendError(f"backend {spec!r}: constructing it failed ({type(exc).__name__}: {exc})") from None
    check_backend(backend, spec)
    return backend


def check_backend(backend: Any, spec: str) -> None:
    """BackendError naming the first member that does not follow the contract (BACKENDS.md): ``supports``,
    ``prepare`` and ``run`` methods, ``name`` a non-empty string, ``version`` (if given) a string, ``form`` (if
    given) "typed" or "qdq"."""
    missing = [m for m in ("supports", "prepare", "run") if not callable(getattr(backend, m, None))]
    if missing:
        raise BackendError(f"backend {spec!r}: not a Backend (no {', '.join(missing)} method)")
    name = getattr(backend, "name", None)
    if not isinstance(name, str) or not name.strip():
        got = "none" if name is None else f"{type(name).__name__} {name!r}"
        raise BackendError(f"backend {spec!r}: member 'name' must be a non-empty string, how reports and known-"
                           f"deviation files name the backend (got {got})")
    version = getattr(backend, "version", None)
    if version is not None and not isinstance(version, str):
        raise BackendError(f"backend {spec!r}: member 'version' must be a string, e.g. '1.5.0' or "
                           f"my_runtime.__version__ (got {type(version).__name__} {version!r})")
    form = getattr(backend, "form", None)
    if form is not None and form not in FORMS:
        raise BackendError(f"backend {spec!r}: member 'form' is {form!r}; use 'qdq' (it runs model.qdq.onnx) or "
                           "'typed' (it runs model.onnx), or leave it out")
