"""Helpers for the reference-ops tests: typed single-op models, their QDQ
lowering for onnxruntime, random quantized types and storage data.

``typed_model`` builds a one-node typed model (quantized tensors declared
with ``set_qtype``); ``lower_to_qdq`` rewrites such a model into standard
ONNX (DequantizeLinear -> op -> QuantizeLinear) that onnxruntime runs on
the same storage integers; ``compare`` runs the definitional and the
integer evaluator on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, set_qtype
from onnx_qtypes.proto.parameter_layout import parameter_shape
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.proto.validity import symmetric_with_unsigned_zero_points
from onnx_qtypes.reference_ops import ReferenceEvaluator

IR_VERSION, OPSET = 10, 21


@dataclasses.dataclass
class T:
    """One tensor of a test model: quantized when ``qtype`` is set; an initializer when ``value`` is."""

    name: str
    shape: tuple[int, ...]
    qtype: QType | None = None
    dtype: int = TensorProto.FLOAT
    value: np.ndarray | None = None

    @property
    def elem_type(self) -> int:
        return self.qtype.storage_type.data_type if self.qtype is not None else self.dtype


def typed_model(op_type: str, inputs: Sequence[T | None], outputs: Sequence[T], opset: int = OPSET, **attrs: Any) -> onnx.ModelProto:
    """A typed model of one ``op_type`` node; graph inputs are the tensors without a value."""
    node = helper.make_node(op_type, [t.name if t else "" for t in inputs], [t.name for t in outputs], name="node", **attrs)
    present = [t for t in inputs if t is not None]
    graph = helper.make_graph(
        [node],
        f"single_{op_type}",
        [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in present if t.value is None],
        [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in outputs],
        [numpy_helper.from_array(np.asarray(t.value), t.name) for t in present if t.value is not None],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    for t in [*present, *outputs]:
        if t.qtype is not None:
            set_qtype(model, t.name, t.qtype)
    return model


def feeds_of(inputs: Sequence[T | None], values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {t.name: values[t.name] for t in inputs if t is not None and t.value is None}


# --- the evaluators side by side -----------------------------------------------------------


def compare(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray], dict[str, str]]:
    """(definitional outputs, integer outputs, integer kernel log)."""
    definitional = ReferenceEvaluator(model).run(None, feeds)
    integer_eval = ReferenceEvaluator(model, kernels="integer")
    integer = integer_eval.run(None, feeds)
    return definitional, integer, integer_eval.kernel_log


def steps_apart(a: np.ndarray, b: np.ndarray) -> int:
    """Largest difference between two storage arrays, in storage steps."""
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0:
        return 0
    return int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))


# --- lowering to standard ONNX for onnxruntime ----------------------------------------------


def _parameters(name: str, qtype: QType, shape: tuple[int, ...]) -> tuple[list[TensorProto], dict[str, int]]:
    pshape = parameter_shape(qtype, shape)
    storage_dtype = qtype.storage_type.np_dtype
    scale = np.asarray(qtype.scale, np.float32).reshape(pshape)
    zero_point = np.asarray(qtype.zero_point, np.int64).astype(storage_dtype).reshape(pshape)
    attrs: dict[str, int] = {}
    if qtype.axis is not None:
        attrs["axis"] = qtype.axis
    if qtype.block_size is not None:
        attrs["block_size"] = qtype.block_size
    return [numpy_helper.from_array(scale, f"{name}__scale"), numpy_helper.from_array(zero_point, f"{name}__zp")], attrs


def lower_to_qdq(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> onnx.ModelProto:
    """Standard ONNX for a typed one-node model: DQ on each quantized input, Q on each quantized output.

    ``shapes`` gives the shape of every quantized tensor (for per-axis parameter layout).
    """
    from onnx_qtypes import quantized_tensors
    from onnx_qtypes.proto.encoding import plain_copy

    qtypes = quantized_tensors(model)
    model = plain_copy(model)  # storage types in place of the fail-closed markers: this writes standard ONNX
    graph = model.graph
    node = graph.node[0]
    if node.op_type in ("QuantizeLinear", "DequantizeLinear"):  # boundary ops stay: only the types become plain
        return _plain_types(model, qtypes, shapes)
    nodes, inits = [], list(graph.initializer)
    new_inputs = []
    for vi in graph.input:
        if vi.name in qtypes:
            new_inputs.append(helper.make_tensor_value_info(vi.name, qtypes[vi.name].storage_type.data_type, shapes[vi.name]))
        else:
            new_inputs.append(vi)
    op_inputs = []
    for name in node.input:
        if name in qtypes:
            params, attrs = _parameters(name, qtypes[name], shapes[name])
            inits.extend(params)
            nodes.append(helper.make_node("DequantizeLinear", [name, params[0].name, params[1].name], [f"{name}__real"], **attrs))
            op_inputs.append(f"{name}__real")
        else:
            op_inputs.append(name)
    op_outputs = []
    for name in node.output:
        if name in qtypes:
            op_outputs.append(f"{name}__real")
        else:
            op_outputs.append(name)
    op = helper.make_node(node.op_type, op_inputs, op_outputs, name=node.name)
    op.attribute.extend(node.attribute)
    nodes.append(op)
    outputs = []
    for vi in graph.output:
        if vi.name in qtypes:
            qt = qtypes[vi.name]
            params, attrs = _parameters(vi.name, qt, shapes[vi.name])
            inits.extend(params)
            nodes.append(helper.make_node("QuantizeLinear", [f"{vi.name}__real", params[0].name, params[1].name], [vi.name], **attrs))
            outputs.append(helper.make_tensor_value_info(vi.name, qt.storage_type.data_type, shapes[vi.name]))
        else:
            outputs.append(vi)
    lowered = helper.make_graph(nodes, graph.name + "_qdq", new_inputs, outputs, inits)
    return helper.make_model(lowered, opset_imports=list(model.opset_import), ir_version=IR_VERSION)


def _plain_types(model: onnx.ModelProto, qtypes: dict, shapes: dict[str, tuple[int, ...]]) -> onnx.ModelProto:
    plain = onnx.ModelProto()
    plain.CopyFrom(model)
    for field in (plain.graph.input, plain.graph.output):
        for vi in field:
            if vi.name in qtypes:
                vi.CopyFrom(helper.make_tensor_value_info(vi.name, qtypes[vi.name].storage_type.data_type, shapes[vi.name]))
    del plain.graph.value_info[:]
    return plain


def activations_per_tensor(model: onnx.ModelProto) -> bool:
    """True when every quantized graph input and output is per-tensor (onnxruntime's fused QLinear kernels need that)."""
    from onnx_qtypes import quantized_tensors

    qtypes = quantized_tensors(model)
    names = [vi.name for vi in [*model.graph.input, *model.graph.output]]
    return all(qtypes[n].axis is None for n in names if n in qtypes)


def run_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray], optimize: bool = True) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


# --- random types and data ---------------------------------------------------------------------

SCALE_EXPONENTS = (-9, 1)


@st.composite
def scales(draw: st.DrawFn, count: int = 1) -> list[float]:
    """float32 scales (exact in float32), spread over several binades."""
    out = []
    for _ in range(count):
        mantissa = draw(st.integers(1 << 23, (1 << 24) - 1))
        exponent = draw(st.integers(*SCALE_EXPONENTS))
        out.append(float(np.float32(mantissa * 2.0 ** (exponent - 23))))
    return out


@st.composite
def qtypes(
    draw: st.DrawFn,
    storages: Sequence[str] = ("int8", "uint8"),
    shape: tuple[int, ...] | None = None,
    axes: Sequence[int | None] = (None,),
    schemas: Sequence[str] = tuple(s.name.lower() for s in Schema),
    narrow: bool = True,
) -> QType:
    """A random static QType for a tensor of ``shape``: storage, granularity, schema, parameters
    satisfying the schema, and (signed storage) sometimes the narrow range [-max, max]."""
    storage = STORAGE_TYPES[draw(st.sampled_from(list(storages)))]
    axis = draw(st.sampled_from(list(axes)))
    count = 1 if axis is None else shape[axis]  # type: ignore[index]
    lo, hi = storage.min, storage.max
    if narrow and lo < 0 and draw(st.integers(0, 3)) == 0:
        lo = -hi
    schema = Schema.parse(draw(st.sampled_from(list(schemas))))
    if schema.symmetric:
        zero_points = [0] * count
    elif schema is Schema.SYMMETRIC_WITH_UNSIGNED:
        admitted = sorted(set(symmetric_with_unsigned_zero_points(storage.min, storage.max, lo)))
        if storage.bits > 16:  # int32's unsigned form (zero point -2^31) wraps in onnxruntime's DequantizeLinear
            admitted = [z for z in admitted if abs(z) <= 2**15]  # (vendor_results: int32 DequantizeLinear)
        zero_points = [draw(st.sampled_from(admitted)) for _ in range(count)]
    else:  # int32: small zero points (onnxruntime subtracts them in int32: see vendor_results)
        zp_lo, zp_hi = (max(lo, -(2**15)), min(hi, 2**15)) if storage.bits > 16 else (lo, hi)
        zero_points = [draw(st.integers(zp_lo, zp_hi)) for _ in range(count)]
    if schema.pow2:
        values = [2.0 ** draw(st.integers(*SCALE_EXPONENTS)) for _ in range(count)]
    else:
        values = draw(scales(count))
    return QType(storage.name, values, zero_points, axis=axis, schema=schema, storage_min=lo, storage_max=hi)


def storage_data(rng: np.random.Generator, qtype: QType, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform random storage integers of ``qtype`` (its full storage range)."""
    values = rng.integers(qtype.storage_min, qtype.storage_max + 1, size=shape, endpoint=False)
    return values.astype(qtype.storage_type.np_dtype)


def bias_type(x: QType, w: QType, channels: int) -> QType:
    """int32 bias of a Conv/Gemm: scale s_x * s_w (float32 product, as runtimes compute it), zero point 0."""
    w_scales = np.broadcast_to(np.asarray(w.scale, np.float32), (channels,)) if w.axis is not None else np.full(channels, w.scale[0], np.float32)
    product = (np.float32(x.scale[0]) * w_scales).astype(np.float32)
    if w.axis is None:
        return QType("int32", float(product[0]), 0, schema="symmetric")
    return QType("int32", product.astype(np.float64), [0] * channels, axis=0, schema="symmetric")
