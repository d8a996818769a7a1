"""The QOperator ops the lift understands, and the float op each one means.

Every QLinear* operator is an unmodified float operator whose inputs are
dequantized and whose output is quantized, with the parameters passed as
extra inputs. This table says, per operator, which inputs form a
(tensor, scale, zero point) triple, which input is an int32 bias (scale
implied as the product of two input scales, zero point 0), which pair
quantizes the output, and which float operator remains.

Attributes are copied to the float operator unless listed in ``drop``;
``refuse`` returns a reason when an attribute value has no float-operator
equivalent (the node is then left as it was).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Optional

import numpy as np
from onnx import NodeProto

from onnx_qtypes.interop import metadata
from onnx_qtypes.interop.graph import MS_DOMAIN, QONNX_DOMAINS, STANDARD_DOMAINS, attributes
from onnx_qtypes.proto.names import non_utf8_attribute
from onnx_qtypes.proto.qtype import QType

# (rank, attributes) -> axis of a per-axis scale; an operand without a rule takes a per-tensor scale only
AxisRule = Optional[Callable[[Optional[int], dict], Optional[int]]]


@dataclasses.dataclass(frozen=True)
class Operand:
    data: int
    scale: int
    zero_point: int
    axis: AxisRule = None


@dataclasses.dataclass(frozen=True)
class Bias:
    """An int32 bias input whose scale is operand[a].scale * operand[b].scale, zero point 0."""

    data: int
    factors: tuple[int, int]  # operand positions whose scales multiply
    axis_from: int  # the operand whose per-axis scale makes the bias per-axis


@dataclasses.dataclass(frozen=True)
class Spec:
    float_op: str
    operands: tuple[Operand, ...]
    output: tuple[int, int] | None  # (scale, zero point) input positions of the output's parameters
    bias: Bias | None = None
    output_optional: bool = False  # without output parameters the op writes float (QGemm)
    drop: frozenset[str] = frozenset()
    refuse: Callable[[dict[str, object], Context], str | None] | None = None
    variadic: bool = False  # QLinearConcat: (tensor, scale, zero point) triples after the output pair
    plain: tuple[int, ...] = ()  # inputs the float operator reads as they are, first (QLinearWhere's condition)
    scales_operand: tuple[str, int] | None = None  # (attribute, operand): a factor folded into that operand's scales
    # the attributes the com.microsoft op takes (onnxruntime 1.32's contrib schemas): onnxruntime refuses a model
    # whose node has another (``foreign_attributes``), and lower writes back no other; ``implied``: the float
    # operator's attributes lower drops as the op's own meaning (Gemm's beta, which must then be 1)
    takes: frozenset[str] = frozenset()
    implied: frozenset[str] = frozenset()
    # (attribute, value) the op takes when the node omits it, where its float operator's default differs: the float
    # operator is written with it (QLinearSoftmax's axis is -1 at every version, Softmax-1 to -11's is 1)
    defaults: tuple[tuple[str, object], ...] = ()


@dataclasses.dataclass(frozen=True)
class Context:
    """What a refusal may need besides attributes: the first operand's rank and the model's default-domain opset
    (the version of the float operator the lift writes); None when unknown."""

    rank: int | None = None
    opset: int | None = None


def _fixed(axis: int) -> AxisRule:
    return lambda rank, attrs: axis


def _from_end(offset: int) -> AxisRule:
    return lambda rank, attrs: None if rank is None else rank - offset


def gemm_b_axis(rank: int | None, attrs: dict[str, object]) -> int | None:
    return 0 if attrs.get("transB", 0) else 1  # per-column of B' = along N


def bias_scales(a: tuple[float, ...] | list[float], b: tuple[float, ...] | list[float]) -> list[float]:
    """An int32 bias's scale, a * b computed in float32, as runtimes and onnxruntime's quantizer compute it."""
    return [float(v) for v in (np.asarray(a, np.float32) * np.asarray(b, np.float32)).astype(np.float64)]


def bias_type(a: QType, b: QType, axis: int | None, expressed: str | int = "float32") -> QType:
    """The int32 bias a product of ``a`` and ``b`` implies (QLinearConv, QGemm, a lifted Conv / MatMul / Gemm): scale
    ``bias_scales(a.scale, b.scale)``, zero point 0; per tensor (``axis`` None: the first scale) or along ``axis``.
    Not validated: the float32 product of two tiny scales may be 0, and the callers compare it with a type (or the
    checker reports it), which an exception here would turn into an unlocated error."""
    scales = bias_scales(a.scale, b.scale)
    if axis is None:
        scales = scales[:1]
    return QType("int32", scales, [0] * len(scales), axis=axis, expressed=expressed, validate=False)


def bias_problem(bias: QType | None, a: QType, b: QType, product: str) -> str | None:
    """Why ``bias`` is not the int32 bias QLinearConv / QGemm read beside operands ``a`` and ``b`` (per column of ``b``
    or per tensor); None when it is. ``product``: how the message names a's scale times b's."""
    expected = bias_type(a, b, axis=None if b.axis is None else 0)
    if bias is None or not metadata.same_parameters(bias, expected):
        return f"the bias is not int32 with scale = {product} (float32) and zero point 0"
    return None


def _unary(float_op: str, **kwargs) -> Spec:
    return Spec(float_op, (Operand(0, 1, 2),), (3, 4), **kwargs)


def _binary(float_op: str) -> Spec:
    return Spec(float_op, (Operand(0, 1, 2), Operand(3, 4, 5)), (6, 7))


_POOL = frozenset({"auto_pad", "ceil_mode", "channels_last", "count_include_pad", "kernel_shape", "pads", "strides"})


def _channels_last(attrs: dict[str, object], context: Context) -> str | None:
    return "channels_last=1 has no standard float operator" if attrs.get("channels_last", 0) else None


SOFTMAX_AXIS = -1  # QLinearSoftmax's axis when the node omits it, at every opset (onnxruntime's schema and kernel)
NEGATIVE_AXES_OPSET = 11  # the first Softmax taking a negative axis (its meaning the same as at 1 to 10)


def opset_attribute_problem(attrs: dict[str, object]) -> str | None:
    """Why QLinearSoftmax's ``opset`` attribute (the Softmax version it computes) is none, or None: onnxruntime's
    schema types it INT."""
    opset = attrs.get("opset", 1)
    return None if isinstance(opset, int) else f"attribute opset is {opset!r}, not an integer"


def _softmax(attrs: dict[str, object], context: Context) -> str | None:
    """QLinearSoftmax computes Softmax of its ``opset`` attribute's version: before 13 it flattens at ``axis``,
    from 13 on it normalizes along ``axis``; its ``axis`` defaults to -1 at every version (onnxruntime's schema and
    kernel; ``defaults`` writes it on the lifted Softmax). The lifted Softmax has the model's version. The two agree
    when both are before 13 or both from 13 on, and whenever ``axis`` is the last axis."""
    if problem := opset_attribute_problem(attrs):
        return problem
    opset = attrs.get("opset", 1)
    axis = attrs.get("axis", SOFTMAX_AXIS)
    if isinstance(axis, int) and axis < 0 and context.opset is not None and context.opset < NEGATIVE_AXES_OPSET:
        return f"axis {axis}: the model's opset {context.opset} Softmax takes no negative axis"
    rank = context.rank
    if isinstance(axis, int) and rank is not None and -rank <= axis < rank and axis % rank == rank - 1:
        return None
    if context.opset is not None and (opset >= 13) == (context.opset >= 13):
        return None
    return (f"it computes Softmax-{opset} at axis {axis}, whose meaning differs from the model's opset "
            f"{context.opset if context.opset is not None else '(unknown)'} Softmax unless the axis is the last one "
            f"(the input's rank {'is unknown' if rank is None else f'is {rank}'})")


STANDARD: dict[str, Spec] = {
    "QLinearConv": Spec(
        "Conv",
        (Operand(0, 1, 2), Operand(3, 4, 5, _fixed(0))),
        (6, 7),
        bias=Bias(8, (0, 1), 1),
    ),
    "QLinearMatMul": Spec("MatMul", (Operand(0, 1, 2, _from_end(2)), Operand(3, 4, 5, _from_end(1))), (6, 7)),
}

MICROSOFT: dict[str, Spec] = {
    "QLinearAdd": _binary("Add"),
    "QLinearMul": _binary("Mul"),
    "QLinearSigmoid": _unary("Sigmoid"),
    "QLinearLeakyRelu": _unary("LeakyRelu", takes=frozenset({"alpha"})),
    "QLinearSoftmax": _unary("Softmax", drop=frozenset({"opset"}), refuse=_softmax, takes=frozenset({"axis", "opset"}),
                             defaults=(("axis", SOFTMAX_AXIS),)),
    "QLinearAveragePool": _unary("AveragePool", drop=frozenset({"channels_last"}), refuse=_channels_last, takes=_POOL),
    "QLinearGlobalAveragePool": _unary("GlobalAveragePool", drop=frozenset({"channels_last"}), refuse=_channels_last,
                                       takes=frozenset({"channels_last"})),
    "QLinearConcat": Spec("Concat", (), (0, 1), variadic=True, takes=frozenset({"axis"})),
    "QGemm": Spec(
        "Gemm",
        (Operand(0, 1, 2), Operand(3, 4, 5, gemm_b_axis)),
        (7, 8),
        bias=Bias(6, (0, 1), 1),
        output_optional=True,
        drop=frozenset({"alpha"}),
        scales_operand=("alpha", 1),
        takes=frozenset({"alpha", "transA", "transB"}),
        implied=frozenset({"beta"}),  # the bias is added once
    ),
    # condition (plain bool), X triple, Y triple, output pair (onnxruntime's quantizer, operators/where.py)
    "QLinearWhere": Spec("Where", (Operand(1, 2, 3), Operand(4, 5, 6)), (7, 8), plain=(0,)),
}

# QOperator-family ops the lift knows it does not type (dynamic quantization, fused contrib kernels).
# MatMulNBits is not among them: matmul_nbits reads it, and warns itself about the nodes it leaves.
KNOWN_UNSUPPORTED = frozenset(
    {
        "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul",
        "QAttention", "QEmbedLayerNormalization", "QLinearReduceMean", "QOrderedMatMul",
        "QuickGelu", "DequantizeWithOrder", "QuantizeWithOrder", "QLinearAveragePoolNhwc",
    }
)


def spec_for(node: NodeProto) -> Spec | None:
    if node.domain in STANDARD_DOMAINS:
        return STANDARD.get(node.op_type)
    if node.domain == MS_DOMAIN:
        return MICROSOFT.get(node.op_type)
    return None


def operands(spec: Spec, node: NodeProto) -> list[Operand]:
    """The (tensor, scale, zero point) triples of one node, in float-operator input order."""
    if not spec.variadic:
        return list(spec.operands)
    return triples(spec, (len(node.input) - _first_triple(spec)) // 3)


def triples(spec: Spec, count: int) -> list[Operand]:
    """The first ``count`` triples of a variadic spec (QLinearConcat's come after its output pair)."""
    first = _first_triple(spec)
    return [Operand(i, i + 1, i + 2) for i in range(first, first + 3 * count, 3)]


def _first_triple(spec: Spec) -> int:
    return max(spec.output or (-1,)) + 1


def looks_quantized(node: NodeProto) -> bool:
    """A node whose name says it belongs to the quantization family (worth a warning when left alone)."""
    name = node.op_type
    return node.domain not in QONNX_DOMAINS and (  # interop.qonnx says why it left those
        name in KNOWN_UNSUPPORTED
        or name.startswith(("QLinear", "Quant", "Dequant", "DynamicQuant"))
        or (node.domain == MS_DOMAIN and name.startswith("Q"))
        or name.endswith("Integer")
    )


def foreign_attributes(spec: Spec, node: NodeProto) -> str | None:
    """Why a com.microsoft node of ``spec`` has no meaning: an attribute its onnxruntime schema does not take (the
    float operator might: QGemm's beta), for which onnxruntime refuses the whole model, or a string attribute that
    is not text; None when it has none."""
    if node.domain != MS_DOMAIN:
        return None
    if others := sorted({a.name for a in node.attribute} - spec.takes):
        return f"{node.op_type} takes no attribute {', '.join(others)} (onnxruntime refuses the model)"
    if found := non_utf8_attribute(node):  # the float operator, in ONNX's domain, would read them as text
        return f"attribute {found[0]} holds {found[1][:40]!r}, which is not UTF-8 (onnxruntime reads it as text)"
    return None


def refusal(spec: Spec, node: NodeProto, context: Context = Context()) -> str | None:
    """Why a node of this spec cannot be lifted, or None."""
    if reason := foreign_attributes(spec, node):
        return reason
    attrs = attributes(node)
    if spec.refuse is not None and (reason := spec.refuse(attrs, context)):
        return reason
    return triples_problem(spec, len(node.input))


def triples_problem(spec: Spec, inputs: int) -> str | None:
    """Why a variadic node of ``inputs`` inputs does not end in (tensor, scale, zero point) triples, or None."""
    if spec.variadic and (inputs - _first_triple(spec)) % 3:
        return "inputs after the output's scale and zero point are not (tensor, scale, zero point) triples"
    return None
