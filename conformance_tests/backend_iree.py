"""The ``iree`` backend: IREE (``pip install 'onnx-qtypes[iree]'``: iree-base-compiler + iree-base-runtime) on the
standard-ONNX QDQ model, compiled ahead of time for the CPU (``llvm-cpu``) and run on the ``local-sync`` driver.

Per case: onnx's shape inference, IREE's ONNX importer (the torch-mlir ``onnx`` dialect), ``iree-compile`` for
``llvm-cpu`` with ``--iree-llvmcpu-target-cpu=host`` (the code a user deploys on this machine; the published
record names the CPU's instruction-set flags), then the compiled module in its own VM context. A model IREE cannot
import or compile is refused in ``prepare`` with IREE's own diagnostics, condensed to their ``error:`` lines.
Compiling is the slow part: about 0.4 s a case, 5 minutes for the whole suite on 2 cores with ``-j 2``.

This module imports IREE only when the backend is built, so the suite runs without it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx

from .backends import BackendError, ModelFileBackend, fed_inputs, feeds_in_order
from .execution_cases import Case

TARGET = "llvm-cpu"
DRIVER = "local-sync"  # runs each call on the calling thread: -j N threads each run their own case's module


class IreeCompileError(Exception):
    """IREE's importer or compiler refused the model: the message is its diagnostics' error lines."""


class IreeBackend(ModelFileBackend):
    """model.qdq.onnx imported by IREE's ONNX importer, compiled for llvm-cpu, run on the local-sync driver."""

    name = "iree"

    def __init__(self, target_cpu: str = "host") -> None:
        try:
            import iree.compiler
            import iree.runtime
            from iree.compiler.extras import onnx_importer
        except ImportError:
            raise BackendError("the iree backend needs IREE: pip install 'onnx-qtypes[iree]' "
                               "(iree-base-compiler and iree-base-runtime)") from None
        from importlib.metadata import PackageNotFoundError, version

        self._compiler, self._runtime, self._importer = iree.compiler, iree.runtime, onnx_importer
        try:
            self.version = version("iree-base-runtime")
        except PackageNotFoundError:
            self.version = str(getattr(iree.runtime, "__version__", ""))
        self.flags = [f"--iree-llvmcpu-target-cpu={target_cpu}"]
        self._config: Any = None  # one driver and device for every case, made on first use
        self._lock = threading.Lock()

    def prepare(self, case: Case) -> Any:
        """Import and compile (in iree-compile's own process, so cases compile in parallel with -j), then load the
        module into a VM context of its own."""
        model = onnx.shape_inference.infer_shapes(onnx.load(str(case.model_file(self.form))))
        inputs = fed_inputs(model.graph)
        outputs = {v.name: _declared_dtype(v) for v in model.graph.output}
        binary = self._compile(model)
        rt = self._runtime
        with self._lock:
            if self._config is None:
                self._config = rt.Config(DRIVER)
            context = rt.SystemContext(config=self._config)
            module = rt.VmModule.copy_buffer(context.instance, binary)
            context.add_vm_module(module)
        entry = _entry_point(module, model.graph.name)
        return context.modules[module.name][entry], inputs, outputs, list(case.outputs)

    def _compile(self, model: onnx.ModelProto) -> bytes:
        from iree.compiler import ir

        try:
            info = self._importer.ModelInfo(model)
            context = ir.Context()
            module = info.create_module(context=context).operation
            self._importer.NodeImporter.define_function(info.main_graph, module).import_all()
            asm = module.get_asm()
        except Exception as exc:  # the importer's own refusals (unknown element types, unsupported attributes)
            raise IreeCompileError(f"import: {type(exc).__name__}: {_first_lines(str(exc))}") from None
        try:
            return self._compiler.compile_str(asm, target_backends=[TARGET], input_type="onnx",
                                              extra_args=self.flags)
        except self._compiler.CompilerToolError as exc:
            raise IreeCompileError(f"iree-compile: {condense_diagnostics(str(exc))}") from None

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        function, inputs, outputs, wanted = prepared
        results = function(*feeds_in_order(inputs, feeds))
        if not isinstance(results, (list, tuple)):
            results = [results]
        values = {name: _as_declared(np.asarray(value.to_host() if hasattr(value, "to_host") else value), dtype)
                  for (name, dtype), value in zip(outputs.items(), results)}
        return {name: values[name] for name in wanted if name in values}


def _declared_dtype(value: onnx.ValueInfoProto) -> np.dtype | None:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type))
    except (KeyError, TypeError, ValueError):
        return None


def _as_declared(array: np.ndarray, dtype: np.dtype | None) -> np.ndarray:
    """IREE's integers are signless: a uint8 / uint16 graph output comes back as int8 / int16 holding the same bits.
    Viewed as the graph's declared type, the values are the model's; anything else is returned as IREE gave it."""
    if dtype is None or array.dtype == dtype or array.dtype.itemsize != dtype.itemsize:
        return array
    if array.dtype.kind in "iu" and dtype.kind in "iu":
        return array.view(dtype)
    return array


def _entry_point(module: Any, graph_name: str) -> str:
    """The compiled module's synchronous entry point: the graph's name, or the one exported function besides
    IREE's own (``__init``, ``<name>$async``)."""
    names = [n for n in module.function_names if not n.startswith("__") and not n.endswith("$async")]
    if graph_name in names:
        return graph_name
    if len(names) == 1:
        return names[0]
    raise IreeCompileError(f"the compiled module exports {names}, not one entry point for graph {graph_name!r}")


_ILLEGAL = re.compile(r"failed to legalize operation 'torch\.operator' that was explicitly marked illegal: "
                      r"%\S+ = \"torch\.operator\"\([^)]*\) <\{name = \"([\w.]+)\"\}>")  # the op IREE cannot lower
_TEMP = re.compile(r"(?:/[\w.+-]+)+/([\w$.+-]+?)-[0-9a-f]{6}\.(o|so)")  # iree-compile's temporary object files


def condense_diagnostics(text: str, limit: int = 600) -> str:
    """iree-compile's diagnostics as one line: its distinct ``error:`` lines (the linker's first), without the
    random suffixes of temporary files, so alike failures group in reports."""
    errors: list[str] = []
    for line in text.splitlines():
        if "error:" not in line:
            continue
        line = re.sub(r"^<stdin>:\d+:\d+: ", "", _TEMP.sub(r"\1.\2", line.strip()))
        line = re.sub(r'\s*loc\("<stdin>":\d+:\d+\)$', "", _ILLEGAL.sub(r"failed to legalize \1", line))
        if line not in errors:
            errors.append(line)
    return ("; ".join(errors) or _first_lines(text))[:limit]


def _first_lines(text: str, count: int = 3) -> str:
    return " ".join(line.strip() for line in str(text).strip().splitlines()[:count])
