"""Shared builders: small real ONNX models, typed and untyped."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parents[1]
IR_VERSION, OPSET = 10, 21  # onnxruntime 1.31 refuses onnx 1.23's defaults (IR 14 / opset 28)


def load_script(relative: str):
    """Import a repository script (examples/, benchmarks/) by path."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def committed_cases(*ids: str) -> dict:
    """The installed suite's cases of these ids, by id (execution and must-reject); fails naming any the suite no
    longer has, so a backend test never silently runs fewer cases."""
    from onnx_qtypes.conformance import load_suite

    by_id = {c.id: c for c in load_suite()}
    missing = [i for i in ids if i not in by_id]
    assert not missing, f"committed cases renamed or removed: {missing}"
    return {i: by_id[i] for i in ids}


def add_model(elem_type: int = TensorProto.INT8) -> onnx.ModelProto:
    """c = Add(a, b) on int8 tensors of shape [2]."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"], name="add")],
        "add",
        [helper.make_tensor_value_info(n, elem_type, [2]) for n in ("a", "b")],
        [helper.make_tensor_value_info("c", elem_type, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def weights_model(n: int = 16, elem_type: int = TensorProto.INT8) -> onnx.ModelProto:
    """y = DequantizeLinear(w) with w an initializer of n int8 values."""
    w = np.arange(n, dtype=np.int64) % 100
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq")],
        "weights",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
        [
            onnx.numpy_helper.from_array(w.astype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)), "w"),
            onnx.numpy_helper.from_array(np.array(0.5, np.float32), "s"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
