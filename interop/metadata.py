"""What ``lower`` keeps beside a standard QDQ model so that ``lift`` restores the typed model exactly.

QuantizeLinear / DequantizeLinear carry storage type, scale, zero point,
axis and block size. They cannot carry the declared schema, a narrowed
storage range or statistics. ``lower`` therefore writes those into
``ValueInfoProto.metadata_props`` (IR >= 10), which onnx.shape_inference,
onnx.checker and onnxruntime keep, under two reverse-DNS keys:

- ``onnx_qtypes.quantized_type``: the tensor's QuantizedType, in the proto3
  JSON mapping of ``proto/onnx_qtypes.proto`` (doubles print exactly);
- ``onnx_qtypes.statistics``: its TensorStatistics, in the same mapping.

The first sits on the declaration of the integer tensor (initializer,
QuantizeLinear output), the second on the declaration of the tensor the
statistics describe. A third, ``onnx_qtypes.inserted``, marks the
DequantizeLinear nodes ``lower`` writes in front of a typed operator, so
that ``lift`` folds exactly those back. ``lift`` trusts the parameters of the QDQ nodes (they are
what runtimes execute) and takes only schema and storage range from the
metadata, and only when everything else agrees.
"""

from __future__ import annotations

from google.protobuf import json_format
from onnx import AttributeProto, ModelProto, NodeProto, ValueInfoProto

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.parameter_values import any_nonzero
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.statistics import TensorStatistics

PREFIX = "onnx_qtypes."
QTYPE_KEY = PREFIX + "quantized_type"
STATISTICS_KEY = PREFIX + "statistics"
# On a DequantizeLinear node lower wrote to feed a typed operator (NodeProto.metadata_props, IR >= 10): QDQ
# cannot tell it from a boundary DequantizeLinear of the typed model, which lift must keep.
INSERTED_KEY = PREFIX + "inserted"


def mark_inserted(node: NodeProto) -> NodeProto:
    node.metadata_props.add(key=INSERTED_KEY, value="dequantize")
    return node


def unmark(node: NodeProto) -> NodeProto:
    """``node`` without the mark: a typed model's own boundary DequantizeLinear is not one lower wrote."""
    _remove(node, INSERTED_KEY)
    return node


def _remove(owner: NodeProto | ModelProto, key: str) -> None:
    """Every ``key`` entry out of ``owner``'s metadata_props."""
    kept = [p for p in owner.metadata_props if p.key != key]
    if len(kept) != len(owner.metadata_props):
        del owner.metadata_props[:]
        owner.metadata_props.extend(kept)


def inserted_by_lower(node: NodeProto) -> bool:
    return any(p.key == INSERTED_KEY for p in node.metadata_props)


# On a float operator lift wrote for a com.microsoft QOperator node ("QLinearAdd"): lower's qoperator form writes
# that node back, so that the lowered model runs the original's kernel (its rounding can differ from the float QDQ
# operators' near ties).
CONTRIB_KEY = PREFIX + "qoperator"


def mark_contrib(node: NodeProto, op_type: str) -> NodeProto:
    node.metadata_props.add(key=CONTRIB_KEY, value=op_type)
    return node


def contrib_origin(node: NodeProto) -> str | None:
    """The com.microsoft op type ``node`` was lifted from (None: it was not; an empty mark names nothing)."""
    return next((p.value for p in node.metadata_props if p.key == CONTRIB_KEY and p.value), None)


def drop_contrib(model: ModelProto) -> None:
    """Every node's mark out of ``model``, in subgraphs and model-local functions too: the lowered nodes say which
    kernel they run themselves, and a mark lower does not act on (it reads main-graph ones) must not travel on."""
    pending = [model.graph.node, *(f.node for f in model.functions)]
    while pending:
        for node in pending.pop():
            _remove(node, CONTRIB_KEY)
            for attr in node.attribute:
                if attr.type == AttributeProto.GRAPH:
                    pending.append(attr.g.node)
                elif attr.type == AttributeProto.GRAPHS:
                    pending.extend(g.node for g in attr.graphs)


# On a model lift wrote from a QOperator / quantize_dynamic file ("qoperator") or a MatMulNBits one ("matmulnbits"),
# in ModelProto.metadata_props: the form lower writes by default, so that lower(lift(m)) runs m's own kernels.
FORM_KEY = PREFIX + "lifted_from"


def record_form(model: ModelProto, form: str | None) -> None:
    """Say on ``model`` which form lift read it from (None: QDQ, the default; nothing is written)."""
    take_form(model)
    if form is not None:
        model.metadata_props.add(key=FORM_KEY, value=form)


def take_form(model: ModelProto) -> str | None:
    """The form lift recorded on ``model`` (None when it recorded none), removed from it."""
    found = [p.value for p in model.metadata_props if p.key == FORM_KEY]
    _remove(model, FORM_KEY)
    return found[-1] if found else None


class MetadataError(ValueError):
    """A metadata value that does not decode."""


def _json(message) -> str:
    return json_format.MessageToJson(message, preserving_proto_field_name=True, indent=None, sort_keys=True)


def encode_qtype(qtype: QType) -> str:
    return _json(qtype.to_proto())


def encode_statistics(statistics: TensorStatistics) -> str:
    return _json(statistics.to_proto())


def decode_qtype(text: str) -> QType:
    try:
        return QType.from_proto(json_format.Parse(text, pb.QuantizedType()), validate=False)
    except json_format.ParseError as exc:
        raise MetadataError(str(exc)) from None


def decode_statistics(text: str) -> TensorStatistics:
    try:
        return TensorStatistics.from_proto(json_format.Parse(text, pb.TensorStatistics()))
    except json_format.ParseError as exc:
        raise MetadataError(str(exc)) from None


def read(value_info: ValueInfoProto) -> dict[str, str]:
    """The onnx_qtypes entries of a declaration's metadata_props."""
    return {p.key: p.value for p in value_info.metadata_props if p.key.startswith(PREFIX)}


def write(value_info: ValueInfoProto, key: str, value: str) -> None:
    for prop in value_info.metadata_props:
        if prop.key == key:
            prop.value = value
            return
    entry = value_info.metadata_props.add()
    entry.key, entry.value = key, value


def strip(value_info: ValueInfoProto) -> None:
    """Remove the onnx_qtypes entries (the typed fields hold that information again)."""
    kept = [(p.key, p.value) for p in value_info.metadata_props if not p.key.startswith(PREFIX)]
    if len(kept) != len(value_info.metadata_props):
        del value_info.metadata_props[:]
        for key, value in kept:
            write(value_info, key, value)


def same_parameters(a: QType, b: QType) -> bool:
    """Equal in everything a QDQ node can express (schema and storage range aside).

    A type read back from metadata names its parameters by reference without their values (they stay in the
    initializer, not copied into text): it matches a type read from the same initializer.
    """
    fields = ("storage", "expressed", "axis", "block_size")
    if not all(getattr(a, f) == getattr(b, f) for f in fields):
        return False
    if (a.scale_tensor and not a.scale) or (b.scale_tensor and not b.scale):
        return a.scale_tensor == b.scale_tensor and (
            a.zero_point_tensor == b.zero_point_tensor if (a.zero_point_tensor or b.zero_point_tensor)
            else not any_nonzero(a.zero_point) and not any_nonzero(b.zero_point))
    return a.scale == b.scale and a.zero_point == b.zero_point
