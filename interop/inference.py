"""Element types and shapes of a graph's tensors, as onnx.shape_inference gives them.

``infer`` runs the inference of a whole model. ``DeferredInference`` answers for a model the same, and runs that
inference only when asked of a tensor its file does not settle: a QDQ file as quantizers write it declares every
float tensor with a static shape, and the outputs of its QuantizeLinear / DequantizeLinear (and Identity) nodes
follow from those declarations and their parameters through onnx's inference of that one node (at 16,000 QDQ
nodes, the whole model's inference was a seventh of `check`'s time).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import onnx
from onnx import GraphProto, ModelProto

from onnx_qtypes.proto import declared_bytes
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS

_C = onnx.shape_inference.C  # onnx.shape_inference.infer_shapes' own binding: serialized model in, serialized model out
_NODE_INFERRED = frozenset({"QuantizeLinear", "DequantizeLinear", "Identity"})  # inference reads types, not values
_DEPTH = 8  # nodes of those kinds in a row that node_answer follows back to settled tensors


@dataclasses.dataclass(frozen=True)
class Inferred:
    elem_types: dict[str, int]
    shapes: dict[str, tuple[int | None, ...]]


def infer(model: ModelProto, *, initializers: bool = True) -> Inferred:
    """Element types and shapes of every tensor onnx.shape_inference can type.

    onnx.shape_inference.infer_shapes, with the inferred model read back as its main graph's declarations only
    (``declared_bytes.main_graph``): the same answers as ``declared_types`` of the inferred graph, without
    turning its nodes and initializers into messages again. ``initializers`` False leaves the initializers'
    own types out (a GraphIndex of ``model.graph`` states them itself; a declaration of the same name, which
    they would hide, is then in the result, and the index hides it).
    """
    try:
        data = model.SerializeToString()
    except Exception:  # over protobuf's 2 GiB: what the declarations say (an inference failure costs only shapes)
        return declared_types(model.graph)
    return _inferred(data, model.graph, initializers)


def _inferred(data: bytes, graph: GraphProto | None, initializers: bool) -> Inferred:
    """``infer`` of the model serialized as ``data``; ``graph``: its main graph as it was when serialized (None: read
    from ``data`` when needed)."""
    try:
        inferred = _C.infer_shapes(data, False, False, False)  # check_type, strict, data_prop
        lists = declared_bytes.main_graph(inferred)
    except Exception:  # an inference failure only costs us shapes, never correctness
        return declared_types(ModelProto.FromString(data).graph if graph is None else graph)
    elem_types: dict[str, int] = {}
    shapes: dict[str, tuple[int | None, ...]] = {}
    for init in graph.initializer if initializers else ():  # inference leaves the initializers as they are
        elem_types[init.name] = init.data_type
        shapes[init.name] = tuple(init.dims)
    for name, _, found in _declarations(lists):
        if found is None:
            continue
        elem_type, shape = found
        if elem_type and name not in elem_types:
            elem_types[name] = elem_type
        if shape is not None and name not in shapes:
            shapes[name] = shape
    return Inferred(elem_types, shapes)


def _declarations(lists: dict[str, list[tuple[str, bytes]]]) -> Iterator[tuple[str, bytes, tuple | None]]:
    """(name, TypeProto bytes, ``_tensor_type`` of them) of ``declared_bytes.main_graph``'s lists, inputs, outputs,
    then value_info, in order; each distinct type read once (most declarations share one)."""
    read: dict[bytes, tuple[int, tuple[int | None, ...] | None] | None] = {}
    for kind in ("input", "output", "value_info"):
        for name, type_bytes in lists[kind]:
            found = read.get(type_bytes, read)
            if found is read:
                found = read[type_bytes] = _tensor_type(onnx.TypeProto.FromString(type_bytes))
            yield name, type_bytes, found


def _tensor_type(type_proto: onnx.TypeProto) -> tuple[int, tuple[int | None, ...] | None] | None:
    """(elem_type, shape or None) of a tensor type, as ``declared_types`` reads it; None for other types."""
    if type_proto.WhichOneof("value") != "tensor_type":
        return None
    tensor_type = type_proto.tensor_type
    shape = None
    if tensor_type.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)
    return tensor_type.elem_type, shape


def declared_types(graph: GraphProto) -> Inferred:
    """Element types and shapes that ``graph``'s initializers and declarations state (after inference: all)."""
    elem_types: dict[str, int] = {}
    shapes: dict[str, tuple[int | None, ...]] = {}
    for init in graph.initializer:
        elem_types[init.name] = init.data_type
        shapes[init.name] = tuple(init.dims)
    for vi in (*graph.input, *graph.output, *graph.value_info):
        tensor_type = vi.type.tensor_type
        if vi.type.WhichOneof("value") != "tensor_type":
            continue
        if tensor_type.elem_type and vi.name not in elem_types:
            elem_types[vi.name] = tensor_type.elem_type
        if tensor_type.HasField("shape") and vi.name not in shapes:
            shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)
    return Inferred(elem_types, shapes)


class DeferredInference:
    """``infer(model, initializers=False)``, run only when a GraphIndex is asked of a tensor the model does not settle.

    Settled without running it: a tensor whose one declaration in the main graph is a tensor type with an element type
    and a static shape (inference keeps a declaration it agrees with, and one it contradicts); and the output, declared
    nowhere, of a QuantizeLinear, DequantizeLinear or Identity node whose inputs are settled tensors, initializers or
    outputs so settled by nodes before it in the file: onnx's inference of that one node
    (``onnx.shape_inference.infer_node_outputs``, at the version of its domain the model imports), once per distinct
    attributes and input types. No node answers where onnx's whole inference would fail or skip (a domain the model
    does not import, a graph input its initializer contradicts) or type an initializer differently (before IR 4). The
    model is serialized when this is made, so a step that rewrites the graph afterwards changes no answer of the whole
    inference; a node's inputs are those the index read (no step changes those nodes' attributes).
    """

    def __init__(self, model: ModelProto) -> None:
        self.opset_import = [onnx.OperatorSetIdProto(domain=o.domain, version=o.version) for o in model.opset_import]
        self.ir_version = model.ir_version
        self.versions = {o.domain: o.version for o in model.opset_import}
        # (False: the whole inference decides every tensor no declaration settles; so for a domain imported twice,
        # whose version onnx's inference and the checker take from the last import, other steps from the first)
        self.answers_nodes = (any(o.domain in STANDARD_DOMAINS for o in model.opset_import)
                              and len(self.versions) == len(model.opset_import))
        self._unserializable: Inferred | None = None
        try:
            self.data = model.SerializeToString()
        except Exception:  # over protobuf's 2 GiB: infer's answer, the declarations, now (nodes tell nothing more)
            self.data, self.answers_nodes = b"", False
            self._unserializable = declared_types(model.graph)
        lists = declared_bytes.main_graph(self.data)
        counts: dict[str, int] = {}
        for kind in ("input", "output", "value_info"):
            for name, _ in lists[kind]:
                counts[name] = counts.get(name, 0) + 1
        self.declared = set(counts)
        self.settled: dict[str, bytes] = {}  # name -> its TypeProto bytes
        self.elem_types: dict[str, int] = {}
        self.shapes: dict[str, tuple[int | None, ...]] = {}
        for name, type_bytes, found in _declarations(lists):
            if counts[name] != 1 or found is None:
                continue
            elem_type, shape = found
            if elem_type and shape is not None and all(d is not None and d >= 0 for d in shape):
                self.settled[name] = type_bytes
                self.elem_types[name] = elem_type
                self.shapes[name] = shape
        self._answers: dict[tuple, tuple[int, tuple[int | None, ...]] | None] = {}
        self._produced_once: set[str] | None = None
        self._inputs: dict[str, bytes] = {}
        for name, type_bytes in lists["input"]:
            self._inputs.setdefault(name, type_bytes)
        self._by_name: dict[str, tuple[int, tuple[int | None, ...]] | None] = {}

    def full(self) -> Inferred:
        """What ``infer(model, initializers=False)`` said of the model when this was made."""
        return self._unserializable or _inferred(self.data, None, False)

    def node_answer(self, ix, name: str, depth: int = 0) -> tuple[int, tuple[int | None, ...]] | None:
        """(elem_type, shape) of ``name`` (in GraphIndex ``ix``) when a QuantizeLinear, DequantizeLinear or Identity
        writes it from tensors settled, initializers, or tensors so written; None when only the whole model's inference
        can tell."""
        if name in self._by_name:
            return self._by_name[name]
        self._by_name[name] = None  # (a cycle in a malformed graph ends here)
        p = ix.producer.get(name)
        if (not self.answers_nodes or p is None or name in self.declared or name in ix.initializers
                or name in ix.input_set or ix.op_types[p] not in _NODE_INFERRED
                or ix.domains[p] not in STANDARD_DOMAINS or self.ir_version > onnx.IR_VERSION):
            return None
        if self._produced_once is None:
            self._first_node_answer(ix)
        outputs, inputs, version = ix.node_outputs[p], ix.node_inputs[p], self._version(ix.domains[p])
        if (not self.answers_nodes or version is None or version > onnx.defs.onnx_opset_version()
                or name not in self._produced_once or len(outputs) != 1 or not inputs or not all(inputs)):
            return None
        types: list[bytes | tuple] = []
        for n in inputs:
            if n in self.settled and n not in ix.initializers:
                types.append(self.settled[n])
            elif (n in ix.initializers and n not in ix.input_set and n not in ix.producer and n not in self.declared
                  and self.ir_version >= 4):  # (before IR 4 an initializer that is no graph input has no type)
                init = ix.initializers[n]
                types.append((init.data_type, tuple(init.dims)))
            elif (depth < _DEPTH and ix.producer.get(n, p) < p  # inference goes in file order: written before
                  and (written := self.node_answer(ix, n, depth + 1)) is not None):
                types.append(written)
            else:
                return None
        node = ix.nodes[p]
        key = (ix.op_types[p], version, tuple(types), b"".join(a.SerializeToString() for a in node.attribute))
        if key not in self._answers:
            self._answers[key] = self._infer_node(key, node)
        self._by_name[name] = self._answers[key]
        return self._by_name[name]

    def _first_node_answer(self, ix) -> None:  # noqa: ANN001 - GraphIndex
        """What every node answer needs of the whole graph, found when the first is asked: the names one node writes
        (a name two nodes write: the whole inference decides); whether every node's domain is imported, and whether
        the graph inputs that initializers also name are declared as those initializers are (where not, onnx's whole
        inference fails and gives no node's output a type: no node answers then)."""
        seen: set[str] = set()
        twice: set[str] = set()
        for outputs in ix.node_outputs:
            for out in outputs:
                (twice if out in seen else seen).add(out)
        self._produced_once = seen - twice
        if any(self._version(domain) is None for domain in set(ix.domains) if domain != "ai.onnx") or (
                "ai.onnx" in ix.domains and "ai.onnx" not in self.versions):  # onnx fails for want of an import
            self.answers_nodes = False
            return
        for name in ix.input_set.intersection(ix.initializers):
            init = ix.initializers[name]
            declared = _tensor_type(onnx.TypeProto.FromString(self._inputs.get(name, b"")))
            if declared != (init.data_type, tuple(init.dims)):
                self.answers_nodes = False
                return

    def _version(self, domain: str) -> int | None:
        """The opset version of ``domain`` onnx's inference reads a node at (the default domain "" may be imported as
        "ai.onnx"); None when the model does not import it."""
        if domain in self.versions:
            return self.versions[domain]
        return self.versions.get("ai.onnx") if domain == "" else None

    def _infer_node(self, key: tuple, node: onnx.NodeProto) -> tuple[int, tuple[int | None, ...]] | None:
        op_type, version, types, _ = key
        stand_in = onnx.NodeProto(op_type=op_type, input=[f"i{k}" for k in range(len(types))], output=["o"])
        stand_in.attribute.extend(node.attribute)
        input_types = {}
        for k, t in enumerate(types):
            input_types[f"i{k}"] = (onnx.TypeProto.FromString(t) if isinstance(t, bytes)
                                    else onnx.helper.make_tensor_type_proto(t[0], list(t[1])))
        try:
            schema = onnx.defs.get_schema(op_type, version, "")
            out = onnx.shape_inference.infer_node_outputs(schema, stand_in, input_types,
                                                          opset_imports=self.opset_import, ir_version=self.ir_version)
        except Exception:  # (the whole inference then decides what this node's output is)
            return None
        found = out.get("o")
        if found is None:
            return None
        read = _tensor_type(found)
        return read if read is not None and read[0] and read[1] is not None else None
