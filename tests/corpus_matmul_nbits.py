"""MatMulNBits test models: what onnxruntime's weight-only quantizer writes, and hand-built forms it does not.

``MatMulNBitsQuantizer`` (onnxruntime.quantization.matmul_nbits_quantizer) turns the constant weight of a
float MatMul into one ``com.microsoft.MatMulNBits`` node; NNCF writes the same op for 4-bit LLM weights.
This module quantizes small generated float MatMuls with it (K and N multiples and non-multiples of the
block size, 2 / 4 / 8 bits, symmetric and asymmetric, accuracy_level 4) and builds by hand what it never
writes: unpacked float zero points, g_idx, a bias, float16, 1-D scales, rank-3 activations, a model
without the com.microsoft import. Nothing is downloaded.

- ``nbits_models() -> dict[str, ModelProto]``: models the lift types (fresh copies);
- ``refused_models() -> dict[str, tuple[ModelProto, str]]``: models it must leave as they are, with a
  fragment of the reason its warning gives;
- ``nbits_feeds(model) -> dict[str, ndarray]``: a deterministic input ``A``;
- ``identity_feeds(model)``: ``A`` = the K x K identity, whose product is the dequantized weight itself
  (``free_rows(model)`` accepts it).
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import onnx
from corpus import _quiet  # quantizers log advice on every call
from onnx import TensorProto, helper, numpy_helper

IR_VERSION, OPSET = 10, 21
MS = "com.microsoft"


def float_matmul(k: int, n: int, seed: int, rows: tuple[int, ...] = (3,)) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    weight = numpy_helper.from_array((rng.standard_normal((k, n)) * 0.3).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["A", "w"], ["Y"], name="proj")], "mm",
                              [helper.make_tensor_value_info("A", TensorProto.FLOAT, [*rows, k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [*rows, n])], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def quantized(k: int, n: int, bits: int, block: int, symmetric: bool, accuracy_level: int | None = None,
              seed: int = 0) -> onnx.ModelProto:
    """``float_matmul(k, n)`` through onnxruntime's MatMulNBitsQuantizer (its default, QOperator form)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    with _quiet():
        quantizer = MatMulNBitsQuantizer(float_matmul(k, n, seed), bits=bits, block_size=block,
                                         is_symmetric=symmetric, accuracy_level=accuracy_level)
        quantizer.process()
    return quantizer.model.model


# --- hand-built: packing as the op's documentation states it (low bits first, N-major) ---------------------------
def _packed(codes: np.ndarray, bits: int) -> np.ndarray:
    """codes [..., m] (m a multiple of 8 / bits) -> bytes [..., m * bits / 8], the first code lowest."""
    per = 8 // bits
    grouped = codes.astype(np.uint16).reshape(*codes.shape[:-1], -1, per)
    return sum(grouped[..., j] << (bits * j) for j in range(per)).astype(np.uint8)


def hand_built(k: int = 48, n: int = 8, bits: int = 4, block: int = 16, *, zero_points: str = "packed",
               float_zero_offset: float = 0.0, g_idx: str | None = None, bias: bool = False,
               dtype: type = np.float32, flat_scales: bool = False, rows: tuple[int, ...] = (2,),
               import_domain: bool = True, seed: int = 7) -> onnx.ModelProto:
    """One MatMulNBits node with random codes; ``zero_points`` "packed", "float" (integers + offset) or "none"."""
    rng = np.random.default_rng(seed)
    blocks = -(-k // block)
    top = (1 << bits) - 1
    codes = rng.integers(0, top + 1, (n, blocks * block))
    scales = rng.uniform(0.01, 0.1, (n, blocks)).astype(dtype)
    zps = rng.integers(0, top + 1, (n, blocks))
    inits = [numpy_helper.from_array(_packed(codes, bits).reshape(n, blocks, block * bits // 8), "w_Q"),
             numpy_helper.from_array(scales.reshape(-1) if flat_scales else scales, "w_scales")]
    inputs = ["A", "w_Q", "w_scales"]
    if zero_points == "packed":
        padded = np.concatenate([zps, np.zeros((n, -blocks % (8 // bits)), zps.dtype)], axis=1)
        inits.append(numpy_helper.from_array(_packed(padded, bits), "w_zp"))
    elif zero_points == "float":
        inits.append(numpy_helper.from_array((zps + float_zero_offset).astype(dtype), "w_zp"))
    inputs.append("w_zp" if zero_points != "none" else "")
    if g_idx is not None:
        groups = np.arange(k) // block
        if g_idx == "act-order":
            groups = groups[rng.permutation(k)]
        inits.append(numpy_helper.from_array(groups.astype(np.int32), "w_g_idx"))
    inputs.append("w_g_idx" if g_idx is not None else "")
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(dtype), "w_bias"))
    inputs.append("w_bias" if bias else "")
    while inputs[-1] == "":
        inputs.pop()
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("MatMulNBits", inputs, ["Y"], name="proj_nbits", domain=MS, K=k, N=n, bits=bits,
                            block_size=block)
    graph = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("A", elem, [*rows, k])],
                              [helper.make_tensor_value_info("Y", elem, [*rows, n])], inits)
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid(MS, 1)] if import_domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


@functools.cache
def _models() -> dict[str, bytes]:
    built = {}
    for bits in (2, 4, 8):
        for symmetric in (False, True):
            kind = "sym" if symmetric else "asym"
            built[f"ort-q{bits}-{kind}-k64n32b32"] = quantized(64, 32, bits, 32, symmetric)
            built[f"ort-q{bits}-{kind}-k40n24b16"] = quantized(40, 24, bits, 16, symmetric, seed=1)  # K % block != 0
    built["ort-q4-asym-k96n20b64-accuracy4"] = quantized(96, 20, 4, 64, False, accuracy_level=4, seed=2)
    built["hand-q2-packed"] = hand_built(bits=2, k=50, block=16)
    built["hand-q4-float-zero-points"] = hand_built(zero_points="float")
    built["hand-q2-float-zero-points"] = hand_built(bits=2, zero_points="float", k=40)  # none for 8 bits on CPU
    built["hand-q4-g-idx-in-order"] = hand_built(g_idx="in-order", zero_points="none")
    built["hand-q4-bias"] = hand_built(bias=True, zero_points="none")
    built["hand-q4-float16"] = hand_built(dtype=np.float16, k=32, block=16)
    built["hand-q4-flat-scales-rank3"] = hand_built(flat_scales=True, rows=(2, 3))
    built["hand-q4-no-domain-import"] = hand_built(import_domain=False)
    built["hand-q4-n-odd"] = hand_built(n=7, zero_points="none")  # no two rows of B pair up in the typed weight's bytes
    return {name: model.SerializeToString() for name, model in built.items()}


@functools.cache
def _refused() -> dict[str, tuple[bytes, str]]:
    built = {
        "float-zero-points-fractional": (hand_built(zero_points="float", float_zero_offset=0.5), "not an integer"),
        "g-idx-act-order": (hand_built(g_idx="act-order", zero_points="none"), "act-order"),
        "g-idx-with-zero-points": (hand_built(g_idx="in-order"), "reads every zero point as 8"),
    }
    three = hand_built(bits=4)
    for a in three.graph.node[0].attribute:
        if a.name == "bits":
            a.i = 3
    built["bits-3"] = (three, "bits=3")
    worded = hand_built(bits=4)  # an attribute of the wrong attribute type: a warning, not an internal error
    worded.graph.node[0].attribute.append(helper.make_attribute("accuracy_level", "x"))
    built["accuracy-level-string"] = (worded, "attribute accuracy_level is b'x', not an integer")
    missing = hand_built(bits=4)
    del missing.graph.node[0].attribute[[a.name for a in missing.graph.node[0].attribute].index("K")]
    built["k-missing"] = (missing, "attribute K is missing")
    return {name: (model.SerializeToString(), reason) for name, (model, reason) in built.items()}


def nbits_models() -> dict[str, onnx.ModelProto]:
    return {name: onnx.load_from_string(data) for name, data in _models().items()}


def refused_models() -> dict[str, tuple[onnx.ModelProto, str]]:
    return {name: (onnx.load_from_string(data), reason) for name, (data, reason) in _refused().items()}


def _a_shape(model: onnx.ModelProto) -> tuple[list[int], np.dtype]:
    a = model.graph.input[0].type.tensor_type
    return [d.dim_value for d in a.shape.dim], np.dtype(helper.tensor_dtype_to_np_dtype(a.elem_type))


def nbits_feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    shape, dtype = _a_shape(model)
    return {"A": np.random.default_rng(seed).standard_normal(shape).astype(dtype)}


def free_rows(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose input and output dims but the last are symbolic (any row count runs)."""
    out = copy.deepcopy(model)
    for vi in (*out.graph.input, *out.graph.output):
        dims = vi.type.tensor_type.shape.dim
        for i, dim in enumerate(dims[:-1]):
            dim.Clear()
            dim.dim_param = f"rows{i}"
    return out


def identity_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """A = the K x K identity (in A's rank): row k of the product is row k of the weight, computed exactly
    (run it on ``free_rows(model)``)."""
    shape, dtype = _a_shape(model)
    k = shape[-1]
    return {"A": np.eye(k, dtype=dtype).reshape([1] * (len(shape) - 2) + [k, k])}
