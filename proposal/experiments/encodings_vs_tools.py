"""Which encoding of quantized element types stays fail-closed after stock tools rewrite the model?

Run:  python proposal/experiments/encodings_vs_tools.py            # full matrix, writes .md and .json here
      python proposal/experiments/encodings_vs_tools.py --quick    # onnx's own tools + onnxruntime only
      python proposal/experiments/encodings_vs_tools.py --tools none,strip_value_info --encodings a,c

Each model below is built in today's encoding (elem_type UNDEFINED + TypeProto.Tensor field 1000, via
onnx_qtypes.set_qtypes) with a reference answer computed by hand from the semantics (real = scale*(q - zp);
an op = dequantize, float op, quantize with round-half-even and clamp) and checked against
onnx_qtypes.reference_ops.ReferenceEvaluator. Every candidate encoding is a function of today's model (and
a decoder back to it). Every stock tool is applied to every (encoding, model); then onnxruntime (CPU,
default session and ORT_DISABLE_ALL) is given the tool's output, and onnx-qtypes reads the types back.

Verdict per (encoding, model, tool):
  tool refused   the tool raised or its process died: nothing was written
  kept intact    onnxruntime refuses the output (both modes) and every quantized type reads back unchanged
  closed, lost   onnxruntime refuses the output, but some quantized declaration is gone or changed
  FAILS OPEN     onnxruntime loads and runs the output in at least one mode (the details say whether the
                 answer differs from the reference and whether the types still read back)

Tools run in worker subprocesses (one per tool, restarted after a crash), so a C++ abort is recorded,
not fatal. Models use IR 10 / opset 21, which onnxruntime 1.32 accepts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnx.compose
import onnx.inliner
import onnx.parser
import onnx.printer
import onnx.shape_inference
import onnx.utils
import onnx.version_converter
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, set_qtypes
from onnx_qtypes.proto import iter_declarations, iter_graphs, quantized_tensors
from onnx_qtypes.proto.encoding import to_plain_form, to_wire_form
from onnx_qtypes.proto.model import read_view, write_view

HERE = Path(__file__).resolve().parent
OPSET, IR = 21, 10
DOMAIN = "ai.onnx.qtypes"  # our domain: markers and boundary ops
SENTINEL = 1000  # elem_type / data_type = SENTINEL + storage data type (INT8 -> 1003, UINT8 -> 1002)

# ----------------------------------------------------------------------------------------------- semantics


def quantize(real: np.ndarray, qt: QType) -> np.ndarray:
    lo, hi = qt.storage_type.min, qt.storage_type.max
    q = np.clip(np.round(np.asarray(real, np.float64) / qt.scale[0]) + qt.zero_point[0], lo, hi)
    return q.astype(onnx.helper.tensor_dtype_to_np_dtype(qt.storage_type.data_type))


def real(q: np.ndarray, qt: QType) -> np.ndarray:
    return qt.scale[0] * (np.asarray(q, np.float64) - qt.zero_point[0])


# ------------------------------------------------------------------------------------------------- models

QX = QType("int8", 0.5, 10)  # x quantized at the boundary
QC = QType("int8", 1.0, -5)  # sums
QW = QType("int8", 0.25, -20)  # a quantized constant
X = np.array([30, 40, -20, 55], np.float32)  # 2*x overflows int8 storage; a_q + a_q wraps in int8


@dataclass
class Case:
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    expected: list[np.ndarray]  # by hand, from the semantics


def _model(nodes, inputs, outputs, inits=(), functions=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid("local", 1)] if functions else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR, functions=list(functions))


def _vi(name: str, elem_type: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def _params(prefix: str, qt: QType) -> list[TensorProto]:
    dtype = helper.tensor_dtype_to_np_dtype(qt.storage_type.data_type)
    return [numpy_helper.from_array(np.array(qt.scale[0], np.float32), f"{prefix}_s"),
            numpy_helper.from_array(np.array(qt.zero_point[0], dtype), f"{prefix}_zp")]


def _q(x: str, y: str, p: str) -> onnx.NodeProto:
    return helper.make_node("QuantizeLinear", [x, f"{p}_s", f"{p}_zp"], [y], name=f"q_{y}")


def _dq(x: str, y: str, p: str) -> onnx.NodeProto:
    return helper.make_node("DequantizeLinear", [x, f"{p}_s", f"{p}_zp"], [y], name=f"dq_{x}")


def add_qdq() -> Case:
    """x -> Q -> a_q; Add(a_q, a_q) -> c_q -> DQ -> y (the issue's model)."""
    m = _model([_q("x", "a_q", "qa"), helper.make_node("Add", ["a_q", "a_q"], ["c_q"], name="add"),
                _dq("c_q", "y", "qc")], [_vi("x", TensorProto.FLOAT, [4])], [_vi("y", TensorProto.FLOAT, [4])],
               _params("qa", QX) + _params("qc", QC))
    set_qtypes(m, {"a_q": QX, "c_q": QC})
    a = quantize(X, QX)
    return Case(m, {"x": X}, [real(quantize(2 * real(a, QX), QC), QC).astype(np.float32)])


def mul_relu_io() -> Case:
    """Quantized graph inputs and output, no Q/DQ: r = Relu(Mul(a, b))."""
    qa, qb, qm = QType("int8", 0.25, 4), QType("int8", 0.5, -6), QType("int8", 4.0, 0)
    m = _model([helper.make_node("Mul", ["a", "b"], ["m"], name="mul"), helper.make_node("Relu", ["m"], ["r"])],
               [_vi("a", TensorProto.INT8, [4]), _vi("b", TensorProto.INT8, [4])], [_vi("r", TensorProto.INT8, [4])])
    set_qtypes(m, {"a": qa, "b": qb, "m": qm, "r": qm})
    a, b = np.array([100, -60, 20, 127], np.int8), np.array([10, 30, -100, 50], np.int8)
    mq = quantize(real(a, qa) * real(b, qb), qm)
    return Case(m, {"a": a, "b": b}, [quantize(np.maximum(real(mq, qm), 0), qm)])


def maxpool_concat() -> Case:
    """uint8 input; MaxPool requantizes; Concat with a quantized initializer of another scale; quantized output."""
    qp, qo, qk = QType("uint8", 0.125, 128), QType("uint8", 0.25, 100), QType("uint8", 0.5, 0)
    k = np.array([[[[10, 60], [200, 255]]]], np.uint8)
    m = _model([helper.make_node("MaxPool", ["p"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
                helper.make_node("Concat", ["mp", "k"], ["cat"], axis=1)],
               [_vi("p", TensorProto.UINT8, [1, 1, 4, 4])], [_vi("cat", TensorProto.UINT8, [1, 2, 2, 2])],
               [numpy_helper.from_array(k, "k")])
    set_qtypes(m, {"p": qp, "mp": qo, "k": qk, "cat": qo})
    p = (np.arange(16, dtype=np.int64).reshape(1, 1, 4, 4) * 17 % 256).astype(np.uint8)
    pooled = real(p, qp).reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5))
    mp = quantize(pooled, qo)
    return Case(m, {"p": p}, [np.concatenate([mp, quantize(real(k, qk), qo)], axis=1)])


def gather_table() -> Case:
    """Gather on a quantized initializer table, output requantized, DQ at the edge."""
    qt, qg = QType("int8", 0.25, 3), QType("int8", 0.5, -2)
    table = np.array([[100, -100], [3, 4], [127, -128], [50, 60], [-7, 9]], np.int8)
    m = _model([helper.make_node("Gather", ["table", "idx"], ["g"], axis=0), _dq("g", "y", "qg")],
               [_vi("idx", TensorProto.INT64, [3])], [_vi("y", TensorProto.FLOAT, [3, 2])],
               [numpy_helper.from_array(table, "table")] + _params("qg", qg))
    set_qtypes(m, {"table": qt, "g": qg})
    idx = np.array([4, 0, 2], np.int64)
    return Case(m, {"idx": idx}, [real(quantize(real(table[idx], qt), qg), qg).astype(np.float32)])


def table_cast() -> Case:
    """A quantized initializer that never meets a boundary op or a quantized graph input: y = Cast<float>(Gather)."""
    qt = QType("int8", 0.25, 3)
    table = np.array([[100, -100], [3, 4], [127, -128]], np.int8)
    m = _model([helper.make_node("Gather", ["table", "idx"], ["g"], axis=0),
                helper.make_node("Cast", ["g"], ["y"], to=TensorProto.FLOAT)],
               [_vi("idx", TensorProto.INT64, [2])], [_vi("y", TensorProto.FLOAT, [2, 2])],
               [numpy_helper.from_array(table, "table")])
    set_qtypes(m, {"table": qt, "g": qt})
    idx = np.array([2, 0], np.int64)
    return Case(m, {"idx": idx}, [real(table[idx], qt).astype(np.float32)])


def q_no_zero_point() -> Case:
    """A boundary QuantizeLinear without a zero-point input (stock inference says UINT8), then Cast to float:
    the quantized value reaches a float output without passing a DequantizeLinear."""
    qa = QType("uint8", 0.5, 0)
    m = _model([helper.make_node("QuantizeLinear", ["x", "qa_s"], ["a_q"]),
                helper.make_node("Cast", ["a_q"], ["y"], to=TensorProto.FLOAT)],
               [_vi("x", TensorProto.FLOAT, [4])], [_vi("y", TensorProto.FLOAT, [4])], _params("qa", qa)[:1])
    set_qtypes(m, {"a_q": qa})
    return Case(m, {"x": X}, [real(quantize(X, qa), qa).astype(np.float32)])


def add_const() -> Case:
    """x -> Q -> a_q; Add(a_q, w) with w a quantized initializer -> c_q -> DQ -> y."""
    w = np.array([-100, 127, 60, 0], np.int8)
    m = _model([_q("x", "a_q", "qa"), helper.make_node("Add", ["a_q", "w"], ["c_q"]), _dq("c_q", "y", "qc")],
               [_vi("x", TensorProto.FLOAT, [4])], [_vi("y", TensorProto.FLOAT, [4])],
               [numpy_helper.from_array(w, "w")] + _params("qa", QX) + _params("qc", QC))
    set_qtypes(m, {"a_q": QX, "w": QW, "c_q": QC})
    a = quantize(X, QX)
    return Case(m, {"x": X}, [real(quantize(real(a, QX) + real(w, QW), QC), QC).astype(np.float32)])


def if_subgraph() -> Case:
    """a_q crosses into both branches of an If; each branch computes a quantized value; DQ after the If."""
    then_g = helper.make_graph([helper.make_node("Add", ["a_q", "a_q"], ["t"])], "then", [],
                               [_vi("t", TensorProto.INT8, [4])])
    else_g = helper.make_graph([helper.make_node("Relu", ["a_q"], ["e"])], "else", [],
                               [_vi("e", TensorProto.INT8, [4])])
    m = _model([_q("x", "a_q", "qa"), helper.make_node("If", ["cond"], ["c_q"], then_branch=then_g,
                                                       else_branch=else_g), _dq("c_q", "y", "qc")],
               [_vi("x", TensorProto.FLOAT, [4]), _vi("cond", TensorProto.BOOL, [])],
               [_vi("y", TensorProto.FLOAT, [4])], _params("qa", QX) + _params("qc", QC))
    set_qtypes(m, {"a_q": QX, "t": QC, "e": QC, "c_q": QC})
    a = quantize(X, QX)
    return Case(m, {"x": X, "cond": np.array(True)}, [real(quantize(2 * real(a, QX), QC), QC).astype(np.float32)])


def local_function(typed_body: bool = False) -> Case:
    """c_q = local.QAdd(a_q, a_q), a model-local function whose body is one Add. onnx-qtypes reads a call like
    any operator (dequantize, run the body in float, quantize); ``typed_body`` also declares the body's tensors
    quantized in the function's value_info: the call then passes storage into the body, which computes on it."""
    fn = helper.make_function("local", "QAdd", ["a", "b"], ["c"], [helper.make_node("Add", ["a", "b"], ["c"])],
                              [helper.make_opsetid("", OPSET)])
    m = _model([_q("x", "a_q", "qa"), helper.make_node("QAdd", ["a_q", "a_q"], ["c_q"], domain="local"),
                _dq("c_q", "y", "qc")], [_vi("x", TensorProto.FLOAT, [4])], [_vi("y", TensorProto.FLOAT, [4])],
               _params("qa", QX) + _params("qc", QC), functions=[fn])
    set_qtypes(m, {"a_q": QX, "c_q": QC})
    if typed_body:
        set_qtypes(m, {"a": QX, "b": QX, "c": QC}, function="local:QAdd")
    a = quantize(X, QX)
    return Case(m, {"x": X}, [real(quantize(2 * real(a, QX), QC), QC).astype(np.float32)])


MODELS: dict[str, Callable[[], Case]] = {
    "add_qdq": add_qdq,
    "mul_relu_io": mul_relu_io,
    "maxpool_concat": maxpool_concat,
    "gather_table": gather_table,
    "table_cast": table_cast,
    "add_const": add_const,
    "q_no_zero_point": q_no_zero_point,
    "if_subgraph": if_subgraph,
    "local_function": local_function,
    "function_typed_body": lambda: local_function(typed_body=True),
}

# ------------------------------------------------------------------------------------------------ encodings


def _quantized_views(model: onnx.ModelProto) -> Iterator[tuple[onnx.TypeProto.Tensor, object]]:
    for decl in iter_declarations(model):
        if decl.value_info.type.WhichOneof("value") == "tensor_type":
            view = read_view(decl.value_info.type.tensor_type)
            if view.HasField("quantization"):
                yield decl.value_info.type.tensor_type, view


def _graph_qnames(graph: onnx.GraphProto) -> dict[str, int]:
    """name -> storage data type of the tensors declared quantized in ``graph`` (not its subgraphs)."""
    out = {}
    for vi in [*graph.input, *graph.output, *graph.value_info]:
        if vi.type.WhichOneof("value") == "tensor_type":
            view = read_view(vi.type.tensor_type)
            if view.HasField("quantization"):
                out[vi.name] = view.quantization.storage_type
    return out


def _boundary_nodes(model: onnx.ModelProto) -> Iterator[tuple[onnx.GraphProto, onnx.NodeProto]]:
    for _, graph in iter_graphs(model):
        for node in graph.node:
            if node.domain in ("", "ai.onnx") and node.op_type in ("QuantizeLinear", "DequantizeLinear"):
                yield graph, node


def enc_today(m: onnx.ModelProto) -> onnx.ModelProto:
    """a: the version-1 form (declarations elem_type UNDEFINED, constants with plain data types), which every
    encoding starts from (the models are built with set_qtype, then put in this form)."""
    return m


def enc_sentinel(m: onnx.ModelProto) -> onnx.ModelProto:
    """b: declarations carry elem_type SENTINEL + storage type instead of UNDEFINED."""
    for tensor_type, view in _quantized_views(m):
        view.elem_type = SENTINEL + view.quantization.storage_type
        write_view(tensor_type, view)
    return m


def _to_sentinel(init: TensorProto, storage: int) -> None:
    data = numpy_helper.to_array(init).tobytes()  # int8/uint8 here; 4-/2-bit storage would be packed the same way
    dims = list(init.dims)
    name = init.name
    init.Clear()
    init.name, init.data_type, init.raw_data = name, SENTINEL + storage, data
    init.dims.extend(dims)


def enc_shipped(m: onnx.ModelProto) -> onnx.ModelProto:
    """c as onnx_qtypes writes it (proto.encoding.to_wire_form, what set_qtype and save produce)."""
    return to_wire_form(m)


def enc_sentinel_data(m: onnx.ModelProto) -> onnx.ModelProto:
    """c: b + quantized initializers and boundary Q/DQ zero points stored with the sentinel data_type; a boundary
    QuantizeLinear without a zero point gets one (the type's, sentinel-typed) and loses output_dtype, so that
    re-inference from the Q node alone cannot produce a plain integer type."""
    enc_sentinel(m)
    for _, graph in iter_graphs(m):
        qnames = _graph_qnames(graph)
        for node in graph.node:
            if node.op_type == "QuantizeLinear" and len(node.input) < 3 and node.output[0] in qnames:
                qt = quantized_tensors(m)[node.output[0]]
                zp = numpy_helper.from_array(np.array(qt.zero_point[0], qt.storage_type.np_dtype),
                                             node.output[0] + "_zp")
                graph.initializer.append(zp)
                node.input.append(zp.name)
                keep = [a for a in node.attribute if a.name != "output_dtype"]
                del node.attribute[:]
                node.attribute.extend(keep)
        zps = {node.input[2] for node in graph.node if node.op_type in ("QuantizeLinear", "DequantizeLinear")
               and len(node.input) > 2}
        for init in graph.initializer:
            if init.name in qnames:
                _to_sentinel(init, qnames[init.name])
            elif init.name in zps and init.data_type < SENTINEL:
                _to_sentinel(init, init.data_type)
    return m


def enc_ir_gate(m: onnx.ModelProto) -> onnx.ModelProto:
    """d1: a + an ir_version above every version onnx and onnxruntime know."""
    m.ir_version = onnx.IR_VERSION + 1
    return m


def enc_domain_import(m: onnx.ModelProto) -> onnx.ModelProto:
    """d2: a + a required opset import of our domain."""
    m.opset_import.add(domain=DOMAIN, version=1)
    return m


def enc_marker_node(m: onnx.ModelProto) -> onnx.ModelProto:
    """d3: a + a node of our domain (no inputs, an unused output) that no runtime implements."""
    enc_domain_import(m)
    m.graph.node.insert(0, helper.make_node("QuantizedTypes", [], ["qtypes_marker"], domain=DOMAIN,
                                            name="qtypes_marker"))
    return m


def enc_domain_boundary(m: onnx.ModelProto) -> onnx.ModelProto:
    """e: a + boundary QuantizeLinear / DequantizeLinear replaced by ai.onnx.qtypes.Quantize / Dequantize."""
    for _, node in list(_boundary_nodes(m)):
        node.op_type = "Quantize" if node.op_type == "QuantizeLinear" else "Dequantize"
        node.domain = DOMAIN
    if not any(o.domain == DOMAIN for o in m.opset_import):
        m.opset_import.add(domain=DOMAIN, version=1)
    return m


def enc_c_e(m: onnx.ModelProto) -> onnx.ModelProto:
    return enc_domain_boundary(enc_sentinel_data(m))


def enc_b_e(m: onnx.ModelProto) -> onnx.ModelProto:
    return enc_domain_boundary(enc_sentinel(m))


@dataclass(frozen=True)
class Encoding:
    label: str
    encode: Callable[[onnx.ModelProto], onnx.ModelProto]


ENCODINGS: dict[str, Encoding] = {
    "a": Encoding("today: elem_type UNDEFINED + field 1000", enc_today),
    "b": Encoding("elem_type sentinel 1000+storage on declarations", enc_sentinel),
    "c": Encoding("b + sentinel data_type on quantized initializers and boundary zero points (as onnx_qtypes writes "
                  "it: proto.encoding.to_wire_form)", enc_shipped),
    "d1": Encoding("a + ir_version above the known ones", enc_ir_gate),
    "d2": Encoding("a + opset_import ai.onnx.qtypes", enc_domain_import),
    "d3": Encoding("a + marker node in ai.onnx.qtypes", enc_marker_node),
    "e": Encoding("a + boundary ops ai.onnx.qtypes.Quantize/Dequantize", enc_domain_boundary),
    "b+e": Encoding("b + e", enc_b_e),
    "c+e": Encoding("c + e", enc_c_e),
}
RECOMMENDED = "c"


def decode(m: onnx.ModelProto) -> onnx.ModelProto:
    """Any candidate encoding back to today's: the reader onnx-qtypes would use for every candidate."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    for tensor_type, view in _quantized_views(m):
        if view.elem_type >= SENTINEL:
            view.elem_type = TensorProto.UNDEFINED
            write_view(tensor_type, view)
    for _, graph in iter_graphs(m):
        for init in graph.initializer:
            if init.data_type >= SENTINEL:
                init.data_type -= SENTINEL
        keep = [n for n in graph.node if not (n.domain == DOMAIN and n.op_type == "QuantizedTypes")]
        if len(keep) != len(graph.node):
            del graph.node[:]
            graph.node.extend(keep)
        for node in graph.node:
            if node.domain == DOMAIN and node.op_type in ("Quantize", "Dequantize"):
                node.op_type, node.domain = node.op_type + "Linear", ""
    for o in [o for o in m.opset_import if o.domain == DOMAIN]:
        m.opset_import.remove(o)
    m.ir_version = min(m.ir_version, onnx.IR_VERSION)
    return m


def read_types(m: onnx.ModelProto) -> dict[str, dict[str, QType]]:
    """scope ("" = main graph and subgraphs, "domain:name" = a function) -> quantized tensor -> type."""
    m = decode(m)
    out = {"": quantized_tensors(m)}
    for f in m.functions:
        out[f"{f.domain}:{f.name}"] = quantized_tensors(m, function=f"{f.domain}:{f.name}")
    return {k: v for k, v in out.items() if v}


def types_intact(before: dict, after: dict, prefix: str = "") -> bool:
    """Every quantized type of ``before`` is declared with the same type in ``after`` (names may gain a prefix;
    a function that a tool inlined away no longer has a scope and is not counted)."""
    def find(mapping: dict, key: str):
        return mapping.get(key, mapping.get(prefix + key) if prefix else None)

    for scope, types in before.items():
        got = after.get("") if scope == "" else find_scope(after, scope, prefix)
        if got is None:
            if scope == "":
                return False
            continue
        if any(find(got, name) != qt for name, qt in types.items()):
            return False
    return True


def find_scope(after: dict, scope: str, prefix: str):
    domain, name = scope.split(":", 1)
    return after.get(scope, after.get(f"{domain}:{prefix}{name}") if prefix else None)


# ----------------------------------------------------------------------------------------------------- tools


def _installed(module: str) -> bool:
    try:
        __import__(module)
        return True
    except Exception:  # noqa: BLE001 - a broken install counts as not installed
        return False


def t_save_load(m, tmp):
    onnx.save(m, tmp / "in.onnx")
    return onnx.load(tmp / "in.onnx")


def t_infer(**kw):
    return lambda m, tmp: onnx.shape_inference.infer_shapes(m, **kw)


def t_infer_path(m, tmp):
    onnx.save(m, tmp / "in.onnx")
    onnx.shape_inference.infer_shapes_path(str(tmp / "in.onnx"), str(tmp / "out.onnx"))
    return onnx.load(tmp / "out.onnx")


def t_convert(version):
    return lambda m, tmp: onnx.version_converter.convert_version(m, version)


def t_extract(m, tmp):
    onnx.save(m, tmp / "in.onnx")
    onnx.utils.extract_model(str(tmp / "in.onnx"), str(tmp / "out.onnx"), [i.name for i in m.graph.input],
                             [o.name for o in m.graph.output])
    return onnx.load(tmp / "out.onnx")


def t_strip_value_info(m, tmp):
    del m.graph.value_info[:]
    return m


def t_inline(m, tmp):
    return onnx.inliner.inline_local_functions(m)


PREFIX = "p_"


def t_add_prefix(m, tmp):
    return onnx.compose.add_prefix(m, PREFIX)


def t_merge(m, tmp):
    out = m.graph.output[0]
    inp = onnx.ValueInfoProto()
    inp.CopyFrom(out)
    inp.name = "in"
    res = onnx.ValueInfoProto()
    res.CopyFrom(out)
    res.name = "out"
    g = helper.make_graph([helper.make_node("Identity", ["in"], ["out"])], "trivial", [inp], [res])
    m2 = helper.make_model(g, opset_imports=list(m.opset_import), ir_version=m.ir_version)
    return onnx.compose.merge_models(m, m2, io_map=[(out.name, "in")], prefix2="t_")


def t_onnx_ir(m, tmp):
    import onnx_ir

    return onnx_ir.to_proto(onnx_ir.from_proto(m))


def t_onnx_ir_file(m, tmp):
    import onnx_ir

    onnx.save(m, tmp / "in.onnx")
    onnx_ir.save(onnx_ir.load(tmp / "in.onnx"), tmp / "out.onnx")
    return onnx.load(tmp / "out.onnx")


def t_onnxoptimizer(m, tmp):
    import onnxoptimizer

    return onnxoptimizer.optimize(m)


def t_onnxsim(m, tmp):
    import onnxsim

    simplified, _ = onnxsim.simplify(m)
    return simplified


def t_onnxslim(m, tmp):
    import onnxslim

    return onnxslim.slim(m)


def t_ort_optimized(m, tmp):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.optimized_model_filepath = str(tmp / "opt.onnx")
    ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return onnx.load(tmp / "opt.onnx")


def t_print_parse(m, tmp):
    return onnx.parser.parse_model(onnx.printer.to_text(m))


@dataclass(frozen=True)
class Tool:
    run: Callable
    needs: str = ""  # module that must import
    quick: bool = True  # part of --quick (onnx's own tools + onnxruntime)


TOOLS: dict[str, Tool] = {
    "none": Tool(lambda m, tmp: m),
    "save_load": Tool(t_save_load),
    "infer_shapes": Tool(t_infer()),
    "infer_strict": Tool(t_infer(strict_mode=True)),
    "infer_data_prop": Tool(t_infer(data_prop=True)),
    "infer_shapes_path": Tool(t_infer_path),
    "convert_22": Tool(t_convert(22)),
    "convert_21": Tool(t_convert(21)),
    "extract_model": Tool(t_extract),
    "strip_value_info": Tool(t_strip_value_info),
    "inline_functions": Tool(t_inline),
    "compose_add_prefix": Tool(t_add_prefix),
    "compose_merge": Tool(t_merge),
    "print_parse": Tool(t_print_parse),
    "ort_optimized": Tool(t_ort_optimized),
    "onnx_ir": Tool(t_onnx_ir, "onnx_ir", quick=False),
    "onnx_ir_file": Tool(t_onnx_ir_file, "onnx_ir", quick=False),
    "onnxoptimizer": Tool(t_onnxoptimizer, "onnxoptimizer", quick=False),
    "onnxsim": Tool(t_onnxsim, "onnxsim", quick=False),
    "onnxslim": Tool(t_onnxslim, "onnxslim", quick=False),
}

# ---------------------------------------------------------------------------------------- one pair, verdict


def _short(exc: BaseException) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text[:160]


def _ort_try(model: onnx.ModelProto, case: Case, disable_all: bool, prefix: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if disable_all:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001
        return None, "load: " + _short(exc)
    feeds = {}
    for i in sess.get_inputs():
        name = i.name[len(prefix):] if prefix and i.name.startswith(prefix) else i.name
        if name not in case.feeds:
            return None, f"run: no feed for input {i.name!r}"
        feeds[i.name] = case.feeds[name]
    try:
        return sess.run(None, feeds), ""
    except Exception as exc:  # noqa: BLE001
        return None, "run: " + _short(exc)


def _same(outputs, expected) -> bool:
    if len(outputs) < len(expected):
        return False
    return all(np.asarray(o).shape == e.shape and np.allclose(np.asarray(o, np.float64), e.astype(np.float64))
               for o, e in zip(outputs, expected))


def run_pair(enc: str, model_name: str, tool_name: str, progress: Callable[[str], None] = lambda s: None) -> dict:
    case = MODELS[model_name]()
    before = read_types(case.model)
    encoded = ENCODINGS[enc].encode(to_plain_form(onnx.ModelProto.FromString(case.model.SerializeToString())))
    rec = {"encoding": enc, "model": model_name, "tool": tool_name}
    progress("tool")
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(), \
            contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            out = TOOLS[tool_name].run(encoded, Path(tmp))
            if not isinstance(out, onnx.ModelProto):
                raise TypeError(f"tool returned {type(out).__name__}")
        except Exception as exc:  # noqa: BLE001
            return {**rec, "verdict": "tool refused", "detail": _short(exc)}
    prefix = PREFIX if tool_name == "compose_add_prefix" else ""
    try:
        intact = types_intact(before, read_types(out), prefix)
    except Exception as exc:  # noqa: BLE001 - a declaration the reader cannot read is a lost one
        intact, rec["read_error"] = False, _short(exc)
    rec["types_intact"] = intact
    progress("ort")
    runs = {}
    for mode, disable in (("default", False), ("disable_all", True)):
        outputs, why = _ort_try(out, case, disable, prefix)
        runs[mode] = why if outputs is None else ("same as reference" if _same(outputs, case.expected)
                                                  else f"differs: {np.asarray(outputs[0]).ravel()[:6].tolist()}")
        if outputs is not None:
            rec["answer"] = np.asarray(outputs[0]).tolist()
    rec["ort"] = runs
    ran = [k for k in runs if runs[k] in ("same as reference",) or runs[k].startswith("differs")]
    if ran:
        rec["verdict"] = "FAILS OPEN"
        rec["detail"] = "; ".join(f"{k}: {runs[k]}" for k in ran) + (" (types intact)" if intact else " (types lost)")
    else:
        rec["verdict"] = "kept intact" if intact else "closed, lost"
        rec["detail"] = runs["default"]
    return rec


# ------------------------------------------------------------------------------------------- worker / driver


def worker(tool: str, pairs: list[tuple[str, str]], start: int) -> None:
    for i, (enc, model) in enumerate(pairs[start:], start):
        emit = lambda stage, i=i: print(json.dumps({"start": i, "stage": stage}), flush=True)  # noqa: E731
        rec = run_pair(enc, model, tool, emit)
        print(json.dumps({"done": i, "record": rec}), flush=True)


def _drive_tool(tool: str, pairs: list[tuple[str, str]], stall: float) -> list[dict]:
    """Run one tool over all pairs in worker processes; a crash or a stall is that pair's verdict."""
    records: list[dict] = []
    script = str(Path(__file__).resolve())
    spec = json.dumps(pairs)
    while len(records) < len(pairs):
        start = len(records)
        proc = subprocess.Popen([sys.executable, script, "--worker", tool, "--start", str(start)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=_same_source())
        proc.stdin.write(spec)
        proc.stdin.close()
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True).start()
        stage = "tool"
        while True:
            try:
                line = lines.get(timeout=stall)
            except queue.Empty:
                proc.kill()
                line = "STALL"
            if line is None or line == "STALL":
                proc.wait()
                if len(records) < len(pairs):
                    enc, model = pairs[len(records)]
                    how = "no progress for %ds" % stall if line == "STALL" else f"process died (exit {proc.returncode})"
                    rec = {"encoding": enc, "model": model, "tool": tool}
                    if stage == "tool":
                        rec.update(verdict="tool refused", detail=f"{how} inside the tool")
                    else:
                        rec.update(verdict="closed, lost", detail=f"{how} inside onnxruntime", types_intact=None)
                    records.append(rec)
                break
            msg = json.loads(line)
            if "done" in msg:
                records.append(msg["record"])
            else:
                stage = msg["stage"]
    return records


def _plain_add(elem: int = TensorProto.INT8, init_type: int | None = None) -> onnx.ModelProto:
    """c = Add(a, w) on plain int8 (no quantized type anywhere), w an initializer."""
    w = numpy_helper.from_array(np.array([100, 100], np.int8), "w")
    if init_type is not None:
        _to_sentinel(w, init_type - SENTINEL)
    return _model([helper.make_node("Add", ["a", "w"], ["c"])], [_vi("a", elem, [2])], [_vi("c", elem, [2])], [w])


def probes() -> dict[str, str]:
    """What onnxruntime and onnx.checker say to each marker alone, on a model with no other marker."""
    import onnxruntime as ort

    import_only = _plain_add()
    import_only.opset_import.add(domain=DOMAIN, version=1)
    gated = _plain_add()
    gated.ir_version = onnx.IR_VERSION + 1
    cases = {
        "plain int8 Add (control)": _plain_add(),
        f"+ opset_import {DOMAIN} (no node uses it)": import_only,
        f"+ ir_version {onnx.IR_VERSION + 1}": gated,
        "+ elem_type 1003 on input and output": _plain_add(SENTINEL + TensorProto.INT8),
        "+ initializer data_type 1003 (raw_data)": _plain_add(init_type=SENTINEL + TensorProto.INT8),
    }
    for enc in ENCODINGS:
        cases[f"onnx.checker only: add_qdq in encoding {enc}"] = ENCODINGS[enc].encode(to_plain_form(add_qdq().model))
    out = {}
    for label, m in cases.items():
        try:
            onnx.checker.check_model(m, full_check=True)
            chk = "accepts"
        except Exception as exc:  # noqa: BLE001
            chk = "refuses (" + _short(exc)[:70] + ")"
        if label.startswith("onnx.checker only"):
            out[label] = f"onnx.checker (full_check) {chk}"
            continue
        try:
            so = ort.SessionOptions()
            so.log_severity_level = 3
            sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
            rt = "runs, c = " + str(sess.run(None, {"a": np.array([100, 100], np.int8)})[0].tolist())
        except Exception as exc:  # noqa: BLE001
            rt = "refuses (" + _short(exc)[-90:] + ")"
        out[label] = f"onnx.checker {chk}; onnxruntime {rt}"
    return out


def _same_source() -> dict[str, str]:
    """The environment for a worker: onnx_qtypes imported from the checkout this script belongs to, as the
    parent imported it (not whatever another checkout installed)."""
    import os

    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}


def _probes_in_subprocess() -> dict[str, str]:
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--probe"], capture_output=True, env=_same_source(),
                          text=True, timeout=120)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"probes": f"process died (exit {proc.returncode})"}


def reference_check() -> dict[str, str]:
    """The hand-computed answers against onnx_qtypes' ReferenceEvaluator on today's encoding."""
    from onnx_qtypes.reference_ops import ReferenceEvaluator

    out = {}
    for name, build in MODELS.items():
        case = build()
        try:
            got = ReferenceEvaluator(case.model).run(None, case.feeds)
            out[name] = "agrees" if _same(got, case.expected) else f"DIFFERS: {np.asarray(got[0]).tolist()}"
        except Exception as exc:  # noqa: BLE001
            out[name] = "cannot run: " + _short(exc)
    return out


def versions() -> dict[str, str]:
    import onnxruntime

    out = {"python": sys.version.split()[0], "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}
    for mod in ("onnx_ir", "onnxoptimizer", "onnxsim", "onnxslim"):
        try:
            out[mod] = str(getattr(__import__(mod), "__version__", "?"))
        except Exception as exc:  # noqa: BLE001
            out[mod] = "not importable: " + _short(exc)
    return out


def run_matrix(encodings=None, models=None, tools=None, quick=False, jobs=None, stall=60.0) -> dict:
    encodings = list(encodings or ENCODINGS)
    models = list(models or MODELS)
    chosen = list(tools or [t for t in TOOLS if not quick or TOOLS[t].quick])
    skipped = {t: f"{TOOLS[t].needs} not importable" for t in chosen
               if TOOLS[t].needs and not _installed(TOOLS[t].needs)}
    run_tools = [t for t in chosen if t not in skipped]
    pairs = [(e, m) for e in encodings for m in models]
    t0 = time.time()
    with ThreadPoolExecutor(jobs or max(2, min(len(run_tools), os.cpu_count() or 2))) as pool:
        results = dict(zip(run_tools, pool.map(lambda t: _drive_tool(t, pairs, stall), run_tools)))
    records = [r for t in run_tools for r in results[t]]
    return {"versions": versions(), "encodings": encodings, "models": models, "tools": run_tools,
            "skipped_tools": skipped, "probes": _probes_in_subprocess(), "records": records,
            "seconds": round(time.time() - t0, 1)}


def fail_open(result: dict, encoding: str) -> list[dict]:
    return [r for r in result["records"] if r["encoding"] == encoding and r["verdict"] == "FAILS OPEN"]


def recommend(result: dict) -> str | None:
    """Zero fail-open pairs, unmodified operators between boundaries; then most pairs kept intact; then order."""
    best = None
    for enc in result["encodings"]:
        if fail_open(result, enc):
            continue
        intact = sum(r["verdict"] == "kept intact" for r in result["records"] if r["encoding"] == enc)
        if best is None or intact > best[1]:
            best = (enc, intact)
    return best and best[0]


# ------------------------------------------------------------------------------------------------ the report


def markdown(result: dict, refs: dict[str, str]) -> str:
    recs, encs, tools, models = result["records"], result["encodings"], result["tools"], result["models"]
    cell = {(r["encoding"], r["tool"]): [] for r in recs}
    for r in recs:
        cell[(r["encoding"], r["tool"])].append(r)
    short = {"FAILS OPEN": "O", "kept intact": "i", "closed, lost": "l", "tool refused": "r"}
    v = result["versions"]
    lines = ["# Encodings of quantized element types vs. stock tools", "",
             "Generated by `python proposal/experiments/encodings_vs_tools.py` (do not edit by hand).", "",
             "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".", "",
             f"Models ({len(models)}): " + ", ".join(f"`{m}`" for m in models) +
             ". Reference answers computed by hand from the semantics; against onnx_qtypes' ReferenceEvaluator: " +
             ", ".join(f"{m} {refs.get(m, '?')}" for m in models) + ".", ""]
    if result["skipped_tools"]:
        lines += ["Skipped (not installed): " + ", ".join(f"{t} ({why})" for t, why in result["skipped_tools"].items())
                  + ".", ""]
    lines += ["## Fail-open pairs per (encoding, tool)", "",
              f"Each cell counts the models (of {len(models)}) for which onnxruntime loads and runs the tool's output "
              "(**fails open**); then the other verdicts as letters: i = kept intact (onnxruntime refuses, types read "
              "back), l = closed but types lost, r = tool refused, O = fails open.", "",
              "| encoding | " + " | ".join(tools) + " | **total fail-open** |",
              "|---|" + "---|" * (len(tools) + 1)]
    for e in encs:
        row, total = [], 0
        for t in tools:
            rs = cell.get((e, t), [])
            n = sum(r["verdict"] == "FAILS OPEN" for r in rs)
            total += n
            letters = "".join(sorted(short[r["verdict"]] for r in rs))
            row.append(f"**{n}** {letters}" if n else f"0 {letters}")
        lines.append(f"| {e}: {ENCODINGS[e].label} | " + " | ".join(row) + f" | **{total}** |")
    lines += ["", "## Fail-open pairs", "", "| encoding | model | tool | detail |", "|---|---|---|---|"]
    for r in recs:
        if r["verdict"] == "FAILS OPEN":
            lines.append(f"| {r['encoding']} | {r['model']} | {r['tool']} | {r['detail']} |")
    lines += ["", "## What each tool does to the recommended encoding and to today's", "",
              "| tool | model | a (today) | " + f"{RECOMMENDED} |", "|---|---|---|---|"]
    by = {(r["encoding"], r["model"], r["tool"]): r for r in recs}
    for t in tools:
        for m in models:
            ra, rc = by.get(("a", m, t)), by.get((RECOMMENDED, m, t))
            if ra and rc:
                fmt = lambda r: f"{r['verdict']}: {r['detail'][:90]}".replace("|", "/")  # noqa: E731
                lines.append(f"| {t} | {m} | {fmt(ra)} | {fmt(rc)} |")
    lines += ["", "## Probes: each marker alone", "", "| model | verdicts |", "|---|---|"]
    lines += [f"| {k} | {v.replace('|', '/')} |" for k, v in result.get("probes", {}).items()]
    rec = recommend(result)
    count = {e: len(fail_open(result, e)) for e in encs}
    lines += ["", "## Recommendation", "",
              "Fail-open pairs per encoding: " + ", ".join(f"{e} {n}" for e, n in count.items()) + ".",
              "Encodings with zero fail-open pairs here: "
              + (", ".join(e for e in encs if not count[e]) or "none") + ".",
              f"Measured choice (zero fail-open, then most pairs kept intact): **{rec}**"
              + (f" ({ENCODINGS[rec].label})." if rec else "."), ""]
    if rec == RECOMMENDED and full_run(result):
        lines += [RATIONALE.strip(), ""]
    lines += [f"Per-pair records: `encodings_vs_tools.json`. Run time {result['seconds']} s.", ""]
    return "\n".join(lines)


def full_run(result: dict) -> bool:
    return set(result["encodings"]) == set(ENCODINGS) and set(result["models"]) == set(MODELS) and \
        set(result["tools"]) | set(result["skipped_tools"]) == set(TOOLS)


# Written against the measured matrix above (onnx 1.23.2, onnxruntime 1.32.0); printed only on a full run whose
# measured choice is still RECOMMENDED, so a run that contradicts it does not print it.
RATIONALE = """
**Recommend c**: each quantized declaration has elem_type = 1000 + storage data type (1003 for int8, 1002 for
uint8) and keeps field 1000; each quantized initializer, and the zero-point initializer of every boundary
QuantizeLinear / DequantizeLinear, has data_type = 1000 + storage type with the storage integers in raw_data
(a boundary QuantizeLinear without a zero point gets one and loses output_dtype). Operators between the
boundaries and the boundary ops themselves stay the unmodified ONNX operators.

Why c and not the others (see the matrix):

- a (today) and d2 fail open after shape inference, the version converter, extract_model, clearing value_info
  and the optimizers: inference writes INT8 over UNDEFINED, or the declaration disappears and onnxruntime
  re-infers INT8 from the Q node or a plain int8 initializer. The probe shows onnxruntime runs a model whose
  opset_import names a domain no node uses, so d2 is a.
- b closes everything except clearing value_info: the intermediate declarations go and onnxruntime re-infers
  plain int8 from the still-plain initializers and Q zero points. c puts the marker on those roots too, so
  every path from a graph input, an initializer or a Q node to an operator meets a type onnxruntime cannot load.
- d1 (ir_version gate) has zero fail-open pairs today but closes the whole model, float parts included, to every
  stock tool (onnx.checker, extract_model, merge_models, onnxsim refuse), loses the declarations in the converter
  and the optimizers, and is a moving target: once onnx and onnxruntime know IR 15 it is a again.
- d3 (marker node) is dead code: extract_model and the optimizers delete it, then a's holes reopen.
- e (our boundary ops) leaves tensors that never pass a boundary op on today's marker: table_cast (a quantized
  initializer read by Gather, then Cast to float) fails open after the converter, clearing value_info and the
  optimizers. c+e measures the same as c: e adds non-standard boundary ops and no measured protection.

What c costs, measured: onnx.checker (full_check) refuses c models ("Invalid tensor data type 1003"), as do
the version converter, onnxoptimizer, onnxsim, onnxslim and onnx-ir (tool refused, nothing written): those
tools must run on the lowered QDQ form. Clearing value_info, and the converter on a model without initializers,
close but lose intermediate declarations (closed, lost).

Spec and checker rules that c needs (none of which the matrix shows failing open today):

1. onnx.proto reserves TensorProto.DataType values 1000 + s for each storage type s (or names them, e.g.
   INT8_QUANTIZED); they appear only on quantized declarations and on the tensors below.
2. A declaration with a quantized data type MUST carry field 1000 with storage_type = value - 1000 (a checker
   error otherwise: the parameters were lost, e.g. by the version converter).
3. Every initializer, Constant value and boundary zero point holding quantized storage integers MUST use the
   quantized data type; a boundary QuantizeLinear MUST take its zero point as such a tensor and carry no
   output_dtype (stock inference would otherwise derive plain INT8 / UINT8 from it).
4. Every tensor computed from a quantized tensor by a non-boundary operator MUST be declared (a checker error
   otherwise), which turns "closed, lost" outputs of value_info-stripping tools into a diagnosed error instead
   of a silently different model.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="onnx's own tools and onnxruntime only")
    ap.add_argument("--encodings", help="comma-separated keys of ENCODINGS")
    ap.add_argument("--models", help="comma-separated keys of MODELS")
    ap.add_argument("--tools", help="comma-separated keys of TOOLS")
    ap.add_argument("--out", default=str(HERE / "encodings_vs_tools"), help="writes OUT.md and OUT.json")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.probe:
        print(json.dumps(probes()))
        return 0
    if args.worker:
        worker(args.worker, [tuple(p) for p in json.loads(sys.stdin.read())], args.start)
        return 0
    split = lambda s: s.split(",") if s else None  # noqa: E731
    result = run_matrix(split(args.encodings), split(args.models), split(args.tools), args.quick)
    text = markdown(result, reference_check())
    if not args.no_write:
        Path(args.out + ".md").write_text(text)
        Path(args.out + ".json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
