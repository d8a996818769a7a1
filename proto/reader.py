"""The one way every command reads a model: check, show, lift, lower, run, calibrate, compare.

    read = read_model("model.onnx")      # or bytes, or an onnx.ModelProto (never changed)
    read.model                           # what the command works on
    read.file_pointer("/graph/node/3")   # the same place in the file as it was read

A model that one command refuses, every command refuses, in the same words:
the file must be a readable regular file (``load``: a symlink loop, a folder,
a FIFO or an unreadable file is one line naming it), every name UTF-8 text
(``names``), every stored tensor exactly as large as its dims say
(``tensor_sizes``: an initializer shorter than its dims, or one claiming
2^40 elements over a few bytes, is refused before anything allocates), and
every graph in topological order (``graph_order``: a file written out of
order is sorted, a cycle refused, naming the node). The caller's
ModelProto is never changed: a model that needs sorting is copied first.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import onnx
from onnx import AttributeProto, ModelProto, TensorProto

from onnx_qtypes.proto.errors import ModelLoadError, QTypesError
from onnx_qtypes.proto.graph_order import Order, file_pointer, sort_graphs, topological_order
from onnx_qtypes.proto.model import iter_graphs, load
from onnx_qtypes.proto.names import require_utf8_names
from onnx_qtypes.proto.tensor_sizes import size_problem


@dataclasses.dataclass(frozen=True)
class ReadModel:
    """A model as the shared reader hands it to a command, and the way back to the file's places."""

    model: ModelProto
    source: str  # the path as given, "<bytes>" or "<model>"
    orders: Order = dataclasses.field(default_factory=dict)  # graphs put in topological order (sorted -> file)

    @property
    def path(self) -> str:
        """The file's path, or "" for bytes and objects."""
        return "" if self.source.startswith("<") else self.source

    def file_pointer(self, pointer: str) -> str:
        return file_pointer(pointer, self.orders)


def read_model(model: ReadModel | ModelProto | str | os.PathLike | bytes | bytearray | memoryview,
               who: str = "") -> ReadModel:
    """Read ``model`` (a path, bytes, a ModelProto, or a ReadModel as returned before) the one shared way.

    Raises ModelLoadError naming the file (or ``who`` for objects and bytes) and the field at fault.
    """
    if isinstance(model, ReadModel):
        return model
    if isinstance(model, ModelProto):
        proto, source = model, "<model>"
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto, source = load(bytes(model)), "<bytes>"
    elif isinstance(model, (str, os.PathLike)):
        proto, source = load(model), os.fspath(model)
    else:
        raise QTypesError(f"{who or 'read'}: expected a path, bytes or onnx.ModelProto, got {type(model).__name__}")
    where = source if not source.startswith("<") else who
    try:
        require_utf8_names(proto, "")
        require_sizes(proto)
        if _out_of_order(proto):
            if proto is model:  # the caller's object stays as it was
                copy = ModelProto()
                copy.CopyFrom(proto)
                proto = copy
            return ReadModel(proto, source, sort_graphs(proto))
    except ModelLoadError as exc:
        raise ModelLoadError(f"{where}: {exc}" if where else str(exc)) from None
    return ReadModel(proto, source)


def require_sizes(model: ModelProto) -> None:
    """ModelLoadError naming the tensor when a stored tensor does not hold what its dims say (``size_problem``)."""
    for pointer, tensor in _stored_tensors(model):
        problem = size_problem(tensor)
        if problem:
            raise ModelLoadError(f"{pointer}: tensor {tensor.name!r}: {problem}")


def _stored_tensors(model: ModelProto) -> Iterator[tuple[str, TensorProto]]:
    """Every initializer and Constant value, in every graph and function, with its JSON pointer."""
    graphs: list[tuple[str, onnx.GraphProto | onnx.FunctionProto]] = list(iter_graphs(model))
    graphs += [(f"/functions/{f}", function) for f, function in enumerate(model.functions)]
    for pointer, graph in graphs:
        for i, tensor in enumerate(getattr(graph, "initializer", ())):
            yield f"{pointer}/initializer/{i}", tensor
        for n, node in enumerate(graph.node):
            if node.op_type == "Constant":
                for a, attr in enumerate(node.attribute):
                    if attr.type == AttributeProto.TENSOR:
                        yield f"{pointer}/node/{n}/attribute/{a}/t", attr.t


def _out_of_order(model: ModelProto) -> bool:
    """True when a graph or function body is out of topological order (ModelLoadError on a cycle)."""
    found = False
    for pointer, graph in iter_graphs(model):
        found = topological_order(graph, pointer) is not None or found
    for f, function in enumerate(model.functions):
        found = topological_order(function, f"/functions/{f}") is not None or found
    return found


__all__ = ["ReadModel", "read_model", "require_sizes"]
