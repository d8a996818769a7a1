"""Run a typed model on inputs from an .npz file and write its outputs to an .npz file.

Inputs are keyed by graph input name; a quantized input takes its storage
integers (int4 / int2 in an int8 array, uint4 / uint2 in a uint8 array), a
dynamic one float values (quantized by its schema). Outputs are keyed by
graph output name; a quantized output is written as its storage integers
(widened the same way) with a companion "<name>.real" holding the
dequantized values, and for a dynamic type "<name>.scale" and
"<name>.zero_point" with the parameters chosen at run time. Float storage
(float8, float4e2m1) travels as numpy saves ml_dtypes arrays: one raw byte
per value (dtype V1, the type's own encoding; ``.view(ml_dtypes.float8_e4m3fn)``
reads it), in and out alike.

Every input must have its declared rank, fixed dimensions and element kind;
a named symbolic dimension is one size wherever it occurs in the inputs, an
unnamed one (no value, "?", or -1) takes any size on its own. An array of another width of the same
kind (float64 or float16 for a float32 input, int16 / int32 / int64 holding
int8 storage or int8 values) is converted only when every value is exactly
representable in the declared type (storage integers: inside the storage
range); otherwise the run is refused, naming the first value that is not:
nothing is rounded silently. Integers for a float input, or floats for an
integer or static quantized one, are refused. The outputs file may not be
the model or the inputs file. Models that assign a tensor name twice (not
single static assignment) or declare one tensor with two different types are
refused: they have no single answer.
"""

from __future__ import annotations

import argparse
import io
import contextlib
import math
import os
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.lib import format as npy_format

from onnx_qtypes.proto.reader import read_model
from onnx_qtypes.proto.errors import MalformedExtensionError, QTypesError
from onnx_qtypes.proto.files import atomic_write, refuse_overwrite, require_regular_file, standard_output
from onnx_qtypes.proto.storage_types import widen

_NPY_MAGIC = b"\x93NUMPY"
_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError)


class InputError(QTypesError):
    """The inputs file does not fit the model."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="path to a typed .onnx model")
    parser.add_argument("--inputs", metavar="IN.npz",
                        help=".npz (numpy.savez) with one array per graph input, named after it; arrays of another "
                             "width of the declared kind are converted only when every value is exactly representable "
                             "(may be left out for a model without graph inputs, such as a lifted GGUF file)")
    parser.add_argument("--outputs", required=True, metavar="OUT.npz",
                        help=".npz to write the graph outputs to (not the model or the inputs file)")
    parser.add_argument("--kernels", choices=("definitional", "integer"), default="definitional",
                        help="definitional: dequantize, run onnx.reference's operator, quantize (default); "
                             "integer: integer-only kernels where available")


# --- reading the inputs: headers first, data only for arrays that fit ------------------------------


@contextlib.contextmanager
def _open_npz(path: str, expected: str) -> Iterator[zipfile.ZipFile]:
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, expected an .npz file with {expected}")
    require_regular_file(path, "an .npz file", InputError)  # before opening: a FIFO blocks, a device never ends
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(_NPY_MAGIC))
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if head == _NPY_MAGIC:
            raise InputError(f"{path}: is a single .npy array, not an .npz archive; expected an .npz "
                             f"(numpy.savez) with {expected}") from None
        raise InputError(f"{path}: cannot read as .npz: not a zip archive; expected an .npz (numpy.savez) "
                         f"with {expected}") from None
    except _READ_ERRORS as exc:
        raise InputError(f"{path}: cannot read as .npz ({exc})") from None
    with archive:
        yield archive


def _members(path: str, archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """Entry name (member name without .npy, as numpy.load names it) -> member."""
    members: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        if key in members:
            raise InputError(f"{path}: holds two arrays named {key!r}; expected one per graph input")
        members[key] = info
    return members


def _header(path: str, archive: zipfile.ZipFile, key: str, info: zipfile.ZipInfo) -> tuple[tuple[int, ...], np.dtype, str]:
    """Shape and dtype from the member's .npy header, without reading its data, and what is wrong with
    the member's size if its data cannot fill that shape ("" when it can)."""
    try:
        with archive.open(info) as fh:
            version = npy_format.read_magic(fh)
            read = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
            shape, _fortran, dtype = read(fh)
            offset = fh.tell()
    except _READ_ERRORS as exc:
        raise InputError(f"{path}: entry {key!r} (member {info.filename}) is not a .npy array "
                         f"({' '.join(str(exc).split())}); expected an array written by numpy.savez") from None
    size, held = math.prod(shape) * dtype.itemsize, max(info.file_size - offset, 0)
    problem = "" if size <= held else (
        f"{path}: entry {key!r} (member {info.filename}): its header says shape {list(shape)} of {dtype} "
        f"({size} bytes), but it holds {held} bytes of data; the file is truncated or corrupt")
    return tuple(shape), dtype, problem


def _data(path: str, archive: zipfile.ZipFile, key: str, info: zipfile.ZipInfo) -> np.ndarray:
    try:
        with archive.open(info) as fh:
            return npy_format.read_array(fh, allow_pickle=False)
    except MemoryError:
        raise InputError(f"{path}: entry {key!r}: not enough memory to read it") from None
    except _READ_ERRORS as exc:
        raise InputError(f"{path}: entry {key!r} (member {info.filename}): cannot read its data "
                         f"({' '.join(str(exc).split())})") from None


def read_inputs(path: str, specs: Sequence[Any]) -> dict[str, np.ndarray]:
    """The arrays of an .npz file, checked against the declared inputs ``specs`` (``feeds.InputSpec``) from
    their headers before any data is read: a wrong name, shape or element kind is refused without allocating."""
    from onnx_qtypes.reference_ops.errors import FeedError  # noqa: PLC0415
    from onnx_qtypes.reference_ops.feeds import check_headers, check_names  # noqa: PLC0415

    expected = f"one array per graph input, named after it: {[s.name for s in specs if s.required]}"
    with _open_npz(path, expected) as archive:
        members = _members(path, archive)
        try:
            check_names(specs, list(members), noun="entry")  # before reading any header
            headers = {key: _header(path, archive, key, info) for key, info in members.items()}
            check_headers(specs, {key: header[:2] for key, header in headers.items()}, noun="entry")
        except FeedError as exc:
            raise InputError(f"{path}: {exc}") from None
        for _shape, _dtype, problem in headers.values():  # shapes fit the model; now do the sizes fit the file?
            if problem:
                raise InputError(problem)
        return {key: _data(path, archive, key, info) for key, info in members.items()}


def _plain(value: Any) -> np.ndarray:
    array = widen(value)  # .npz has no sub-byte dtypes: held widened, as the suite's files
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
        if qtype.is_dynamic and resolved is not None:  # the calling convention's companions (semantics.md §3)
            for field in ("scale", "zero_point"):
                arrays[f"{name}.{field}"] = _plain(evaluator.parameter_of(value, name, field))
    return arrays


def write_npz(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write the outputs atomically (never a half-written .npz)."""
    archive = io.BytesIO()  # built in memory: zipfile seeks, which a stream target (/dev/stdout, a FIFO) cannot
    np.savez(archive, **arrays)
    with atomic_write(path) as fh:
        fh.write(archive.getbuffer())


def run(args: argparse.Namespace) -> int:
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415
    from onnx_qtypes.reference_ops.errors import EvaluationError, FeedError  # noqa: PLC0415

    refuse_overwrite(args.outputs, model=args.model, inputs_file=args.inputs)
    read = read_model(args.model)  # as every command reads a model (sizes, names, order)
    model = read.model
    try:
        evaluator = ReferenceEvaluator(model, kernels=args.kernels)
    except (EvaluationError, MalformedExtensionError) as exc:  # pointers and tensors: the file goes in front
        raise type(exc)(f"{args.model}: {read.file_text(str(exc))}") from None
    if args.inputs is not None:
        feeds = read_inputs(args.inputs, evaluator.input_specs)
    elif needed := [spec.name for spec in evaluator.input_specs if spec.required]:
        wanted = ", ".join(map(repr, needed))
        raise InputError(f"{args.model}: the model has graph input(s) {wanted}: pass them with --inputs IN.npz")
    else:
        feeds = {}
    names = [o.name for o in model.graph.output]
    try:
        values = evaluator.run(names, feeds)
    except FeedError as exc:
        raise InputError(f"{args.inputs}: {exc}") from None
    except (EvaluationError, MalformedExtensionError) as exc:  # pointers and tensors: the file goes in front
        raise type(exc)(f"{args.model}: {read.file_text(str(exc))}") from None
    write_npz(args.outputs, output_arrays(evaluator, names, values))
    with standard_output() as out:
        print(f"wrote {len(names)} output(s) to {args.outputs} ({args.kernels} kernels)", file=out)
        if args.kernels == "integer":
            fallbacks = {node: why for node, why in evaluator.kernel_log.items() if why != "integer"}
            integer = len(evaluator.kernel_log) - len(fallbacks)
            print(f"integer kernels ran for {integer} of {len(evaluator.kernel_log)} typed node(s)", file=out)
            for node, why in fallbacks.items():
                print(f"  {node}: {why}", file=out)
    return 0
