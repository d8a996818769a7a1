"""The float view of a typed model, and what onnx.shape_inference says about it.

The float view is the model a stock ONNX tool understands: every quantized
tensor takes its expressed type (the main graph's value_info is left out:
declarations are read from the typed model, inference fills the gaps), quantized initializers become graph inputs
of that type (their integers carry no shape information), so do initializers whose data the reader left in
their files (parameters by reference of a large model), and the boundary
ops whose integer side is quantized (QuantizeLinear / DequantizeLinear)
become Identity — in the float view they map a real value to itself.
Shapes are then inferred by onnx.shape_inference, never by hand.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, helper, numpy_helper

from onnx_qtypes.proto import declared_bytes
from onnx_qtypes.proto import iter_graphs
from onnx_qtypes.proto.encoding import unmark_tensor
from onnx_qtypes.proto.external import is_lazy
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.storage_types import EXPRESSED_BY_DATA_TYPE, EXPRESSED_TYPES

if TYPE_CHECKING:
    from onnx_qtypes.checker.context import Context

# Constants larger than this stay out of the view (their zeros would cost memory, not information).
_MAX_CONSTANT_ELEMENTS = 1 << 20
_MODEL_FIELDS = ("ir_version", "producer_name", "producer_version", "domain", "model_version", "doc_string")


@dataclasses.dataclass(frozen=True)
class Inferred:
    """Element type and shape per tensor name, as shape inference left them."""

    elem_types: dict[str, int]
    shapes: dict[str, tuple[int | None, ...]]
    error: str | None = None


def expressed_data_type(qtype: QType) -> int:
    found = EXPRESSED_TYPES.get(qtype.expressed)
    return found.data_type if found else TensorProto.FLOAT


def resolve(message: Any, pointer: str) -> Any:
    """The sub-message a JSON pointer names (onnx.proto field names, list indices)."""
    for token in pointer.strip("/").split("/"):
        message = message[int(token)] if token.isdigit() else getattr(message, token)
    return message


def _retype(value_info: onnx.ValueInfoProto, data_type: int) -> None:
    tensor_type = value_info.type.tensor_type
    tensor_type.DiscardUnknownFields()  # drops fields 1000/1001
    tensor_type.elem_type = data_type


def _to_identity(node: onnx.NodeProto) -> None:
    data = node.input[0]
    del node.input[:]
    node.input.append(data)
    del node.output[1:]
    del node.attribute[:]
    node.op_type = "Identity"  # in the node's own domain: "ai.onnx" the model does not import stays a fault (QT310)


def build(ctx: Context) -> ModelProto:
    """The float view of ``ctx.model`` (the typed model is not modified)."""
    model = ctx.model
    view = ModelProto()
    for name in _MODEL_FIELDS:
        if model.HasField(name):
            setattr(view, name, getattr(model, name))
    view.opset_import.extend(model.opset_import)
    view.functions.extend(model.functions)
    src, graph = model.graph, view.graph
    graph.name = src.name
    # The main graph's value_info stays out: declared shapes are read from the typed model itself, and
    # inference only has to fill the gaps (copying and retyping thousands of declarations costs more).
    for name in ("node", "input", "output", "sparse_initializer"):
        getattr(graph, name).extend(getattr(src, name))
    inputs = {vi.name for vi in src.input}
    new_input = _InputMaker(graph)
    for init in ctx.initializers:
        qtype = ctx.qtype("", init.name)
        if qtype is None and is_lazy(init.tensor):
            # data left in its file by the reader (its location is relative to a folder onnx.checker does not
            # know): the view gets an input of its type and shape, as it gets for a quantized initializer
            if init.name not in inputs:
                new_input(init.name, init.data_type, init.dims)
        elif qtype is None:
            graph.initializer.append(init.tensor)
            unmark_tensor(graph.initializer[-1])  # a boundary zero point: the view reads its storage type
        elif init.name not in inputs:
            new_input(init.name, expressed_data_type(qtype), init.dims)
    containers: dict[str, object] = {}  # "/graph/input" -> that repeated field of the view, resolved once
    for decl in ctx.quantized_declarations(unique=False):
        if decl.pointer.startswith("/graph/value_info/"):
            continue  # not in the view
        container, index = decl.pointer.rsplit("/", 1)
        if container not in containers:
            containers[container] = resolve(view, container)
        _retype(containers[container][int(index)], expressed_data_type(decl.qtype))
    dropped: list[int] = []
    after: dict[int, onnx.NodeProto] = {}  # main-graph node index -> a node the view inserts after it
    for ref in ctx.memo("float_view:nodes", lambda: [r for r in ctx.nodes if r.op_type in _EDITED]):
        # a boundary node without its data input stays as it is: onnx.checker names it (QT310)
        node = resolve(view, ref.pointer) if ctx.is_boundary(ref) and ref.inputs and ref.inputs[0] else None
        if node is not None and _keeps_parameter_outputs(node, ref.pointer):
            # a DynamicQuantizeLinear whose y_scale / y_zero_point are read: it still computes them (from the
            # reals), and the real value of y is x itself
            y = node.output[0]
            node.output[0] = f"{y}\u00b7float_view_storage"
            after[int(ref.pointer.rsplit("/", 1)[1])] = helper.make_node("Identity", [node.input[0]], [y])
        elif node is not None and _fits_its_schema(node, ref):
            _to_identity(node)
        elif ref.op_type == "Constant" and ref.outputs and ctx.qtype(ref.scope, ref.outputs[0]) is not None:
            node = resolve(view, ref.pointer)
            qtype = ctx.qtype(ref.scope, ref.outputs[0])
            dims = ctx.constant_dims(ref.scope, ref.outputs[0])
            if ref.pointer.count("/") == 3 and ref.pointer.startswith("/graph/node/"):  # main graph: becomes an input
                dropped.append(int(ref.pointer.rsplit("/", 1)[1]))
                new_input(node.output[0], expressed_data_type(qtype), dims)
            elif dims is not None and int(np.prod(dims, dtype=np.float64)) <= _MAX_CONSTANT_ELEMENTS:
                dtype = helper.tensor_dtype_to_np_dtype(expressed_data_type(qtype))
                del node.attribute[:]
                node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(np.zeros(dims, dtype))))
    if dropped or after:
        kept = []
        for index, node in enumerate(graph.node):
            if index not in dropped:
                kept.append(node)
            if index in after:
                kept.append(after[index])
        del graph.node[:]
        graph.node.extend(kept)
    return view


def _fits_its_schema(node: onnx.NodeProto, ref: Any) -> bool:
    """Whether a boundary node has as many inputs and outputs as its operator takes at ``opset``: one that has not
    stays as it is in the view, so that onnx.checker names it (QT310), where the Identity it becomes would drop
    what is wrong (a QuantizeLinear with four inputs). An attribute its version lacks is QT412's. ``ref``: the
    node's NodeRef (its scope's opset)."""
    from onnx_qtypes.checker.schemas import schema_for  # noqa: PLC0415 (schemas imports the context)

    schema = schema_for(ref) if ref.opset else None
    if schema is None:  # a domain onnx does not know (com.microsoft): nothing to hold it to here
        return True
    return schema.min_input <= len(node.input) <= schema.max_input and len(node.output) <= schema.max_output


def _keeps_parameter_outputs(node: onnx.NodeProto, pointer: str) -> bool:
    main_graph = pointer.count("/") == 3 and pointer.startswith("/graph/node/")
    return main_graph and node.op_type == "DynamicQuantizeLinear" and any(node.output[1:])


# The only nodes build() edits: boundary ops (when their integer side is quantized) and quantized Constants.
_EDITED = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Constant"})


class _InputMaker:
    """Appends graph inputs equal to helper.make_tensor_value_info(name, data_type, dims), from templates.

    Thousands of quantized initializers become inputs of a few (type, shape) pairs: each pair's
    ValueInfoProto is made once by onnx.helper and copied from its bytes.
    """

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.templates: dict[tuple[int, tuple[int, ...] | None], bytes] = {}

    def __call__(self, name: str, data_type: int, dims: tuple[int, ...] | None) -> None:
        key = (data_type, dims)
        template = self.templates.get(key)
        if template is None:
            shape = None if dims is None else list(dims)
            template = self.templates[key] = helper.make_tensor_value_info("", data_type, shape).SerializeToString()
        vi = self.graph.input.add()
        vi.MergeFromString(template)
        vi.name = name


def infer(view: ModelProto) -> Inferred:
    """Run onnx.shape_inference on the float view; collect every typed name."""
    error = None
    try:
        inferred = onnx.shape_inference.infer_shapes(view, check_type=False, strict_mode=False, data_prop=False)
    except Exception as exc:  # noqa: BLE001 - onnx raises several types; the model is simply not inferable
        inferred, error = view, f"{type(exc).__name__}: {exc}"
    elem_types: dict[str, int] = {}
    shapes: dict[str, tuple[int | None, ...]] = {}
    read: dict[bytes, tuple[int, tuple[int | None, ...] | None] | None] = {}  # inferred types repeat a few shapes
    graphs = [graph for _, graph in iter_graphs(inferred)]
    every = []
    if error is None:  # the main graph's declarations read from the model's bytes, not copied out first (the
        # inference wrote and read those bytes already: they fit, and no larger copy is alive than it made)
        every.append(declared_bytes.main_graph(inferred.SerializeToString()))
        graphs = graphs[1:]
    every += [declared_bytes.read({kind: getattr(graph, kind) for kind in ("input", "output", "value_info")})
              for graph in graphs]
    for lists in every:
        for name, type_bytes in itertools.chain.from_iterable(lists.values()):
            if type_bytes not in read:
                read[type_bytes] = _tensor_type(onnx.TypeProto.FromString(type_bytes))
            if (found := read[type_bytes]) is None:
                continue
            elem_type, shape = found
            if elem_type:
                elem_types.setdefault(name, elem_type)
            if shape is not None and name not in shapes:
                shapes[name] = shape
    return Inferred(elem_types, shapes, error)


def _tensor_type(type_proto: onnx.TypeProto) -> tuple[int, tuple[int | None, ...] | None] | None:
    """(elem_type, shape or None) of a tensor type; None for other types."""
    if type_proto.WhichOneof("value") != "tensor_type":
        return None
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return tensor_type.elem_type, None
    return tensor_type.elem_type, tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)


def expressed_name(data_type: int) -> str:
    found = EXPRESSED_BY_DATA_TYPE.get(data_type)
    return found.name if found else helper.tensor_dtype_to_string(data_type)
