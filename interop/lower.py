"""Lower a typed model to standard ONNX that runtimes without the extension run.

    plain = onnx_qtypes.lower(typed)                    # QDQ for every operator
    plain = onnx_qtypes.lower(typed, form="qoperator")  # QLinearConv / QLinearMatMul, ConvInteger / MatMulInteger,
                                                        # and the com.microsoft QLinear* nodes lift read
    plain = onnx_qtypes.lower(typed, form="matmulnbits")  # com.microsoft.MatMulNBits for blocked MatMul weights

Every operator that reads a quantized tensor reads it through a
DequantizeLinear (one per tensor, shared by all readers); every operator that
writes one writes a float value that a QuantizeLinear turns into the stored
integers. That is the definition of an unmodified operator on quantized
types, so the lowered model computes what the typed model means. Quantized
initializers keep their integers. Boundary QuantizeLinear / DequantizeLinear
nodes stay as they are (their parameters must equal the type's).

The result has no extension fields: what QDQ cannot carry (declared schema,
a narrowed storage range, statistics) goes into ValueInfo ``metadata_props``
(``metadata``), so ``lift(lower(m))`` gives ``m`` back. A narrowed storage
range on a computed tensor becomes a Clip before its QuantizeLinear (tagged,
so that ``lift`` removes it again). The model keeps its own opset (12 to 21) where that opset's
QuantizeLinear / DequantizeLinear hold every type it writes (``opset.type_opset``), so that its other operators
run on the kernels the original ran on; otherwise it is written at IR 10 / opset 21
(IR 13 / opset 25 when a tensor is stored as int2 / uint2, IR 11 / opset 23
for float4e2m1; float8 needs only opset 19), which onnxruntime 1.31 and 1.32
load (float4e2m1 loads, but has no CPU kernel); a model with no quantized type keeps its
versions (proposal/spec/interop.md#lower-versions); they have no kernels for bfloat16 scales, so a
bfloat16 type lowers with a warning (proposal/spec/interop.md#runtimes).

What lower writes, exactly (everything else is refused with a LowerError naming the tensor or node, never
lowered: see ``_types``, ``_storage_only``, ``dynamic_lower.unsupported`` and ``inline_functions``):

- valid types only (QType validation, parameter counts that fit, no undefined fields, agreeing declarations,
  constants holding the storage type); scales exactly representable where they are stored;
- quantized tensors of the main graph; of an If / Loop / Scan subgraph only when every node there that touches
  one moves stored values between tensors of one static type (data movement, Identity, Max, Min; no order
  selection on a negative scale): the node then runs unchanged on the stored integers; of a model-local
  function with a typed body, which is inlined (no attributes, subgraphs or typed calls in the body); a function
  with an untyped body is called on reals, as written;
- every storage type and granularity of a static type; int32 computed by an operator is quantized in float64
  (Cast, Div, Round, Add, Clip, Cast: QuantizeLinear cannot write int32); a narrowed range on a computed tensor
  only per tensor (a Clip before its QuantizeLinear);
- dynamic types: a graph input by the calling convention (storage with ``<x>.scale`` / ``<x>.zero_point`` graph
  inputs, the zero point optional: an all-zero initializer of its name is the default a feed overrides, when its
  shape is static, or required with ``dynamic_inputs="storage-required"``; or reals quantized by its schema with
  ``dynamic_inputs="reals"``, per tensor), a graph output with ``<y>.scale`` / ``<y>.zero_point`` graph outputs,
  a per-tensor tensor an operator computes (any schema; not int2 / uint2 / int32; narrowed only on storage Clip
  takes), a boundary QuantizeLinear binding its operands, DynamicQuantizeLinear for the one type it computes; not a
  dynamic constant, not a per-axis or blocked dynamic tensor an operator computes;
- expressed types as declared when every type's values survive them; when some type's do not (QT120: int16 /
  uint16 in float16, wide 8-bit types in bfloat16), the whole graph computes in float32 (float32 scales,
  float16 / bfloat16 initializers widened exactly) and Casts take float values in and out at the graph's float
  inputs and outputs, so that rounding to the expressed type happens only where a value leaves the quantized
  domain.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Iterator

import ml_dtypes
import numpy as np
import onnx
from onnx import ModelProto, NodeProto, TensorProto, ValueInfoProto, helper, numpy_helper

from onnx_qtypes.interop import metadata
from onnx_qtypes.interop.dynamic_lower import dynamic_quantize, is_dynamic_quantize_linear_type
from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.interop.graph import (MS_DOMAIN, STANDARD_DOMAINS, GraphIndex, Inferred, Names, _subgraph_names,
                                      attributes, default_opset, has_subgraph, node_label, node_with_attributes)
from onnx_qtypes.interop.inline_functions import inline_typed_functions
from onnx_qtypes.interop.lower_contrib import QLINEAR_STORAGE, contrib_node, contrib_reason
from onnx_qtypes.interop.qoperator import bias_problem
from onnx_qtypes.interop.lower_llm_formats import lower_llm_formats
from onnx_qtypes.interop.matmul_nbits import fuse
from onnx_qtypes.interop.opset import convert, type_opset
from onnx_qtypes.interop.parameters import Unrecognized, read_parameters
from onnx_qtypes.interop.passthrough import links
from onnx_qtypes.interop.qdq import dequantize_node, parameter_tensors, quantize_node, stored_scales
from onnx_qtypes.interop.recognise import describe_difference, is_dequantize, is_quantize
from onnx_qtypes.interop.source import read_copy
from onnx_qtypes.proto.reader import placed_in_file
from onnx_qtypes.proto import iter_declarations, iter_graphs, static_shape
from onnx_qtypes.proto.encoding import tensor_array, to_plain_form
from onnx_qtypes.proto.external import checkable
from onnx_qtypes.proto.graph_order import file_text
from onnx_qtypes.proto.errors import MalformedExtensionError, ModelLoadError, ParameterReferenceError, QTypeError
from onnx_qtypes.proto.model import (Declaration, ParameterLookup, model_parameters, read_statistics, read_view,
                                     referenced_values)
from onnx_qtypes.proto.parameter_values import any_nonzero, scales_as_stated
from onnx_qtypes.proto.data_movement import ORDER_SELECTING, moves_data
from onnx_qtypes.proto.node_schema import node_problem
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.statistics import TensorStatistics
from onnx_qtypes.proto.storage_types import STORAGE_TYPES, data_type_name
from onnx_qtypes.proto.parameter_layout import parameter_shape, single_block
from onnx_qtypes.proto.validity import count_problem
from onnx_qtypes.proto.versions import unknown_field_problem
from onnx_qtypes.reference_ops.quant import dequantize

FORMS = ("qdq", "qoperator", "matmulnbits")
# how a dynamic graph input arrives (the calling convention): its storage, the zero point optional (an all-zero
# initializer of its name) or required (a runtime that reads such an initializer as a constant: OpenVINO, IREE); reals
DYNAMIC_INPUTS = ("storage", "storage-required", "reals")
TARGET = (10, 21)  # (IR version, default opset) onnxruntime 1.31 loads
TARGET_2BIT = (13, 25)  # int2 / uint2 QuantizeLinear / DequantizeLinear exist from opset 25 (IR 13)
TARGET_FLOAT4 = (11, 23)  # float4e2m1 ones from opset 23 (IR 11); onnxruntime 1.32 has no CPU kernel for them
RANGE_ROLE_KEY = metadata.PREFIX + "role"
RANGE_ROLE = "storage_range"  # a Clip that lower added to saturate at a narrowed storage range


@dataclasses.dataclass
class LowerResult:
    model: ModelProto
    notes: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    qlinear_nodes: int = 0
    integer_nodes: int = 0  # ConvInteger / MatMulInteger (the qoperator form of a dynamic operand)
    contrib_nodes: int = 0  # com.microsoft QLinear* nodes written back where lift read them (qoperator form)
    form: str = "qdq"
    typed_tensors: int = 0  # quantized tensors of the input; none means there was nothing to lower


class LowerWarning(UserWarning):
    """The lowered model is valid ONNX that a known runtime cannot run (the message says which and why)."""


def lower(model: ModelProto | str | os.PathLike | bytes, form: str | None = None, dynamic_inputs: str = "storage"
          ) -> ModelProto:
    """Standard ONNX (no extension fields) computing what the typed ``model`` means.

    ``form``: "qdq", "qoperator" or "matmulnbits"; None: the form of the file ``lift`` read the model from (QOperator
    and quantize_dynamic files "qoperator", MatMulNBits ones "matmulnbits"), else "qdq".

    A graph input of a dynamic type follows the calling convention (semantics.md#dynamic-binding):
    ``dynamic_inputs="storage"`` makes it its storage integers plus graph inputs ``<name>.scale`` and
    ``<name>.zero_point`` (optional: an all-zero initializer of that name is its default); ``"storage-required"``
    the same with ``<name>.zero_point`` a required input (for a runtime that reads an initializer-backed input as a
    constant); ``"reals"`` makes it a float input quantized by its schema. A graph output of a
    dynamic type gets graph outputs ``<name>.scale`` and ``<name>.zero_point`` beside its storage.

    Warnings (valid output that onnxruntime cannot run) are issued as
    LowerWarning; ``lower_model`` returns them instead.
    """
    result = lower_model(model, form, dynamic_inputs)
    for message in result.warnings:
        warnings.warn(message, LowerWarning, stacklevel=2)
    return result.model


def lower_model(model: ModelProto | str | os.PathLike | bytes, form: str | None = None,
                dynamic_inputs: str = "storage", *, external_data: bool | str = True) -> LowerResult:
    """``lower`` with its report (``result.form``: the form written). ``external_data="lazy"``: a file's weights
    stay in their files (proto.external); the result then holds such tensors, which ``proto.save(..., as_loaded=True)``
    writes as if they were loaded."""
    if form is not None and form not in FORMS:
        raise LowerError(f"lower: unknown form {form!r}; use one of {', '.join(FORMS)}")
    if dynamic_inputs not in DYNAMIC_INPUTS:
        raise LowerError(f"lower: unknown dynamic_inputs {dynamic_inputs!r}; use one of {', '.join(DYNAMIC_INPUTS)}")
    source, where, orders = read_copy(model, "lower", external_data=external_data)
    recorded = metadata.take_form(source)  # the private copy: the output does not carry it
    if form is None and recorded is not None and recorded not in FORMS:
        raise LowerError(f"{where or 'lower'}: model metadata {metadata.FORM_KEY} is {recorded!r}, not one of "
                         f"{', '.join(FORMS)}; give the form (--form)")
    form = form or recorded or "qdq"
    to_plain_form(source)  # a private copy: the markers give way to the storage types standard ONNX uses
    try:
        inline_typed_functions(source)  # a typed body computes on stored values: its nodes join the main graph
        llm = lower_llm_formats(source, form)  # version-3 weights (GGUF formats ...) as exact float chains
        if form == "matmulnbits":  # QDQ, then blocked weights of MatMuls fused into com.microsoft.MatMulNBits
            lowering = _Lowering(source, "qdq", dynamic_inputs, fused=True)
            result = _with_llm(lowering.run(), llm)
            fused = fuse(result.model)
            lowering.check()
            result.notes.append(f"{fused} MatMulNBits node(s)")
        else:
            result = _with_llm(_Lowering(source, form, dynamic_inputs).run(), llm)
        result.form = form
        result.warnings = [file_text(w, orders) for w in result.warnings]  # nodes at their places in the file
        result.notes = [file_text(n, orders) for n in result.notes]
        return result
    except (LowerError, MalformedExtensionError, ModelLoadError, QTypeError) as exc:
        placed_in_file(exc, where, orders)  # nodes at their places in the file
        if where:
            raise LowerError(str(exc)) from None
        raise exc from None


def _with_llm(result: LowerResult, llm: int) -> LowerResult:
    """``result`` counting the version-3 weights ``lower_llm_formats`` wrote before (interop/lower_llm_formats.py)."""
    if llm:
        result.typed_tensors += llm
        result.notes = [n for n in result.notes if not n.startswith("the model has no quantized types")]
        result.notes.append(f"{llm} version-3 weight(s) (LLM formats) as exact float chains")
    return result


CHECK_HINT = "run `onnx-qtypes check` for every problem in the model"


def _types(model: ModelProto, inner: dict[str, tuple[str, QType]] | None = None,
           ) -> tuple[dict[str, QType], dict[str, tuple[int | None, ...]]]:
    """Every quantized tensor of the main graph (valid, or LowerError) and every declared shape; ``inner``
    collects the quantized tensors declared in subgraphs (name -> (pointer, type)), which only a control-flow
    node that moves stored values may hold (``_storage_only``); a function's are refused.

    A type lower cannot vouch for is refused, never lowered: invalid values
    (``QType`` validation), parameters that do not fit a declared shape or
    the initializer (``count_problem``), fields or schema values this version
    does not define (a rewrite would drop them), and declarations that
    disagree. The same problems the checker reports as QT101-QT115 / QT301 /
    QT302 / QT304.
    """
    types: dict[str, QType] = {}
    first: dict[str, str] = {}  # tensor -> pointer of the declaration its type came from
    shapes: dict[str, tuple[int | None, ...]] = {}
    parameters = model_parameters(model)
    for decl in iter_declarations(model):
        qtype = _declared(decl, parameters)
        in_main = decl.pointer.startswith("/graph/") and decl.pointer.count("/") == 3
        if qtype is not None and not in_main:
            if inner is None or decl.pointer.startswith("/functions/"):
                raise LowerError(f"{decl.pointer}: quantized tensor {decl.name!r} inside a function that is not "
                                 "called from the main graph, or inside a subgraph of a function; lower writes the "
                                 "main graph, the subgraphs of If / Loop / Scan that only move stored values, and "
                                 "inlines functions with typed bodies")
            inner.setdefault(decl.name, (decl.pointer, qtype))
            continue
        shape = static_shape(decl.value_info)
        if in_main and shape is not None:
            shapes.setdefault(decl.name, shape)
        if qtype is None:
            continue
        if shape is not None:
            _fits(qtype, shape, f"tensor {decl.name!r} ({decl.pointer})")
        if decl.name in types:
            if types[decl.name] != qtype:
                raise LowerError(
                    f"tensor {decl.name!r}: declared as {types[decl.name]} ({first[decl.name]}) and as {qtype} "
                    f"({decl.pointer}); give every declaration the same type ({CHECK_HINT})"
                )
            continue
        types[decl.name], first[decl.name] = qtype, decl.pointer
    for init in model.graph.initializer:
        shapes.setdefault(init.name, tuple(init.dims))
        if init.name in types:
            _fits_constant(types[init.name], init, f"initializer {init.name!r}")
    for i, node in enumerate(model.graph.node):
        if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS and node.output and node.output[0] in types:
            for a in node.attribute:
                if a.name == "value":
                    _fits_constant(types[node.output[0]], a.t, f"{node_label(node, i)}, the value of {node.output[0]!r},")
    return types, shapes


def _declared(decl: Declaration, parameters: ParameterLookup) -> QType | None:
    """The valid quantized type ``decl`` declares, or None; LowerError naming the tensor when it is not valid."""
    vi = decl.value_info
    if vi.type.WhichOneof("value") != "tensor_type":
        return None
    view = read_view(vi.type.tensor_type, decl.pointer)
    has_q, has_s = view.HasField("quantization"), view.HasField("statistics")
    if not (has_q or has_s):
        return None
    where = f"tensor {decl.name!r} ({decl.pointer})"
    unknown = (unknown_field_problem(view.quantization, "quantization") if has_q else None) or (
        unknown_field_problem(view.statistics, "statistics") if has_s else None
    )
    if unknown:
        raise LowerError(f"{where}: {unknown}, and lowering would drop it; {CHECK_HINT}")
    if not has_q:
        return None
    if view.elem_type != TensorProto.UNDEFINED:
        raise LowerError(
            f"{where}: elem_type is {data_type_name(view.elem_type)} beside a quantized type; a quantized tensor "
            f"declares elem_type UNDEFINED (0); {CHECK_HINT}"
        )
    try:
        values = referenced_values(view.quantization, parameters, static_shape(vi), where)
        return QType.from_proto(view.quantization, TensorStatistics.from_proto(view.statistics) if has_s else None,
                                values=values)
    except ParameterReferenceError as exc:
        raise LowerError(f"{exc}; {CHECK_HINT}") from None
    except QTypeError as exc:
        raise LowerError(f"{where}: invalid quantized type: {_problem(exc)}; {CHECK_HINT}") from None


def _fits(qtype: QType, shape: tuple[int | None, ...], where: str) -> None:
    """LowerError when the parameter count or axis of ``qtype`` does not fit ``shape``."""
    problem = count_problem(qtype, shape)
    if problem:
        raise LowerError(f"{where}: {problem}; {CHECK_HINT}")


def _fits_constant(qtype: QType, value: TensorProto, where: str) -> None:
    """The stored integers of a quantized constant must have the storage type and fit the parameters."""
    if value.data_type != qtype.storage_type.data_type:
        raise LowerError(
            f"{where} holds {data_type_name(value.data_type)}, but its type {qtype} stores {qtype.storage}; {CHECK_HINT}"
        )
    _fits(qtype, tuple(value.dims), where)


def _problem(exc: QTypeError) -> str:
    """The message of a QTypeError with the proto message's field in front, not ``QType.<field>``."""
    return f"{exc.field}: {exc.problem}"


def _one_block_per_tensor(qtype: QType, shape: tuple[int | None, ...] | None) -> QType:
    """A listed blocked type on a 1-D tensor of one block as the per-tensor type it equals: its one-element 1-D
    scale is what onnxruntime reads as per-tensor, and it then refuses the block_size ("block_size must be 0 for
    per-tensor quantization")."""
    if qtype.scale_tensor is not None or qtype.zero_point_tensor is not None or not single_block(shape, qtype.block_size):
        return qtype
    return qtype.replace(axis=None, block_size=None)


class _Lowering:
    def __init__(self, model: ModelProto, form: str, dynamic_inputs: str = "storage", fused: bool = False) -> None:
        self.model, self.form, self.dynamic_inputs = model, form, dynamic_inputs
        self.graph = model.graph
        self.fused = fused  # blocked MatMul weights go on into MatMulNBits (lower_model's matmulnbits form)
        self.kept_opset = False  # whether the model's own opset was kept (``_set_versions``)
        self.kept_meta: dict[str, dict[str, str]] = {}
        opsets = {o.domain or "": o.version for o in model.opset_import}
        for i, node in enumerate(self.graph.node):  # the walk below indexes inputs: refuse short nodes first
            if problem := node_problem(node, opsets, model.ir_version):
                raise LowerError(f"{node_label(node, i)}: {problem}")
        inner: dict[str, tuple[str, QType]] = {}
        self.types, shapes = _types(model, inner)
        self.inner_types = {n: q for n, (_, q) in inner.items()}
        self.declared_expressed = {n: q.expressed_type for n, q in self.types.items()}
        # a type whose values its expressed type cannot hold (QT120) computes in float32 inside: DequantizeLinear
        # to float32, every float value in float32, float16 / bfloat16 only at the graph's float inputs and outputs
        self.inside = _narrow_model(self.types)
        if self.inside:
            self.types = {n: q.replace(expressed="float32") for n, q in self.types.items()}
            _widen_floats(self.graph, Names({n for _, g in iter_graphs(model) for n in _names(g)}),
                          Names({n.name for n in self.graph.node if n.name}))
        self.ix = GraphIndex(self.graph, Inferred({}, shapes))
        self.types = {n: _one_block_per_tensor(q, self.ix.shape(n)) for n, q in self.types.items()}
        self.names = Names(self.ix.all_names())
        self.node_names = Names({n.name for _, g in iter_graphs(model) for n in g.node if n.name})
        self.nodes: list[NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.float_decls: list[ValueInfoProto] = []
        self.params: dict[str, tuple[str, str | None]] = {}
        self.dequantized: dict[str, str] = {}
        self.result = LowerResult(model)
        self.qlinear_ops = {i for i, node in enumerate(self.ix.nodes)  # Conv / MatMul written as QLinear*
                            if self.form == "qoperator" and node.domain in STANDARD_DOMAINS
                            and node.op_type in ("Conv", "MatMul") and self._qlinear_reason(node) is None}
        self.integer_ops = {i for i, node in enumerate(self.ix.nodes) if self._runs_on_integers(i, node)}
        self.integer_ops |= self._storage_only(inner)
        self.contrib = self._contrib_ops()
        self.integer_ops |= set(self.contrib)
        inputs = {vi.name for vi in self.graph.input} - {t.name for t in self.graph.initializer}
        self.dynamic_inputs_here = [n for n in self.types if n in inputs and self.types[n].is_dynamic]
        self.extra_inputs: list[ValueInfoProto] = []
        self.extra_outputs: list[ValueInfoProto] = []
        self.integer_name = {name: self._integer_name(name) for name in self.types}

    # -- control flow ---------------------------------------------------------------------------
    def _storage_only(self, inner: dict[str, tuple[str, QType]]) -> set[int]:
        """The If / Loop / Scan nodes whose subgraphs hold or read quantized tensors: each must only move stored
        values (data movement, Identity, Max / Min) between tensors of one type, so that it runs unchanged on the
        stored integers; LowerError naming the node otherwise. Their outer-scope reads are renamed to the stored
        integers."""
        types = {**{n: q for n, (_, q) in inner.items()}, **self.types}
        found = set()
        for i, node in enumerate(self.ix.nodes):
            if not has_subgraph(node):
                continue
            mentioned = set(_subgraph_names(node))
            if not mentioned & set(types):
                continue
            problem = _moves_only(node, types, f"/graph/node/{i}")
            if problem:
                raise LowerError(f"{node_label(node, i)}: {problem}; lower writes standard ONNX for a subgraph only "
                                 "when it moves stored values between tensors of one type")
            found.add(i)
        return found

    def _rename_outer_reads(self, node: NodeProto) -> None:
        """Inside ``node``'s subgraphs, an outer quantized tensor is read as its stored integers."""
        renamed = {n: self.integer_name[n] for n in self.types if self.integer_name[n] != n}
        if not renamed:
            return
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                _rename_reads(sub, renamed)

    # -- naming ---------------------------------------------------------------------------------
    def _integer_name(self, name: str) -> str:
        """The name of the stored integers of quantized tensor ``name`` in the lowered graph."""
        p = self.ix.producer.get(name)
        if name in self.dynamic_inputs_here and self.dynamic_inputs == "reals":
            return self.names.fresh(f"{name}_QuantizeLinear_Output")  # the float input keeps the name
        if p is None or name in self.ix.output_set or p in self.integer_ops or self._boundary(p) or self._constant(p):
            return name
        return self.names.fresh(f"{name}_QuantizeLinear_Output")  # the float value keeps the name

    def _float_name(self, name: str) -> str:
        return self.names.fresh(f"{name}_QuantizeLinear_Input") if name in self.ix.output_set else name

    # -- parameters -------------------------------------------------------------------------------
    def _parameters(self, name: str) -> tuple[str, str | None]:
        if name not in self.params:
            qtype = self.types[name]
            if qtype.is_dynamic and name in self.dynamic_inputs_here:
                self.params[name] = self._convention_inputs(name)
                return self.params[name]
            if qtype.is_dynamic:  # the producer chooses them at run time; a constant has none
                raise LowerError(f"tensor {name!r}: a dynamic type (no scale) on a constant has no "
                                 "standard form: nothing in the model computes its parameters")
            scale, zp = parameter_tensors(
                qtype, self.ix.shape(name), name,
                self.names.fresh(f"{name}_scale"), self.names.fresh(f"{name}_zero_point"),
            )
            if qtype.scale_tensor is not None:  # parameters by reference: the initializer is already the input
                scale = None
                if qtype.zero_point_tensor is None and not any_nonzero(qtype.zero_point) and self.form == "qdq":
                    zp = None  # DequantizeLinear reads an absent zero point as 0
            if qtype.zero_point_tensor is not None:
                zp = None
            for tensor in (scale, zp):
                if tensor is not None:
                    self.initializers.append(tensor)
            self.params[name] = (
                qtype.scale_tensor or scale.name,
                qtype.zero_point_tensor or (None if zp is None else zp.name),
            )
        return self.params[name]

    def _convention_name(self, name: str, field: str) -> str:
        wanted = f"{name}.{field}"
        if wanted in self.names.taken:
            raise LowerError(f"tensor {name!r} has a dynamic type, whose {field} travels as {wanted!r} "
                             "(semantics.md#dynamic-binding), but the model already names a tensor so")
        self.names.taken.add(wanted)
        return wanted

    def _convention_inputs(self, name: str) -> tuple[str, str]:
        """Graph inputs ``<name>.scale`` (the declared expressed type) and ``<name>.zero_point`` (the storage type)
        for a dynamic graph input fed as storage: the calling convention."""
        qtype = self.types[name]
        shape = self.ix.shape(name)
        dims = [] if qtype.axis is None else list(parameter_shape(qtype, shape) or [None])
        expressed = self.declared_expressed[name]
        scale = self._convention_name(name, "scale")
        zero_point = self._convention_name(name, "zero_point")
        self.extra_inputs += [helper.make_tensor_value_info(scale, expressed.data_type, dims),
                              helper.make_tensor_value_info(zero_point, qtype.storage_type.data_type, dims)]
        # the zero point is optional (absent means all 0): an all-zero initializer of its name makes the graph
        # input an overridable default (IR >= 4); an unknown parameter count, or storage-required, leaves it required
        if self.dynamic_inputs == "storage-required":
            self.result.notes.append(f"tensor {name!r}: {zero_point!r} is a required input (dynamic_inputs "
                                     "storage-required): feed 0 where the zero point is absent")
        elif None in dims:
            shown = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
            self.result.notes.append(
                f"tensor {name!r}: its zero points' shape {shown} is not static, so {zero_point!r} has no "
                "all-zero default and must be fed")
        else:
            self.initializers.append(numpy_helper.from_array(np.zeros(dims, qtype.storage_type.np_dtype), zero_point))
            self.result.notes.append(
                f"tensor {name!r}: {zero_point!r} is optional, an all-zero initializer of its name its default; "
                "a runtime that reads that initializer as a constant cannot take a fed zero point (OpenVINO 2026.4, "
                "IREE 3.13: conformance_tests/results/deviations.json, kind 'zero point handling'); lower with "
                "--dynamic-inputs storage-required makes it a required input instead")
        if expressed.name != qtype.expressed:  # computed in float32 inside
            wide = self.names.fresh(f"{name}_scale_float32")
            self.nodes.append(helper.make_node("Cast", [scale], [wide], name=self.node_names.fresh(f"{name}_scale_to_float32"),
                                               to=qtype.expressed_type.data_type))
            scale = wide
        return scale, zero_point

    def _quantize_dynamic_inputs(self) -> None:
        """A dynamic graph input fed as reals: quantized by its schema (dynamic_parameters) on the way in."""
        if self.dynamic_inputs != "reals":
            return
        for name in self.dynamic_inputs_here:
            qtype = self.types[name]
            source = name
            if self.declared_expressed[name].name != qtype.expressed:  # computed in float32 inside
                source = self.names.fresh(f"{name}_float32")
                self.nodes.append(helper.make_node("Cast", [name], [source], name=self.node_names.fresh(f"{name}_to_float32"),
                                                   to=qtype.expressed_type.data_type))
            found = dynamic_quantize(source, self.integer_name[name], qtype, self.names.fresh, self.node_names.fresh,
                                     name, rounding=self.inside.get(name))
            self.nodes.extend(found.nodes)
            self.initializers.extend(found.initializers)
            self.params[name] = (found.scale, found.zero_point)

    def _convention_outputs(self) -> None:
        """Graph outputs ``<name>.scale`` and ``<name>.zero_point`` beside each dynamic graph output's storage."""
        for vi in list(self.graph.output):
            qtype = self.types.get(vi.name)
            if qtype is None or not qtype.is_dynamic:
                continue
            scale, zero_point = self._parameters(vi.name)
            expressed = self.declared_expressed[vi.name]
            dims = [] if qtype.axis is None else None
            for source, field, elem in ((scale, "scale", expressed.data_type),
                                        (zero_point, "zero_point", qtype.storage_type.data_type)):
                target = self._convention_name(vi.name, field)
                if source is None:
                    raise LowerError(f"tensor {vi.name!r}: its dynamic zero point is not computed in the graph")
                cast = field == "scale" and expressed.name != qtype.expressed
                self.nodes.append(helper.make_node("Cast" if cast else "Identity", [source], [target],
                                                   name=self.node_names.fresh(f"{vi.name}_{field}_output"),
                                                   **({"to": elem} if cast else {})))
                self.extra_outputs.append(helper.make_tensor_value_info(target, elem, dims))

    def _dequantize(self, name: str) -> str:
        if name not in self.dequantized:
            qtype = self.types[name]
            scale, zp = self._parameters(name)
            y = self.names.fresh(f"{name}_DequantizeLinear_Output")
            node_name = self.node_names.fresh(f"{name}_DequantizeLinear")
            self.nodes.append(metadata.mark_inserted(dequantize_node(self.integer_name[name], y, scale, zp, qtype,
                                                                     node_name)))
            self._declare_float(y, name)
            self.dequantized[name] = y
        return self.dequantized[name]

    def _quantize(self, float_name: str, name: str, producer: int) -> None:
        qtype = self.types[name]
        if qtype.storage == "int32":
            self._quantize_int32(float_name, name, producer)
            return
        if qtype.is_dynamic:  # parameters chosen from the result (semantics.md #dynamic-binding)
            found = dynamic_quantize(float_name, self.integer_name[name], qtype, self.names.fresh, self.node_names.fresh,
                                     name, rounding=self.inside.get(name))
            self.nodes.extend(found.nodes)
            self.initializers.extend(found.initializers)
            self.params[name] = (found.scale, found.zero_point)
            return
        scale, zp = self._parameters(name)
        if self._narrowed(name):
            float_name = self._clip_to_range(float_name, name, qtype)
        node_name = self.node_names.fresh(f"{name}_QuantizeLinear")
        self.nodes.append(quantize_node(float_name, self.integer_name[name], scale, zp, qtype, node_name))

    def _quantize_int32(self, float_name: str, name: str, producer: int) -> None:
        """QuantizeLinear cannot write int32: the quantize formula in float64 instead, where every int32 value and
        bound is exact: Cast, Div by the scale, Round (half to even), Add the zero point, Clip to the storage range,
        Cast to int32 (proposal/spec/interop.md#lower-qdq)."""
        qtype = self.types[name]
        label = node_label(self.ix.nodes[producer], producer)
        if qtype.is_dynamic:
            raise LowerError(f"{label} computes int32 tensor {name!r} of a dynamic type, which has no standard form")
        shape = self.ix.shape(name)
        if qtype.axis is not None and (shape is None or any(d is None for d in shape)):
            raise LowerError(f"{label} computes {qtype.granularity} int32 tensor {name!r} without a static shape: "
                             "its scales cannot be laid out")
        scales = np.asarray(qtype.scale, np.float64)
        zero_points = np.asarray(qtype.zero_point, np.float64)
        if qtype.axis is not None:
            from onnx_qtypes.reference_ops.quant import parameter_index  # noqa: PLC0415

            index = parameter_index(qtype, shape, name)
            scales, zero_points = scales[index], zero_points[index]
        else:
            scales, zero_points = scales.reshape(()), zero_points.reshape(())

        def const(value: np.ndarray, what: str) -> str:
            tensor = numpy_helper.from_array(np.asarray(value, np.float64), self.names.fresh(f"{name}_{what}"))
            self.initializers.append(tensor)
            return tensor.name

        def op(op_type: str, inputs: list[str], what: str, output: str | None = None, **attrs: object) -> str:
            out = output or self.names.fresh(f"{name}_{what}")
            self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.node_names.fresh(f"{name}_{what}"),
                                               **attrs))
            return out

        wide = op("Cast", [float_name], "float64", to=TensorProto.DOUBLE)
        steps = op("Round", [op("Div", [wide, const(scales, "scale")], "steps")], "rounded")
        shifted = op("Add", [steps, const(zero_points, "zero_point")], "shifted")
        clipped = op("Clip", [shifted, const(qtype.storage_min, "storage_min"), const(qtype.storage_max, "storage_max")],
                     "saturated")
        op("Cast", [clipped], "int32", output=self.integer_name[name], to=TensorProto.INT32)

    def _narrowed(self, name: str) -> bool:
        qtype = self.types[name]
        return (qtype.storage_min, qtype.storage_max) != (qtype.storage_type.min, qtype.storage_type.max)

    def _clip_to_range(self, float_name: str, name: str, qtype: QType) -> str:
        """Clip to the real range of [storage_min, storage_max], so that QuantizeLinear saturates there."""
        if qtype.axis is not None:
            raise LowerError(
                f"tensor {name!r}: a narrowed storage range on a computed {qtype.granularity} tensor has no standard form"
            )
        bounds = []
        for value, which in zip(range_bounds(qtype), ("min", "max")):
            tensor = numpy_helper.from_array(value, self.names.fresh(f"{name}_range_{which}"))
            self.initializers.append(tensor)
            bounds.append(tensor.name)
        clipped = self.names.fresh(f"{name}_range_clipped")
        clip = helper.make_node("Clip", [float_name, *bounds], [clipped], name=self.node_names.fresh(f"{name}_storage_range"))
        entry = clip.metadata_props.add()
        entry.key, entry.value = RANGE_ROLE_KEY, RANGE_ROLE
        self.nodes.append(clip)
        self._declare_float(clipped, name)
        return clipped

    # -- boundary nodes ---------------------------------------------------------------------------------
    def _boundary(self, i: int) -> bool:
        node = self.ix.nodes[i]
        if node.op_type == "DynamicQuantizeLinear" and node.domain in STANDARD_DOMAINS and node.output[0] in self.types:
            return True
        return (is_quantize(node) and node.output[0] in self.types) or (
            is_dequantize(node) and node.input[0] in self.types
        )

    def _constant(self, i: int) -> bool:
        """A Constant node's value holds storage integers, like an initializer."""
        node = self.ix.nodes[i]
        return node.op_type == "Constant" and node.domain in STANDARD_DOMAINS

    def _check_boundary(self, i: int, node: NodeProto) -> None:
        if node.op_type == "DynamicQuantizeLinear":  # its parameters are its other two outputs
            if not is_dynamic_quantize_linear_type(self.types[node.output[0]]):
                raise LowerError(f"{node_label(node, i)} writes {node.output[0]!r} typed {self.types[node.output[0]]}; "
                                 "DynamicQuantizeLinear computes dynamic uint8 ASYMMETRIC per-tensor float32 values only")
            self.params[node.output[0]] = (node.output[1], node.output[2])
            return
        tensor = node.output[0] if is_quantize(node) else node.input[0]
        qtype = self.types[tensor]
        if qtype.is_dynamic:
            self._check_dynamic_boundary(i, node, tensor)
            return
        attrs = attributes(node)
        axis, block_size, output_dtype = (_integer(node, i, attrs, name, default)
                                          for name, default in (("axis", 1), ("block_size", 0), ("output_dtype", 0)))
        zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
        try:
            given = read_parameters(
                self.ix, i, tensor, node.input[1], zp, axis=axis, block_size=block_size,
                storage=(output_dtype if is_quantize(node) else 0) or qtype.storage_type.data_type,
                real_type=self.ix.elem_type(node.input[0]) if is_quantize(node) else output_dtype or None,
            )  # a DequantizeLinear's output_dtype is its float output's type (the expressed type of E8M0 scales)
        except Unrecognized as exc:
            raise LowerError(f"{exc}, but {tensor!r} has static type {qtype}") from None
        stated = _stated(qtype, self.ix.elem_type(node.input[1]))  # as QT307 compares them
        if not metadata.same_parameters(given, stated):
            found, declared = describe_difference(given, qtype)
            raise LowerError(
                f"{node_label(node, i)} applies {found} to {tensor!r}, whose type has {declared}; "
                "a boundary QuantizeLinear/DequantizeLinear must use the type's parameters"
            )
        if stated is not qtype and not metadata.same_parameters(given, qtype):
            stored_scales(qtype, tensor)  # the node states a scale its type has only nearly: no QDQ node says it

    def _check_dynamic_boundary(self, i: int, node: NodeProto, tensor: str) -> None:
        """A QuantizeLinear binds a dynamic type to its operands; a DequantizeLinear must read those same tensors."""
        operands = (node.input[1], node.input[2] if len(node.input) > 2 and node.input[2] else None)
        if is_quantize(node):
            self.params[tensor] = operands
        elif self._parameters(tensor) != operands:
            raise LowerError(
                f"{node_label(node, i)} dequantizes {tensor!r}, of dynamic type {self.types[tensor]}, with {operands}, "
                f"not with the parameters its producer chose {self._parameters(tensor)}; lower cannot show they are equal"
            )

    # -- QOperator ------------------------------------------------------------------------------------------
    def _runs_on_integers(self, i: int, node: NodeProto) -> bool:
        if self.form != "qoperator" or node.domain not in STANDARD_DOMAINS:
            return False
        if node.op_type in ("Conv", "MatMul"):
            return i in self.qlinear_ops or self._integer_reason(node) is None
        linked = links(node)
        if not linked or not all(n in self.types and not self.types[n].is_dynamic for n in linked):
            return False
        kinds = {self.types[n] for n in linked}
        if len(kinds) != 1:
            return False
        qtype = kinds.pop()
        # data movement keeps values inside a narrowed range, so only the storage type matters
        return qtype.axis is None and qtype.storage in QLINEAR_STORAGE  # what QOperator runtimes take

    def _qlinear_reason(self, node: NodeProto) -> str | None:
        """Why this Conv / MatMul cannot be a standard QLinearConv / QLinearMatMul (None: it can)."""
        data = [n for n in node.input[:2]]
        if len(data) < 2 or not node.output or not all(n in self.types for n in (*data, node.output[0])):
            return "not quantized on every side"
        x, w, y = (self.types[n] for n in (*data, node.output[0]))
        if any(q.is_dynamic for q in (x, w, y)):
            return "a dynamic type (QLinear ops take constant parameters)"
        for qtype in (x, w, y):
            if qtype.storage not in QLINEAR_STORAGE:
                return "QLinear ops take int8 / uint8"
            if qtype.block_size is not None:
                return "blocked parameters"
        if (y.storage_min, y.storage_max) != (y.storage_type.min, y.storage_type.max):
            return "a narrowed output range (QLinear ops saturate at the full range)"
        if x.axis is not None or y.axis is not None:
            return "per-axis activations"
        if node.op_type == "MatMul":  # QLinearMatMul takes one scale per column of B (1-D, N values)
            shape = self.ix.shape(data[1])
            columns = shape is not None and len(shape) >= 2 and w.axis == len(shape) - 1
            return None if w.axis is None or columns else "per-axis weights on an axis other than B's columns"
        if x.expressed != "float32" or w.expressed != "float32" or y.expressed != "float32":
            return "QLinearConv scales are float32"
        if w.axis not in (None, 0):
            return "per-axis weights on an axis other than 0"
        if len(set(w.zero_point)) > 1:
            return "per-channel weight zero points differ (onnxruntime's QLinearConv requires one value)"
        if len(node.input) > 2 and node.input[2]:
            return bias_problem(self.types.get(node.input[2]), x, w, "x_scale * w_scale")
        return None

    def _contrib_ops(self) -> dict[int, str]:
        """The nodes lift read from com.microsoft QLinear* ops that the qoperator form writes back as those ops (by
        position); the others are noted with the reason and written as QDQ."""
        found: dict[int, str] = {}
        if self.form != "qoperator":
            return found
        for i, node in enumerate(self.ix.nodes):
            op_type = metadata.contrib_origin(node)
            if op_type is None or i in self.integer_ops:  # stored values moved as they are: exact in standard ONNX
                continue
            if (reason := contrib_reason(node, op_type, self.types)) is None:
                found[i] = op_type
            else:
                self.result.notes.append(f"{node_label(node, i)}, read from {op_type}, is written as QDQ: {reason}")
        return found

    def _emit_contrib(self, i: int, node: NodeProto) -> None:
        op_type = self.contrib[i]
        name = self.node_names.fresh(f"{node.name}_quant") if node.name else ""
        # QLinearSoftmax computes the Softmax of the version it names: the typed model's, whatever opset the lowered
        # model is converted to afterwards (Softmax flattens before 13)
        opset = default_opset(self.model) or 1
        self.nodes.append(contrib_node(node, op_type, self.types, self.integer_name.__getitem__,
                                       self._parameters_with_zero, name, opset))
        self.result.contrib_nodes += 1

    def _integer_reason(self, node: NodeProto) -> str | None:
        """Why this Conv / MatMul cannot be ConvInteger / MatMulInteger scaled back to float32, the form
        quantize_dynamic writes (None: it can): the input is a DynamicQuantizeLinear's output, the weight another
        one or a static per-tensor int8 / uint8 type (a MatMul weight also per column); the output and any bias stay
        float. (Two static operands have QLinear operators or QDQ: lift reads this form back only so.)"""
        if (len(node.input) > 2 and node.input[2]) or not node.output:
            return "a bias input (quantize_dynamic adds it after the scaling)"
        if not all(n in self.types for n in node.input[:2]) or node.output[0] in self.types:
            return "not two quantized operands with a float output"
        if not self.types[node.input[0]].is_dynamic:
            return "a static input"
        for k, name in enumerate(node.input[:2]):
            qtype = self.types[name]
            if qtype.is_dynamic:
                producer = self.ix.producer.get(name)
                made = None if producer is None else self.ix.nodes[producer]
                if made is None or made.op_type != "DynamicQuantizeLinear" or made.domain not in STANDARD_DOMAINS:
                    return f"dynamic operand {name!r} is not a DynamicQuantizeLinear's output"
                continue
            if qtype.storage not in QLINEAR_STORAGE or qtype.block_size is not None or qtype.expressed != "float32":
                return f"operand {name!r} is not int8 / uint8 expressed in float32"
            shape = self.ix.shape(name)
            per_column = (node.op_type == "MatMul" and k == 1 and shape is not None and len(shape) == 2
                          and qtype.axis == 1)
            if qtype.axis is not None and not per_column:
                return f"operand {name!r} is per-axis (MatMulInteger takes a weight per column only)"
        return None

    def _emit_integer(self, node: NodeProto) -> None:
        """quantize_dynamic's form: Mul of the two scales, the integer operator on the stored values and their zero
        points, Cast to float32, Mul by the scale product."""
        (a_scale, a_zp), (b_scale, b_zp) = (self._parameters(n) for n in node.input[:2])
        out = node.output[0]
        base = node.name or out
        product, acc = self.names.fresh(f"{base}_quant_scales_mul"), self.names.fresh(f"{out}_output_quantized")
        wide = self.names.fresh(f"{acc}_cast_output")
        op = "ConvInteger" if node.op_type == "Conv" else "MatMulInteger"
        ins = [self.integer_name[node.input[0]], self.integer_name[node.input[1]], a_zp or "", b_zp or ""]
        fresh = self.node_names.fresh
        self.nodes += [helper.make_node("Mul", [a_scale, b_scale], [product], name=fresh(f"{base}_scales_mul")),
                       node_with_attributes(op, ins, [acc], node, name=fresh(f"{base}_quant")),
                       helper.make_node("Cast", [acc], [wide], name=fresh(f"{base}_cast"), to=TensorProto.FLOAT),
                       helper.make_node("Mul", [wide, product], [out], name=fresh(f"{base}_scaled"))]
        self.result.integer_nodes += 1

    def _emit_qlinear(self, i: int, node: NodeProto) -> None:
        ins = []
        for name in node.input[:2]:
            ins += [self.integer_name[name], *self._parameters_with_zero(name)]
        out = node.output[0]
        ins += list(self._parameters_with_zero(out))
        if node.op_type == "Conv" and len(node.input) > 2 and node.input[2]:
            ins.append(self.integer_name[node.input[2]])
        op = "QLinearConv" if node.op_type == "Conv" else "QLinearMatMul"
        name = self.node_names.fresh(f"{node.name}_quant") if node.name else ""
        self.nodes.append(node_with_attributes(op, ins, [self.integer_name[out]], node, name=name))
        self.result.qlinear_nodes += 1

    def _parameters_with_zero(self, name: str) -> tuple[str, str]:
        scale, zp = self._parameters(name)
        assert zp is not None  # int8 / uint8 always carry a zero point tensor
        return scale, zp

    # -- the walk ------------------------------------------------------------------------------------------------
    def _declare_float(self, name: str, like: str) -> None:
        qtype = self.types[like]
        shape = self.ix.shape(like)
        self.float_decls.append(
            helper.make_tensor_value_info(name, qtype.expressed_type.data_type, None if shape is None else list(shape))
        )

    def _regular(self, i: int, node: NodeProto) -> None:
        copy = NodeProto()
        copy.CopyFrom(node)
        for j, name in enumerate(copy.input):
            if name in self.types:
                copy.input[j] = self._dequantize(name)
        produced = []
        for k, name in enumerate(copy.output):
            if name in self.types:
                copy.output[k] = self._float_name(name)
                if copy.output[k] != name:  # else the typed declaration becomes the float one
                    self._declare_float(copy.output[k], name)
                produced.append((copy.output[k], name))
        self.nodes.append(copy)
        for float_name, name in produced:
            self._quantize(float_name, name, i)

    def _walk(self) -> None:
        for i, node in enumerate(self.ix.nodes):
            if self._boundary(i):
                self._check_boundary(i, node)
                copy = NodeProto()
                copy.CopyFrom(node)
                if is_dequantize(copy):
                    copy.input[0] = self.integer_name[copy.input[0]]
                    metadata.unmark(copy)  # a typed model's own boundary: lift must keep it
                elif self._narrowed(copy.output[0]):  # QuantizeLinear alone saturates at the full storage range
                    copy.input[0] = self._clip_to_range(copy.input[0], copy.output[0], self.types[copy.output[0]])
                self.nodes.append(copy)
            elif self._constant(i):
                copy = NodeProto()
                copy.CopyFrom(node)
                self.nodes.append(copy)
            elif i in self.contrib:
                self._emit_contrib(i, node)
            elif i in self.integer_ops and node.op_type in ("Conv", "MatMul"):
                if i in self.qlinear_ops:
                    self._emit_qlinear(i, node)
                else:
                    self._emit_integer(node)
            elif i in self.integer_ops:
                copy = NodeProto()
                copy.CopyFrom(node)
                for j, name in enumerate(copy.input):
                    if name in self.types:
                        copy.input[j] = self.integer_name[name]
                if has_subgraph(copy):
                    self._rename_outer_reads(copy)
                self.nodes.append(copy)
            else:
                self._regular(i, node)

    def run(self) -> LowerResult:
        self._quantize_dynamic_inputs()
        self._walk()
        self._convention_outputs()
        graph = self.graph
        del graph.node[:]
        graph.node.extend(self.nodes)  # first: the declarations inside kept subgraphs are made plain there
        metadata.drop_contrib(self.model)  # the mark says which kernel the original ran; the lowered nodes say it
        kept_meta = self._declarations()
        graph.input.extend(self.extra_inputs)
        graph.output.extend(self.extra_outputs)
        graph.initializer.extend(self.initializers)
        self._set_versions(kept_meta)
        if self.result.qlinear_nodes:
            self.result.notes.append(f"{self.result.qlinear_nodes} QLinearConv / QLinearMatMul node(s)")
        if self.result.integer_nodes:
            self.result.notes.append(f"{self.result.integer_nodes} ConvInteger / MatMulInteger node(s)")
        if self.result.contrib_nodes:
            self.result.notes.append(f"{self.result.contrib_nodes} com.microsoft QLinear* node(s), as the original had")
        self.result.typed_tensors = len(self.types)
        if not self.types:
            self.result.notes.append("the model has no quantized types; nothing to lower (its nodes are copied as they are)")
        self.kept_meta = kept_meta
        if not self.fused:  # (fused: checked once MatMulNBits replaced the blocked weights, by ``lower_model``)
            self.check()
        bf16 = _bfloat16_scaled(self.model.graph)
        if bf16:
            shown = ", ".join(repr(t) for t in bf16[:3]) + (f" and {len(bf16) - 3} more" if len(bf16) > 3 else "")
            self.result.warnings.append(
                f"{'tensor' if len(bf16) == 1 else 'tensors'} {shown} {'is' if len(bf16) == 1 else 'are'} expressed in bfloat16: the lowered QuantizeLinear / "
                "DequantizeLinear nodes take bfloat16 scales, which is valid ONNX, but onnxruntime (1.31, 1.32 measured) "
                "has no kernel for them (NOT_IMPLEMENTED when the session is created); run the model on another runtime, "
                "or express the types in float32 or float16"
            )
        return self.result

    def check(self) -> None:
        """LowerError unless onnx.checker accepts the lowered model. A model kept at an opset before 21 is also held to
        its operators' type constraints there (full_check: a MaxPool of stored uint8 in the QOperator form, which
        MaxPool-11 does not take); refused, it is converted as before, and checked so."""
        if self.kept_opset and next((o.version for o in self.model.opset_import if o.domain in STANDARD_DOMAINS), 21) < 21:
            try:
                self._check(full=True)
                return
            except Exception:  # noqa: BLE001 - any refusal of the full check (type constraints, strict inference)
                self._set_versions(self.kept_meta, keep=False)  # a node lower wrote needs a later version
        try:
            self._check()
        except onnx.checker.ValidationError as exc:
            raise LowerError(f"the lowered model is not valid ONNX: {' '.join(str(exc).split())[:400]}") from None

    def _check(self, full: bool = False) -> None:
        with checkable(self.model) as checked:  # weights left in their files: checked where they lie
            onnx.checker.check_model(checked, full_check=full)

    # -- declarations --------------------------------------------------------------------------------------------
    def _declarations(self) -> dict[str, dict[str, str]]:
        """Plain declarations for every tensor; returns the metadata written (name -> entries)."""
        graph = self.graph
        meta: dict[str, dict[str, str]] = {}
        interface = {vi.name for vi in (*graph.input, *graph.output)}
        old = {vi.name: vi for vi in graph.value_info}
        value_info: list[ValueInfoProto] = []
        for name, qtype in self.types.items():
            integer = self.integer_name[name]
            entries = _metadata_for(qtype)
            if name in interface:
                continue
            vi = _plain(old.get(name) or helper.make_tensor_value_info(name, 0, None), qtype.storage_type.data_type)
            vi.name = integer
            value_info.append(vi)
            if integer != name:
                value_info.append(_plain(old.get(name) or helper.make_empty_tensor_value_info(name), qtype.expressed_type.data_type))
            if entries:
                meta[integer] = entries
        for vi in (*graph.input, *graph.output):
            qtype = self.types.get(vi.name)
            if qtype is not None:
                entries = _metadata_for(qtype)
                if entries:
                    meta[vi.name] = entries
                reals = vi.name in self.dynamic_inputs_here and self.dynamic_inputs == "reals"
                vi.CopyFrom(_plain(vi, self.declared_expressed[vi.name].data_type if reals else qtype.storage_type.data_type))
        for vi in graph.value_info:
            if vi.name not in self.types:
                copy = ValueInfoProto()
                copy.CopyFrom(vi)
                value_info.append(copy)
        value_info.extend(self.float_decls)
        del graph.value_info[:]
        graph.value_info.extend(value_info)
        for decl in _all_declarations(self.model):
            stats = read_statistics(decl, decl.name)
            if stats is not None and decl.name not in self.types:
                meta.setdefault(decl.name, {})[metadata.STATISTICS_KEY] = metadata.encode_statistics(stats)
            inner = self.inner_types.get(decl.name)  # a subgraph's typed tensor holds its stored integers
            decl.CopyFrom(_plain(decl, inner.storage_type.data_type if inner is not None and decl.name not in self.types
                                 else decl.type.tensor_type.elem_type))
        for vi in _all_declarations(self.model):
            for key, value in meta.get(vi.name, {}).items():
                metadata.write(vi, key, value)
        return meta

    def _set_versions(self, meta: dict[str, dict[str, str]], *, keep: bool = True) -> None:
        """The versions lower writes (proposal/spec/interop.md#lower-versions). ``keep``: the model's own opset where
        it holds every type lower writes (``_kept_opset``)."""
        model = self.model
        if not self.types:  # nothing typed was rewritten: the model keeps the versions its runtime accepted
            return
        if self.result.contrib_nodes and not any(o.domain == MS_DOMAIN for o in model.opset_import):
            model.opset_import.add(domain=MS_DOMAIN, version=1)
        storages = {q.storage for q in self.types.values()}
        block_scales = any(t.data_type == TensorProto.FLOAT8E8M0 for _, g in iter_graphs(model) for t in g.initializer)
        ir, opset = (TARGET_2BIT if self._two_bit() or block_scales  # E8M0 scales: opset 24 on
                     else TARGET_FLOAT4 if "float4e2m1" in storages else TARGET)
        current = next((o.version for o in model.opset_import if o.domain in STANDARD_DOMAINS), None)
        self.kept_opset = keep and opset == TARGET[1] and current is not None and self._kept_opset(current)
        if self.kept_opset:  # the other operators stay at the versions the original ran them at
            opset = current
            ir = max(min(model.ir_version, ir), helper.find_min_ir_version_for([helper.make_opsetid("", current)]))
        elif current is not None and current != opset:
            try:
                converted = convert(model, opset)  # (every node's metadata kept: MatMulNBits' accuracy_level ...)
            except Exception as exc:  # the converter raises bare RuntimeErrors and C++ assertion text
                raise LowerError(_conversion_failure(model, current, opset, exc)) from None
            model.CopyFrom(converted)
            for vi in _all_declarations(model):  # the converter drops ValueInfo metadata_props
                for key, value in meta.get(vi.name, {}).items():
                    metadata.write(vi, key, value)
        if current is None:
            model.opset_import.add(domain="", version=opset)
        for entry in model.opset_import:
            if entry.domain in STANDARD_DOMAINS:
                entry.version = opset
        if not any(n.domain == MS_DOMAIN for _, g in iter_graphs(model) for n in g.node):
            for i in reversed([i for i, o in enumerate(model.opset_import) if o.domain == MS_DOMAIN]):
                del model.opset_import[i]
        model.ir_version = ir

    def _kept_opset(self, current: int) -> bool:
        """Whether the model's own opset ``current`` holds every type lower writes (``opset.type_opset``) and is at
        least 12 (onnxruntime has no float64 Clip-11 for the int32 lower computes) and at most 21, so that no operator
        needs converting: onnxruntime picks its kernels by the operator's version, and a converted AveragePool computes
        other bits (an opset-13 file's lower + onnxruntime then differed from the file's own run). Blocked weights
        that go on into MatMulNBits (``fused``) need no standard node; one that does not makes ``check`` convert."""
        written = [q for q in self.types.values() if not (self.fused and q.block_size is not None)]  # (MatMulNBits)
        return 12 <= current <= TARGET[1] and all(type_opset(q) <= current for q in written)

    def _two_bit(self) -> bool:
        """A typed tensor or a plain one (initializer, Constant, declaration) of the model is stored in 2 bits."""
        return any(q.storage in ("int2", "uint2") for q in self.types.values()) or bool(_two_bit_tensors(self.model))


TWO_BIT = frozenset({TensorProto.INT2, TensorProto.UINT2})


def _two_bit_tensors(model: ModelProto) -> list[str]:
    """Names of the model's plain int2 / uint2 tensors (any graph), in model order."""
    found: list[str] = []
    for _, graph in iter_graphs(model):
        found += [t.name for t in graph.initializer if t.data_type in TWO_BIT]
        found += [n.output[0] for n in graph.node if n.op_type == "Constant" and n.output
                  and any(a.name == "value" and a.t.data_type in TWO_BIT for a in n.attribute)]
        for vi in (*graph.input, *graph.output, *graph.value_info):
            if vi.type.WhichOneof("value") == "tensor_type" and vi.type.tensor_type.elem_type in TWO_BIT:
                found.append(vi.name)
    return list(dict.fromkeys(found))


def _conversion_failure(model: ModelProto, current: int, opset: int, exc: Exception) -> str:
    """What onnx's version converter could not convert, located, without its internal assertion text."""
    head = f"cannot convert the model from opset {current} to opset {opset}, the opset lower writes"
    op = m.group(1) if (m := re.search(r"operator '([A-Za-z0-9_]+)'", str(exc))) else None
    for pointer, graph in iter_graphs(model):
        for i, node in enumerate(graph.node):
            if node.domain not in STANDARD_DOMAINS:
                continue
            if onnx.defs.has(node.op_type) and not _defined_at(node.op_type, opset):
                return f"{head}: {node_label(node, i, pointer)} has no definition at opset {opset}"
            if node.op_type == op:
                return f"{head}: onnx's version converter cannot convert {node_label(node, i, pointer)}"
    return f"{head}: onnx's version converter failed{f' on a {op} node' if op else ''}"


def _defined_at(op_type: str, opset: int) -> bool:
    try:
        onnx.defs.get_schema(op_type, opset)
    except onnx.defs.SchemaError:
        return False
    return True


def _bfloat16_scaled(graph: onnx.GraphProto) -> list[str]:
    """The integer tensors a QuantizeLinear / DequantizeLinear of ``graph`` maps with a bfloat16 scale."""
    scale_types = {t.name: t.data_type for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS and node.output:
            for a in node.attribute:
                if a.name == "value":
                    scale_types[node.output[0]] = a.t.data_type
    found = []
    for node in graph.node:
        scaled = (is_quantize(node) or is_dequantize(node)) and len(node.input) > 1
        if scaled and scale_types.get(node.input[1]) == TensorProto.BFLOAT16:
            found.append(node.output[0] if is_quantize(node) else node.input[0])
    return list(dict.fromkeys(found))


MOVES_ON_STORAGE = frozenset({"Identity", "Max", "Min"})  # with data movement: exact on stored values of one type


def _moves_only(node: NodeProto, types: dict[str, QType], pointer: str) -> str | None:
    """Why a node of ``node``'s subgraphs (``node`` at JSON pointer ``pointer``) does more than move stored values
    of one type, or None."""
    for a, attr in enumerate(node.attribute):
        subs = [(f"{pointer}/attribute/{a}/g", attr.g)] if attr.type == onnx.AttributeProto.GRAPH else [
            (f"{pointer}/attribute/{a}/graphs/{j}", g) for j, g in enumerate(attr.graphs)]
        for where, sub in subs:
            for k, inner in enumerate(sub.node):
                typed = [types[n] for n in (*inner.input, *inner.output) if n in types]
                if not typed:
                    continue
                label = f"{node_label(inner, k, where)} in its {attr.name}"
                if has_subgraph(inner):
                    problem = _moves_only(inner, types, f"{where}/node/{k}")
                    if problem:
                        return problem
                    continue
                mode = next((helper.get_attribute_value(a) for a in inner.attribute if a.name == "mode"), b"nearest")
                if not (moves_data(inner.op_type, mode) or inner.op_type in MOVES_ON_STORAGE):
                    return f"{label} computes on quantized values"
                if any(q.is_dynamic for q in typed) or len({q.with_statistics(None) for q in typed}) > 1:
                    return f"{label} reads and writes quantized tensors of different types (it requantizes)"
                if typed[0].has_negative_scale and inner.op_type not in ("Identity",) and (
                        inner.op_type in ORDER_SELECTING or inner.op_type in ("Max", "Min")):
                    return f"{label} selects by order on a negative scale, which reverses it"
    return None


def _rename_reads(graph: onnx.GraphProto, renamed: dict[str, str]) -> None:
    local = {vi.name for vi in graph.input} | {t.name for t in graph.initializer} | {
        o for n in graph.node for o in n.output}
    for node in graph.node:
        node.input[:] = [renamed[n] if n in renamed and n not in local else n for n in node.input]
        for attr in node.attribute:
            for sub in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)):
                _rename_reads(sub, {k: v for k, v in renamed.items() if k not in local})
    for vi in graph.output:  # a body output that is an outer tensor, passed through
        if vi.name in renamed and vi.name not in local:
            vi.name = renamed[vi.name]


NARROW_FLOATS = {TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: ml_dtypes.bfloat16}


def _narrow_model(types: dict[str, QType]) -> dict[str, np.dtype]:
    """When some type's values round or overflow in its expressed type (QT120): every float16 / bfloat16 typed
    tensor -> the dtype its values round to (dynamic parameters are computed in it); empty otherwise, and the
    model lowers with its expressed types unchanged (a faithful float16 model lowers bit for bit as before)."""
    from onnx_qtypes.checker.rules.qt120_expressed_type_too_narrow import too_narrow  # noqa: PLC0415

    if not any(too_narrow(q) for q in types.values()):
        return {}
    return {n: q.expressed_type.np_dtype for n, q in types.items() if q.expressed != "float32"}


def _names(graph: onnx.GraphProto) -> Iterator[str]:
    for vi in (*graph.input, *graph.output, *graph.value_info):
        yield vi.name
    for t in graph.initializer:
        yield t.name
    for node in graph.node:
        yield from node.input
        yield from node.output


def _widen_floats(graph: onnx.GraphProto, names: Names, node_names: Names) -> None:
    """The main graph computing in float32 where it held float16 / bfloat16: initializers, Constants, Casts and
    declarations widened (exactly), a Cast to float32 after each such graph input and a Cast back before each
    such graph output, so that values leave in their declared type, rounded once."""
    for i, t in enumerate(graph.initializer):
        if t.data_type in NARROW_FLOATS:
            graph.initializer[i].CopyFrom(numpy_helper.from_array(
                np.asarray(tensor_array(t)).astype(np.float32), t.name))
    for node in graph.node:
        for a in node.attribute:
            if node.op_type == "Constant" and a.name == "value" and a.t.data_type in NARROW_FLOATS:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
            elif node.op_type in ("Cast", "EyeLike", "RandomNormal", "RandomUniform") and a.name in ("to", "dtype") \
                    and a.i in NARROW_FLOATS:
                a.i = TensorProto.FLOAT
    for vi in graph.value_info:
        if vi.type.tensor_type.elem_type in NARROW_FLOATS:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT
    entry, exit_ = [], []
    for vi in graph.input:
        if vi.type.tensor_type.elem_type in NARROW_FLOATS:
            wide = names.fresh(f"{vi.name}_float32")
            for node in graph.node:
                node.input[:] = [wide if n == vi.name else n for n in node.input]
            entry.append(helper.make_node("Cast", [vi.name], [wide], name=node_names.fresh(f"{vi.name}_to_float32"),
                                          to=TensorProto.FLOAT))
    for vi in graph.output:
        elem = vi.type.tensor_type.elem_type
        if elem in NARROW_FLOATS and any(vi.name in n.output for n in graph.node):
            wide = names.fresh(f"{vi.name}_float32")
            for node in graph.node:
                node.output[:] = [wide if n == vi.name else n for n in node.output]
                node.input[:] = [wide if n == vi.name else n for n in node.input]
            exit_.append(helper.make_node("Cast", [wide], [vi.name], name=node_names.fresh(f"{vi.name}_to_{'float16' if elem == TensorProto.FLOAT16 else 'bfloat16'}"),
                                          to=elem))
    nodes = [*entry, *graph.node, *exit_]
    del graph.node[:]
    graph.node.extend(nodes)


def range_bounds(qtype: QType) -> tuple[np.ndarray, np.ndarray]:
    """Real values of storage_min and storage_max of a per-tensor type, in the expressed type.

    Clip to these, then QuantizeLinear, saturates exactly at the narrowed
    range: bound / scale rounds back to bound - zero_point (the float error
    is far below half a step for 16-bit and narrower storage).
    """
    dtype = qtype.expressed_type.np_dtype
    assert qtype.storage_min is not None and qtype.storage_max is not None
    ends = np.sort(dequantize(np.array([qtype.storage_min, qtype.storage_max], np.int64), qtype))  # scale < 0 swaps
    return np.asarray(ends[0], dtype=dtype), np.asarray(ends[1], dtype=dtype)


def _metadata_for(qtype: QType) -> dict[str, str]:
    entries = {}
    st = STORAGE_TYPES[qtype.storage]
    if qtype.schema.value != 0 or (qtype.storage_min, qtype.storage_max) != (st.min, st.max):
        entries[metadata.QTYPE_KEY] = metadata.encode_qtype(qtype.with_statistics(None))
    if qtype.statistics is not None:
        entries[metadata.STATISTICS_KEY] = metadata.encode_statistics(qtype.statistics)
    return entries


def _plain(vi: ValueInfoProto, elem_type: int) -> ValueInfoProto:
    """A copy of ``vi`` with a plain tensor type: ``elem_type``, the same shape, no extension fields."""
    out = ValueInfoProto()
    out.CopyFrom(vi)
    if vi.type.WhichOneof("value") != "tensor_type":
        return out
    shape = vi.type.tensor_type.shape if vi.type.tensor_type.HasField("shape") else None
    out.type.tensor_type.Clear()
    out.type.tensor_type.elem_type = elem_type
    if shape is not None:
        out.type.tensor_type.shape.CopyFrom(shape)
    return out


def _all_declarations(model: ModelProto) -> Iterator[ValueInfoProto]:
    for decl in iter_declarations(model):
        yield decl.value_info


def _integer(node: NodeProto, i: int, attrs: dict, name: str, default: int) -> int:
    """An INT attribute of a boundary node; LowerError when the node holds another kind there (a mistyped file)."""
    value = attrs.get(name, default)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise LowerError(f"{node_label(node, i)}: attribute {name} is {value!r}, not an integer (the operator's schema "
                     "types it INT)")


def _stated(qtype: QType, scale_type: int | None) -> QType:
    """``qtype`` with its scales as a boundary node's scale input of ``scale_type`` must state them (validity.md#qt307,
    ``scales_as_stated``): rounded to the expressed type when the input has that type, else exactly the type's."""
    expressed = qtype.expressed_type
    if scale_type != expressed.data_type:
        return qtype
    return qtype.replace(scale=scales_as_stated(qtype.scale, expressed.np_dtype, expressed.np_dtype), validate=False)


__all__ = ["FORMS", "LowerResult", "LowerWarning", "lower", "lower_model"]
