"""Run a typed model on inputs from an .npz file and write its outputs to an .npz file.

Inputs are keyed by graph input name; a quantized input takes its storage
integers (int4 / int2 in an int8 array, uint4 / uint2 in a uint8 array), a
dynamic one float values (quantized by its schema). Outputs are keyed by
graph output name; a quantized output is written as its storage integers
(widened the same way) with a companion "<name>.real" holding the
dequantized values, and for a dynamic type "<name>.scale" and
"<name>.zero_point" with the parameters chosen at run time.
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
from typing import Any

import numpy as np
import onnx

from onnx_qtypes.proto import load, static_shape
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.files import atomic_write
from onnx_qtypes.proto.qtype import QType

_WIDE = {"int2": np.int8, "int4": np.int8, "uint2": np.uint8, "uint4": np.uint8}


class InputError(QTypesError):
    """The inputs file does not fit the model."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="path to a typed .onnx model")
    parser.add_argument("--inputs", required=True, metavar="IN.npz", help=".npz with one array per graph input")
    parser.add_argument("--outputs", required=True, metavar="OUT.npz", help=".npz to write the graph outputs to")
    parser.add_argument("--kernels", choices=("definitional", "integer"), default="definitional",
                        help="definitional: dequantize, run onnx.reference's operator, quantize (default); "
                             "integer: integer-only kernels where available")


def _describe(vi: onnx.ValueInfoProto, qtype: QType | None) -> str:
    shape = static_shape(vi)
    dims = "unknown shape" if shape is None else "shape [" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
    if qtype is not None:
        kind = f"{qtype.storage} storage of {qtype}" if not qtype.is_dynamic else f"float values for dynamic {qtype}"
    else:
        kind = onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type).lower()
    return f"{kind}, {dims}"


def _read_npz(path: str) -> dict[str, np.ndarray]:
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise InputError(f"{path}: not an .npz archive (a single .npy array?)")
            return {key: data[key] for key in data.files}
    except InputError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"{path}: cannot read as .npz ({type(exc).__name__}: {exc})") from None


def _check_input(path: str, vi: onnx.ValueInfoProto, qtype: QType | None, value: np.ndarray) -> np.ndarray:
    name = vi.name
    want = f"expected {_describe(vi, qtype)}"
    shape = static_shape(vi)
    if shape is not None and (len(shape) != value.ndim or any(d is not None and d != v for d, v in zip(shape, value.shape))):
        raise InputError(f"{path}: input {name!r}: {want}, got shape {list(value.shape)}")
    kind = value.dtype.kind
    if qtype is not None:
        if qtype.is_dynamic:
            return value
        if kind not in "iu":
            raise InputError(f"{path}: input {name!r}: {want}, got {value.dtype} values")
        return value
    elem = vi.type.tensor_type.elem_type
    if elem == onnx.TensorProto.UNDEFINED:
        return value
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem))
    if dtype.kind == "f" and kind not in "f":
        raise InputError(f"{path}: input {name!r}: {want}, got {value.dtype} values")
    if dtype.kind in "iu" and kind not in "iu":
        raise InputError(f"{path}: input {name!r}: {want}, got {value.dtype} values")
    if dtype.kind == "b" and kind != "b":
        raise InputError(f"{path}: input {name!r}: {want}, got {value.dtype} values")
    if dtype.kind in "iu" and value.size and (value.min() < np.iinfo(dtype).min or value.max() > np.iinfo(dtype).max):
        raise InputError(f"{path}: input {name!r}: {want}, values exceed the range of {dtype}")
    return value.astype(dtype, copy=False)


def read_inputs(path: str, model: onnx.ModelProto, qtypes: dict[str, QType]) -> dict[str, np.ndarray]:
    """The feeds for ``model`` from an .npz file, checked against the declared inputs."""
    data = _read_npz(path)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in initializers]
    names = {vi.name for vi in inputs}
    companions = {f"{n}.{part}" for n in names if n in qtypes and qtypes[n].is_dynamic for part in ("scale", "zero_point")}
    unknown = sorted(set(data) - names - companions)
    if unknown:
        raise InputError(f"{path}: entry {unknown[0]!r} is not a graph input; the model's inputs are {sorted(names)}")
    feeds = {}
    for vi in inputs:
        qtype = qtypes.get(vi.name)
        if vi.name not in data:
            raise InputError(f"{path}: missing input {vi.name!r} ({_describe(vi, qtype)})")
        feeds[vi.name] = _check_input(path, vi, qtype, data[vi.name])
    feeds.update({k: data[k] for k in companions if k in data})
    return feeds


def _plain(value: Any) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.name in _WIDE:
        return array.astype(_WIDE[array.dtype.name])
    if array.dtype.name == "bfloat16":
        return array.astype(np.float32)
    return np.asarray(array.view(np.ndarray))


def output_arrays(evaluator: Any, names: list[str], values: list[Any]) -> dict[str, np.ndarray]:
    """The .npz entries for the outputs: storage, <name>.real and run-time parameters of dynamic types."""
    arrays: dict[str, np.ndarray] = {}
    qtypes = evaluator.qtypes
    for name, value in zip(names, values):
        arrays[name] = _plain(value)
        qtype = qtypes.get(name)
        if qtype is None:
            continue
        real = evaluator.dequantized(name, value)
        arrays[f"{name}.real"] = _plain(real.astype(qtype.expressed_type.np_dtype))
        resolved = getattr(value, "qtype", None)
        if qtype.is_dynamic and resolved is not None:
            arrays[f"{name}.scale"] = np.asarray(resolved.scale, qtype.expressed_type.np_dtype).astype(np.float32)
            arrays[f"{name}.zero_point"] = np.asarray(resolved.zero_point, np.int64)
    return arrays


def write_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write the outputs atomically (never a half-written .npz)."""
    with atomic_write(path) as fh:
        np.savez(fh, **arrays)


def run(args: argparse.Namespace) -> int:
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415

    model = load(args.model)
    evaluator = ReferenceEvaluator(model, kernels=args.kernels)
    feeds = read_inputs(args.inputs, model, evaluator.qtypes)
    names = [o.name for o in model.graph.output]
    values = evaluator.run(names, feeds)
    write_npz(args.outputs, output_arrays(evaluator, names, values))
    print(f"wrote {len(names)} output(s) to {args.outputs} ({args.kernels} kernels)")
    if args.kernels == "integer":
        fallbacks = {node: why for node, why in evaluator.kernel_log.items() if why != "integer"}
        integer = len(evaluator.kernel_log) - len(fallbacks)
        print(f"integer kernels ran for {integer} of {len(evaluator.kernel_log)} typed node(s)")
        for node, why in fallbacks.items():
            print(f"  {node}: {why}", file=sys.stdout)
    return 0
