"""Lower the version-3 types (the LLM weight formats: proposal/spec/llm_formats.md#lower) before ``lower`` does the
rest: each such weight becomes standard-ONNX nodes computing its float values, exactly.

A version-3 type declares a constant only (QT142), so its lowering is a function of initializers, placed first in
the graph, whose output takes the weight's name (the storage moves to ``<name>.codes``):

- scales: a quantized parameter tensor is a ``DequantizeLinear`` of its codes by its float16 super-block scale
  (``Cast`` to float: exact), so the hierarchy stays as compact as the typed model; a narrower float initializer is
  a ``Cast``; E8M0 bytes become the float32 powers of two they stand for (no CPU kernel casts E8M0 before opset 24);
- codes without an offset or codebook: one blocked ``DequantizeLinear`` by those scales, every product exact in
  float32 (at most 24 significant bits: llm_formats.md#exactness);
- offsets (Q4_1, Q5_1, the K-quants' -dmin * min) are added per block after a ``Reshape`` that puts each block on an
  axis of its own, one float32 rounding of the exact real, which is what gguf's float32 dequantizer gives;
- a codebook (IQ4_NL, NF4, and MXFP4's FLOAT4E2M1 codes read as the 16-entry table of their values) is a
  ``Gather`` of the table by the codes, times the block scale the same way.

With ``form="matmulnbits"`` a weight whose type has integer codes, one level of scales after flattening (the
products d * sc, exact in float32), no offset and no codebook (Q4_0, Q5_0, Q8_0, Q3_K, Q6_K) is instead given a
version-2 type with those float32 scales, so that ``lower`` writes one blocked DequantizeLinear that
``matmul_nbits.fuse`` turns into com.microsoft.MatMulNBits where a MatMul reads it.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, helper, numpy_helper

from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.proto.parameter_layout import single_block
from onnx_qtypes.proto.model import model_parameters, read_view, write_view
from onnx_qtypes.proto.parameter_references import read_references
from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE
from onnx_qtypes.proto.validity import count_problem
from onnx_qtypes.proto.versions import LLM_FORMATS_VERSION, declared_version

FIELDS = ("scale", "offset")


@dataclasses.dataclass
class _Weight:
    name: str
    msg: pb.QuantizedType
    init: TensorProto


def lower_llm_formats(model: ModelProto, form: str = "qdq") -> int:
    """Rewrite, in place, every version-3 weight of the main graph of a plain-form ``model`` (``to_plain_form``);
    returns how many. LowerError naming the tensor when a version-3 type is not on an initializer."""
    graph = model.graph
    declared = _declarations(graph)
    weights = _weights(graph, declared)
    if not weights:
        return 0
    lookup = model_parameters(model)
    nodes: list[NodeProto] = []
    drop: set[str] = set()
    unused: set[str] = set()
    for weight in weights:
        qtype = _resolved(weight, lookup)  # a type check refuses is refused before its weight is rewritten
        if form == "matmulnbits" and _flattened(graph, weight, qtype):
            unused |= _parameter_names(weight.msg, declared)  # the scales are now one float32 initializer
            continue  # a version-2 type: lower writes its DequantizeLinear, fuse its MatMulNBits
        drop.add(weight.name)
        for field in FIELDS:
            named = getattr(weight.msg, f"{field}_tensor") if weight.msg.HasField(f"{field}_tensor") else ""
            if named in declared:
                drop.add(named)
        nodes += _chain(graph, weight, declared, lookup)
    drop |= unused
    kept = [vi for vi in graph.value_info if vi.name not in drop]
    del graph.value_info[:]
    graph.value_info.extend(kept)
    for i in reversed([i for i, init in enumerate(graph.initializer) if init.name in unused]):
        del graph.initializer[i]
    old = list(graph.node)
    del graph.node[:]
    graph.node.extend([*nodes, *old])
    return len(weights)


def _declarations(graph: GraphProto) -> dict[str, pb.QuantizedType]:
    out: dict[str, pb.QuantizedType] = {}
    for kind in ("input", "output", "value_info"):
        for i, vi in enumerate(getattr(graph, kind)):
            if vi.type.WhichOneof("value") == "tensor_type" and vi.name not in out:
                view = read_view(vi.type.tensor_type, f"/graph/{kind}/{i}")  # located as lower locates it
                if view.HasField("quantization"):
                    out[vi.name] = view.quantization
    return out


def _weights(graph: GraphProto, declared: dict[str, pb.QuantizedType]) -> list[_Weight]:
    """The version-3 types' tensors (not the quantized parameter tensors they name), each an initializer."""
    parameters = {getattr(m, f"{f}_tensor") for m in declared.values() for f in FIELDS if m.HasField(f"{f}_tensor")}
    inits = {t.name: t for t in graph.initializer}
    interface = {vi.name for vi in (*graph.input, *graph.output)}
    out = []
    for name, msg in declared.items():
        if declared_version(msg) < LLM_FORMATS_VERSION or name in parameters:
            continue
        if name not in inits or name in interface:
            raise LowerError(f"tensor {name!r} has a version-3 type (offsets, a codebook or quantized parameters), "
                             "which declares constants only (QT142); lower reads it from an initializer")
        out.append(_Weight(name, msg, inits[name]))
    return out


def _resolved(weight: _Weight, lookup) -> QType:
    """The weight's type with its referenced parameters read, checked against the weight's shape: lower runs
    before any checker, so a type check would refuse is refused here, naming the tensor."""
    refs = read_references(weight.msg, lookup, tuple(weight.init.dims), getattr(lookup, "declared", None))
    if refs.problem:
        raise LowerError(f"tensor {weight.name!r}: {refs.problem}; run `onnx-qtypes check`")
    try:
        qtype = QType.from_proto(weight.msg, values=refs.values)
    except QTypeError as exc:
        raise LowerError(f"tensor {weight.name!r}: {exc.field}: {exc.problem}; run `onnx-qtypes check`") from None
    if problem := count_problem(qtype, tuple(weight.init.dims)):
        raise LowerError(f"tensor {weight.name!r}: {problem}; run `onnx-qtypes check`")
    return qtype


def _parameter_names(msg: pb.QuantizedType, declared: dict[str, pb.QuantizedType]) -> set[str]:
    """The initializers holding a type's scales and offsets, a quantized parameter tensor's own ones included."""
    names = set()
    for field in FIELDS:
        if msg.HasField(f"{field}_tensor"):
            name = getattr(msg, f"{field}_tensor")
            names.add(name)
            inner = declared.get(name)
            if inner is not None and inner.HasField("scale_tensor"):
                names.add(inner.scale_tensor)
    return names


def _flattened(graph: GraphProto, weight: _Weight, qtype: QType) -> bool:
    """For MatMulNBits: give an affine integer weight (``qtype``, its type resolved) a version-2 type with float32
    scales (exact products)."""
    if not qtype.is_affine or qtype.storage_type.is_float or qtype.axis is None:
        return False
    if single_block(list(weight.init.dims), qtype.block_size):
        return False  # 1-D, one block: no MatMulNBits weight; the chain writes its one-element scale per-tensor
    name = f"{weight.name}.scale"
    scales = np.asarray(qtype.scale, np.float64)
    if (scales == 0).any():  # a block of zeros (d = 0): scale 1 and codes at the zero point stand for the same 0s
        _zero_blocks_at_zero_point(weight, qtype, scales == 0)
        scales = np.where(scales == 0, 1.0, scales)
    shape = [*weight.init.dims]
    shape[qtype.axis] = -(-shape[qtype.axis] // qtype.block_size) if qtype.block_size else shape[qtype.axis]
    graph.initializer.append(numpy_helper.from_array(scales.astype(np.float32).reshape(
        shape if qtype.block_size else [shape[qtype.axis]]), name))
    plain = qtype.replace(scale=scales, scale_tensor=name, offset_tensor=None, version=2)
    msg = plain.to_proto()
    msg.version = 2
    for vi in graph.value_info:
        if vi.name == weight.name:
            view = read_view(vi.type.tensor_type)
            view.quantization.CopyFrom(msg)
            write_view(vi.type.tensor_type, view)
    return True


def _zero_blocks_at_zero_point(weight: _Weight, qtype: QType, zero: np.ndarray) -> None:
    """Rewrite the codes of the blocks whose scale is 0 to their zero point (their values stay 0)."""
    from onnx_qtypes.reference_ops.quant import parameter_index  # noqa: PLC0415

    codes = np.asarray(tensor_array(weight.init))
    index = np.broadcast_to(parameter_index(qtype, codes.shape), codes.shape)
    zero_points = np.asarray(qtype.zero_point, np.int64)[index]
    rewritten = np.where(zero[index], zero_points, codes.astype(np.int64)).astype(codes.dtype)
    weight.init.CopyFrom(numpy_helper.from_array(rewritten, weight.init.name))


def _chain(graph: GraphProto, weight: _Weight, declared: dict[str, pb.QuantizedType], lookup) -> list[NodeProto]:
    """Nodes computing ``weight``'s float32 values under its own name."""
    msg, name = weight.msg, weight.name
    dims = list(weight.init.dims)
    axis, block = msg.axis, msg.block_size if msg.HasField("block_size") else None
    if not msg.HasField("axis") or block is None or dims[axis] % block:
        raise LowerError(f"tensor {name!r}: lower writes version-3 types blocked along an axis the blocks divide "
                         f"(GGUF's layouts); found axis {msg.axis if msg.HasField('axis') else None}, block {block}, "
                         f"dims {dims}")
    codes = f"{name}.codes"
    weight.init.name = codes
    nodes: list[NodeProto] = []
    params = {}
    for field in ("scale", "offset"):
        params[field] = _parameter(graph, weight, field, declared, lookup, nodes)
    storage = STORAGE_BY_DATA_TYPE[msg.storage_type]
    table = list(msg.codebook)
    if storage.is_float:
        if storage.name != "float4e2m1":
            raise LowerError(f"tensor {name!r}: {storage.name} codes with version-3 parameters have no lowering")
        weight.init.data_type = TensorProto.UINT4  # the same bits; their values are the FLOAT4E2M1 table
        table = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64).tolist()
        lo = 0
    else:
        lo = msg.storage_min if msg.HasField("storage_min") else storage.min
    if not table and params["offset"] is None:  # one DequantizeLinear: s * (q - zp), exact
        nodes += _dequantize(graph, codes, params["scale"], _zero_point(graph, weight), name, dims, axis, block,
                             f"{name} dequantize")
        return nodes
    if table:
        index = f"{name}.index"
        nodes.append(helper.make_node("Cast", [codes], [index], to=TensorProto.INT32, name=f"{name} index"))
        if lo:
            graph.initializer.append(numpy_helper.from_array(np.asarray(lo, np.int32), f"{name}.storage_min"))
            nodes.append(helper.make_node("Sub", [index, f"{name}.storage_min"], [f"{name}.from0"]))
            index = f"{name}.from0"
        graph.initializer.append(numpy_helper.from_array(np.asarray(table, np.float32), f"{name}.codebook"))
        nodes.append(helper.make_node("Gather", [f"{name}.codebook", index], [f"{name}.values"], name=f"{name} codebook"))
        values, scaled = f"{name}.values", True
    else:
        values, scaled = f"{name}.scaled", False
        nodes += _dequantize(graph, codes, params["scale"], _zero_point(graph, weight), values, dims, axis, block,
                             f"{name} dequantize")
    blocked = [*dims[:axis], dims[axis] // block, block, *dims[axis + 1:]]
    graph.initializer.append(numpy_helper.from_array(np.asarray(blocked, np.int64), f"{name}.blocked_shape"))
    graph.initializer.append(numpy_helper.from_array(np.asarray(dims, np.int64), f"{name}.shape"))
    graph.initializer.append(numpy_helper.from_array(np.asarray([axis + 1], np.int64), f"{name}.block_axis"))
    nodes.append(helper.make_node("Reshape", [values, f"{name}.blocked_shape"], [f"{name}.blocks"]))
    current = f"{name}.blocks"
    for field, op in (("scale", "Mul"), ("offset", "Add")):
        if field == "scale" and not scaled or params[field] is None:
            continue
        per_block = f"{name}.{field}_per_block"
        nodes.append(helper.make_node("Unsqueeze", [params[field], f"{name}.block_axis"], [per_block]))
        nodes.append(helper.make_node(op, [current, per_block], [f"{current}.{field}"], name=f"{name} {field}"))
        current = f"{current}.{field}"
    nodes.append(helper.make_node("Reshape", [current, f"{name}.shape"], [name], name=f"{name} values"))
    return nodes


def _zero_point(graph: GraphProto, weight: _Weight) -> list[str]:
    msg = weight.msg
    if msg.HasField("zero_point_tensor"):
        return [msg.zero_point_tensor]
    if not any(msg.zero_point):
        return []
    raise LowerError(f"tensor {weight.name!r}: listed zero points on a version-3 weight have no lowering here; "
                     "keep them in a zero_point_tensor")


def _parameter(graph: GraphProto, weight: _Weight, field: str, declared: dict[str, pb.QuantizedType], lookup,
               nodes: list[NodeProto]) -> str | None:
    """The name of a float32 tensor of ``weight``'s scales / offsets in their parameter shape (None: none)."""
    msg, name = weight.msg, weight.name
    out = f"{name}.{field}"
    dims = list(weight.init.dims)
    dims[msg.axis] //= msg.block_size
    if not msg.HasField(f"{field}_tensor"):
        values = list(getattr(msg, field))
        if not any(values):
            return None
        graph.initializer.append(numpy_helper.from_array(np.asarray(values, np.float32).reshape(dims), out))
        return out
    source = getattr(msg, f"{field}_tensor")
    inner = declared.get(source)
    if inner is None:  # a plain initializer: expressed type (float32) or a narrower float
        init = lookup(source)
        if init.data_type == TensorProto.FLOAT:
            return source
        if init.data_type == TensorProto.FLOAT8E8M0:  # 2^(e - 127) as float32 (exact; Cast needs opset 24)
            init.CopyFrom(numpy_helper.from_array(np.asarray(tensor_array(init), np.float64).astype(np.float32),
                                                  source))  # the type's own initializer (QT118): nothing else reads it
            return source
        nodes.append(helper.make_node("Cast", [source], [out], to=TensorProto.FLOAT, name=f"{out} cast"))
        return out
    inner_scale = _inner_scale(graph, source, inner, lookup, nodes)
    zp = [inner.zero_point_tensor] if inner.HasField("zero_point_tensor") else []
    if not zp and any(inner.zero_point):
        raise LowerError(f"tensor {source!r}: listed zero points on a parameter tensor have no lowering here")
    if inner.HasField("block_size"):
        nodes += _dequantize(graph, source, inner_scale, zp, out, list(lookup(source).dims), inner.axis,
                             inner.block_size, f"{out} dequantize")
    else:
        kwargs = {"axis": inner.axis} if inner.HasField("axis") else {}
        nodes.append(helper.make_node("DequantizeLinear", [source, inner_scale, *zp], [out], name=f"{out} dequantize",
                                      **kwargs))
    return out


def _dequantize(graph: GraphProto, codes: str, scale: str, zero_point: list[str], out: str, dims: list[int],
                axis: int, block: int, node_name: str) -> list[NodeProto]:
    """A blocked DequantizeLinear of ``codes`` (``dims``). When the codes are 1-D and one block, the scale is 1-D of
    one element, which onnxruntime 1.32.0 reads as per-tensor and then refuses with a block_size ("block_size must
    be 0 for per-tensor quantization"): that block is written per-tensor, its scale (and zero point) reshaped to a
    scalar, which means the same."""
    if not single_block(dims, block):
        return [helper.make_node("DequantizeLinear", [codes, scale, *zero_point], [out], axis=axis, block_size=block,
                                 name=node_name)]
    scalar = f"{out}.scalar_shape"
    graph.initializer.append(numpy_helper.from_array(np.zeros(0, np.int64), scalar))
    nodes, names = [], []
    for part in (scale, *zero_point):
        nodes.append(helper.make_node("Reshape", [part, scalar], [f"{part}.scalar"], name=f"{part} scalar"))
        names.append(f"{part}.scalar")
    nodes.append(helper.make_node("DequantizeLinear", [codes, *names], [out], name=node_name))
    return nodes


def _inner_scale(graph: GraphProto, source: str, inner: pb.QuantizedType, lookup, nodes: list[NodeProto]) -> str:
    """A float32 tensor of a quantized parameter tensor's own scales (its super-block scales)."""
    out = f"{source}.scale_float"
    if not inner.HasField("scale_tensor"):  # listed: one per tensor, per slice or per block of the codes
        dims = list(lookup(source).dims)
        if inner.HasField("axis") and inner.HasField("block_size"):
            dims[inner.axis] = -(-dims[inner.axis] // inner.block_size)
        shape = () if not inner.HasField("axis") else dims if inner.HasField("block_size") else [dims[inner.axis]]
        graph.initializer.append(numpy_helper.from_array(np.asarray(list(inner.scale), np.float32).reshape(shape), out))
        return out
    init = lookup(inner.scale_tensor)
    if init.data_type == TensorProto.FLOAT:
        return inner.scale_tensor
    nodes.append(helper.make_node("Cast", [inner.scale_tensor], [out], to=TensorProto.FLOAT, name=f"{out} cast"))
    return out

