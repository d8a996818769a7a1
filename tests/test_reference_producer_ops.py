"""AMD Quark's own quantization operators (domain com.amd.quark), which its quantizer leaves in BF16, FP16 and MX
models: the reference computes them as Quark's onnxruntime custom-op library does (reference_ops/producer_ops).

The library's results are recorded data (tests/data/quark_custom_ops.npz, written by
tests/data/record_quark_custom_ops.py with amd-quark 0.13's library and onnxruntime's unoptimized path); the
inputs hold ties, saturation, signed zeros, subnormals, infinities, NaN and partly filled blocks. A few values are
also worked out by hand from the OCP microscaling rules, independently of both.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator

DOMAIN = "com.amd.quark"
RECORDED = np.load(pathlib.Path(__file__).parent / "data" / "quark_custom_ops.npz")
CASES = sorted(key.rsplit(".", 1)[0] for key in RECORDED.files if key.endswith(".node"))


def _model(nodes: list[onnx.NodeProto], x: np.ndarray, outputs: list[str],
           initializers: list[onnx.TensorProto] = ()) -> onnx.ModelProto:
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(nodes, "quark", [helper.make_tensor_value_info("x", elem, x.shape)],
                              [onnx.ValueInfoProto(name=o) for o in outputs], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid(DOMAIN, 1)],
                             ir_version=10)


def _run(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, {"x": x})]


def _same(ours: np.ndarray, theirs: np.ndarray) -> bool:
    """The same bytes (a zero's sign and a NaN's bits count) of one dtype and shape."""
    return ours.dtype == theirs.dtype and ours.shape == theirs.shape and ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("case", CASES)
def test_as_quarks_library_computes(case: str) -> None:
    spec = json.loads(str(RECORDED[f"{case}.node"]))
    x = RECORDED[f"{case}.x"]
    if spec["op_type"] in ("MXQuantizeDequantize", "BFPQuantizeDequantize"):
        node = helper.make_node(spec["op_type"], ["x"], ["y"], domain=DOMAIN, **spec["attributes"])
        (y,) = _run(_model([node], x, ["y"]), x)
        assert _same(y, RECORDED[f"{case}.y"])
        return
    scale, zero_point = RECORDED[f"{case}.scale"], RECORDED[f"{case}.zp"]
    if spec["storage"] == "bfloat16":  # recorded as its bit patterns
        zp = helper.make_tensor("zp", TensorProto.BFLOAT16, zero_point.shape, zero_point.tobytes(), raw=True)
    else:
        zp = numpy_helper.from_array(zero_point, "zp")
    nodes = [helper.make_node("ExtendedQuantizeLinear", ["x", "scale", "zp"], ["q"], domain=DOMAIN,
                              **spec["attributes"]),
             helper.make_node("ExtendedDequantizeLinear", ["q", "scale", "zp"], ["y"], domain=DOMAIN,
                              **spec["attributes"])]
    y, q = _run(_model(nodes, x, ["y", "q"], [numpy_helper.from_array(scale, "scale"), zp]), x)
    assert _same(y, RECORDED[f"{case}.y"])
    if spec["storage"] != "bfloat16":
        assert _same(q, RECORDED[f"{case}.q"])
        return
    # bfloat16 storage left onnxruntime through an exact Cast to float32, a NaN's bits kept (the library writes
    # onnxruntime's one bfloat16 NaN, 0x7FC1, for a NaN of either sign)
    assert q.dtype == ml_dtypes.bfloat16
    assert _same(q.astype(np.float32), RECORDED[f"{case}.q"])


def test_recording_covers_every_element_type_and_storage() -> None:
    """The recorded data exercises what the corpus's Quark files use (fp4_e2m1, int8 with half-to-even rounding,
    bfloat16 storage, float16 storage) and the rest the library knows, and says which versions it is of."""
    specs = [json.loads(str(RECORDED[f"{c}.node"])) for c in CASES]
    elements = {s["attributes"]["element_dtype"] for s in specs if s["op_type"] == "MXQuantizeDequantize"}
    elements.discard("fp3_e1m1")  # (a tensor of one value: passed through whatever the element type)
    storages = {s["storage"] for s in specs if s["op_type"] == "ExtendedQuantizeLinear"}
    assert elements == {"fp8_e5m2", "fp8_e4m3", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"}
    assert storages == {"int8", "uint8", "int16", "uint16", "int32", "uint32", "bfloat16", "float16"}
    assert {s["attributes"]["rounding_mode"] for s in specs if s["op_type"] == "MXQuantizeDequantize"} == {0, 1, 2, 3}
    bfp = [s["attributes"] for s in specs if s["op_type"] == "BFPQuantizeDequantize"]
    assert {"to_bfp", "to_bfp_prime", "to_bfp_prime_shared"} <= {a["bfp_method"] for a in bfp}
    presets = {(a["bfp_method"], a.get("bit_width"), a.get("block_size")) for a in bfp}  # BFP16, MX4 / 6 / 9
    assert {("to_bfp", 16, 8), ("to_bfp_prime", 11, 16), ("to_bfp_prime", 13, 16), ("to_bfp_prime", 16, 16)} <= presets
    assert {0, 1, 2} <= {a.get("rounding_mode", 0) for a in bfp}
    assert any(a.get("use_compiler_version_cpu_kernel") for a in bfp)
    assert any(a.get("convert_to_bfloat_before_bfp") for a in bfp)
    assert {str(RECORDED[f"{c}.x"].dtype) for c in CASES if c.startswith("bfp-")} == {"float32", "float16"}
    versions = json.loads(str(RECORDED["versions"]))  # the library's results are of these versions
    assert versions["amd-quark"].startswith("0.13") and versions["onnxruntime"]


def _mx(values: list[float], element: str, rounding_mode: int = 2) -> np.ndarray:
    x = np.array(values, np.float32)
    node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, element_dtype=element, axis=0,
                            block_size=4, rounding_mode=rounding_mode)
    return _run(_model([node], x, ["y"]), x)[0]


def test_mx_int8_by_hand() -> None:
    # block max 1.0: exponent 0, int8's emax 0, scale 2^0; values kept to 6 fractional bits (steps of 1/64)
    np.testing.assert_array_equal(_mx([1.0, 0.3, 0.5 / 64, 1.5 / 64], "int8", 2), [1.0, 19 / 64, 0.0, 2 / 64])
    # half up (1) and half away from zero (0) differ on a negative tie
    assert _mx([1.0, -2.5 / 64, 0, 0], "int8", 1)[1] == -2 / 64
    assert _mx([1.0, -2.5 / 64, 0, 0], "int8", 0)[1] == -3 / 64
    # block max |-4.0|: exponent 2, scale 4; 3.0 / 4 * 64 = 48 steps, exact
    np.testing.assert_array_equal(_mx([3.0, -4.0, 0.0, 2.0], "int8", 2), [3.0, -4.0, 0.0, 2.0])
    # block max 1.999: exponent 0, scale 1; 1.999 * 64 = 127.94 rounds to 128 and saturates at 127 steps
    assert _mx([1.999, 1.0, 0.0, 0.0], "int8", 2)[0] == 127 / 64


def test_mx_fp4_by_hand() -> None:
    # block max 6.0: exponent 2, fp4_e2m1's emax 2, scale 2^0; fp4 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6
    np.testing.assert_array_equal(_mx([6.0, 5.0, 0.25, 2.6], "fp4_e2m1"), [6.0, 4.0, 0.0, 3.0])
    # block max 7.9 (exponent 2): 7.9 saturates to 6; an infinity passes through and is not the block's max
    np.testing.assert_array_equal(_mx([7.9, np.inf, 1.25, -0.74], "fp4_e2m1"), [6.0, np.inf, 1.0, -0.5])


def test_mx_passes_a_single_value_through() -> None:
    x = np.array([0.123456], np.float32)
    node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, element_dtype="fp4_e2m1")
    assert _run(_model([node], x, ["y"]), x)[0][0] == x[0]


@pytest.mark.parametrize(("attributes", "words"), [
    ({"element_dtype": "fp3_e1m1"}, "element_dtype 'fp3_e1m1'"),
    ({"element_dtype": "int8", "scale_dtype": "fp32"}, "scale_dtype 'fp32'"),
    ({"element_dtype": "int8", "axis": 5}, "axis 5"),
])
def test_mx_refuses_what_the_library_does_not_compute_or_ignores(attributes: dict, words: str) -> None:
    x = np.ones((2, 3), np.float32)
    node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, name="mx0", **attributes)
    with pytest.raises(EvaluationError, match=words) as caught:
        _run(_model([node], x, ["y"]), x)
    assert "mx0" in str(caught.value)


def test_extended_qdq_refuses_float64_storage_and_nan_into_integers() -> None:
    x = np.array([1.0, np.nan], np.float32)
    scale = numpy_helper.from_array(np.array(0.5, np.float32), "scale")
    for zero_point, words in ((np.array(0, np.float64), "storage float64"), (np.array(0, np.int8), "NaN")):
        node = helper.make_node("ExtendedQuantizeLinear", ["x", "scale", "zp"], ["q"], domain=DOMAIN, name="q0")
        model = _model([node], x, ["q"], [scale, numpy_helper.from_array(zero_point, "zp")])
        with pytest.raises(EvaluationError, match=words) as caught:
            _run(model, x)
        assert "q0" in str(caught.value)


def test_run_executes_a_quark_mx_model(tmp_path: pathlib.Path) -> None:
    """``onnx-qtypes run`` on a float model with an MX quantize-dequantize before a MatMul, as Quark writes one:
    exit 0, and the output is the MatMul of the block-quantized input, worked out by hand."""
    weight = np.eye(4, dtype=np.float32) * 2
    nodes = [helper.make_node("MXQuantizeDequantize", ["x"], ["xq"], domain=DOMAIN, element_dtype="fp4_e2m1",
                              axis=1, block_size=4, rounding_mode=2),
             helper.make_node("MatMul", ["xq", "w"], ["y"])]
    x = np.array([[6.0, 5.0, 0.25, 2.6]], np.float32)
    model = _model(nodes, x, ["y"], [numpy_helper.from_array(weight, "w")])
    onnx.save(model, tmp_path / "mx.onnx")
    np.savez(tmp_path / "in.npz", x=x)
    done = subprocess.run([sys.executable, "-m", "onnx_qtypes", "run", str(tmp_path / "mx.onnx"), "--inputs",
                           str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], [[12.0, 8.0, 0.0, 6.0]])


def test_mx_block_larger_than_the_axis_is_one_block_and_a_c_int_at_most() -> None:
    """A block of 2^31 - 1 values over 70: one block per row (the library pads it with zeros, which change no
    scale), as block_size 70 gives, and nothing 2^31 long is made. The library reads block_size as a C int: 2^31
    is refused, not truncated."""
    x = np.random.default_rng(3).normal(size=(3, 70)).astype(np.float32)

    def mx(block_size: int) -> np.ndarray:
        node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, element_dtype="int8", axis=1,
                                block_size=block_size, rounding_mode=2, name="mx2")
        return _run(_model([node], x, ["y"]), x)[0]

    assert _same(mx(2**31 - 1), mx(70))
    assert not np.array_equal(mx(70), mx(7))  # (the block size matters: the test can tell)
    with pytest.raises(EvaluationError, match=r"node 'mx2' .*block_size 2147483648: the library takes 1 to 2\^31 - 1"):
        mx(2**31)


def test_extended_quantize_linear_refuses_a_quotient_beyond_int64() -> None:
    """x / scale = 2e30 into int8: the library's cast to int64 is undefined in C++, so the node is refused; 2^40
    saturates (the recorded cases hold it)."""
    x = np.array([1e30, 1.0], np.float32)
    scale = numpy_helper.from_array(np.array(0.5, np.float32), "scale")
    node = helper.make_node("ExtendedQuantizeLinear", ["x", "scale", "zp"], ["q"], domain=DOMAIN, name="q1")
    model = _model([node], x, ["q"], [scale, numpy_helper.from_array(np.array(5, np.int8), "zp")])
    with pytest.raises(EvaluationError, match=r"node 'q1' .*beyond 2\^63"):
        _run(model, x)


@pytest.mark.parametrize(("op_type", "inputs", "words"), [
    ("ExtendedQuantizeLinear", ["x", "scale", "zp", "zp"], r"takes 3 input\(s\), all given; the node gives 4"),
    ("ExtendedQuantizeLinear", ["x", "", "zp"], r"the node gives 3 \(one, omitted, one\)"),
    ("MXQuantizeDequantize", ["x", "x"], r"takes 1 input\(s\), all given; the node gives 2"),
])
def test_a_wrong_number_of_inputs_is_refused(op_type: str, inputs: list[str], words: str) -> None:
    """The library refuses such a graph; an extra input is not read as an attribute."""
    x = np.ones(3, np.float32)
    node = helper.make_node(op_type, inputs, ["y"], domain=DOMAIN, name="n0")
    params = [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
              numpy_helper.from_array(np.array(0, np.int8), "zp")]
    with pytest.raises(EvaluationError, match=rf"node 'n0' .*{words}"):
        _run(_model([node], x, ["y"], params if op_type != "MXQuantizeDequantize" else []), x)


def test_an_operator_no_class_computes_is_refused_naming_its_node() -> None:
    """Another producer's operator (here a made-up one), or a com.microsoft QLinear node lift kept: the node and its
    domain are named, not onnx.reference's list of known functions."""
    x = np.ones(2, np.float32)
    node = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example", name="frob0")
    model = _model([node], x, ["y"])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(EvaluationError, match=r"node 'frob0' \(com.example.Frobnicate\): the reference computes no"):
        _run(model, x)
    del model.opset_import[-1]  # the domain not imported: named with the node, not onnx.reference's opset dict
    with pytest.raises(EvaluationError, match=r"node 'frob0' \(com.example.Frobnicate\): the model imports no opset "
                                              r"of domain 'com.example'"):
        _run(model, x)


@pytest.mark.parametrize("attributes", [{"axis": 1.5}, {"block_size": 2.5}, {"rounding_mode": [2]}])
def test_mx_refuses_an_integer_attribute_of_another_type(attributes: dict) -> None:
    x = np.ones((2, 3), np.float32)
    node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, name="mx1", element_dtype="int8",
                            **attributes)
    name = next(iter(attributes))
    with pytest.raises(EvaluationError, match=rf"node 'mx1' \(MXQuantizeDequantize\): attribute {name} = .*is not an "
                                              "integer"):
        _run(_model([node], x, ["y"]), x)


def _bfp(values: list[float], **attributes: object) -> np.ndarray:
    x = np.array(values, np.float32)
    node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, axis=0, block_size=4, **attributes)
    return _run(_model([node], x, ["y"]), x)[0]


def test_bfp16_by_hand() -> None:
    """bit_width 16: 7 mantissa bits. Block max 1.0 (exponent 0): steps of 2^(0 - 6) = 1/64, clamped to
    +-(2 - 1/64)."""
    values = [1.0, 0.3, 2.5 / 64, -2.5 / 64]
    np.testing.assert_array_equal(_bfp(values, rounding_mode=2), [1.0, 19 / 64, 2 / 64, -2 / 64])
    np.testing.assert_array_equal(_bfp(values, rounding_mode=0), [1.0, 19 / 64, 3 / 64, -3 / 64])
    assert _bfp(values, rounding_mode=1)[3] == -2 / 64  # a negative tie upward
    # 1.999 * 64 = 127.94 rounds to 128 steps, past the largest, 127 / 64
    assert _bfp([1.999, 1.0, 0.0, 0.0], rounding_mode=2)[0] == 127 / 64
    # an infinity or NaN passes and is no block's max: the rest keep the steps of 1.0
    out = _bfp([np.inf, np.nan, 1.0, 0.3], rounding_mode=2)
    assert out[0] == np.inf and np.isnan(out[1]) and out[3] == 19 / 64


def test_bfp_prime_by_hand() -> None:
    """bit_width 13: 4 mantissa bits. Block [1.0, 0.25 | 0.1, 0.05], sub-blocks of 2 shifted by at most 1: the
    first at the block's exponent 0 (steps of 2^-3), the second one lower (steps of 2^-4), where 0.1 = 1.6 * 2^-4
    rounds to 2 steps and 0.05 = 0.8 * 2^-4 to 1. A block with an infinity is all NaN."""
    np.testing.assert_array_equal(_bfp([1.0, 0.25, 0.1, 0.05], bfp_method="to_bfp_prime", bit_width=13,
                                       sub_block_size=2, sub_block_shift_bits=1, rounding_mode=2),
                                  [1.0, 0.25, 0.125, 0.0625])
    assert np.isnan(_bfp([1.0, np.inf, 0.1, 0.05], bfp_method="to_bfp_prime", bit_width=13)).all()


@pytest.mark.parametrize(("attributes", "words"), [
    ({"bfp_method": "to_bfp_fast"}, "bfp_method 'to_bfp_fast'"),
    ({"bfp_method": "to_bfp_prime", "bit_width": 40}, "bit_width 40"),
    ({"bfp_method": "to_bfp_prime", "bit_width": 8}, "bit_width 8"),
    ({"rounding_mode": 3}, "rounding_mode 3: the library's to_bfp leaves a finite value undefined"),
    ({"bit_width": -(2**31) + 5}, "int arithmetic on it"),
    ({"bfp_method": "to_bfp_prime", "block_size": 8, "sub_block_size": 3}, "sub_block_size 3 does not divide"),
    ({"bfp_method": "to_bfp_prime", "sub_block_size": 0}, "sub_block_size 0"),
    ({"bfp_method": "to_bfp_prime", "sub_block_shift_bits": 31}, "sub_block_shift_bits 31"),
    ({"block_size": 0}, "block_size 0"),
    ({"use_compiler_version_cpu_kernel": 2**32}, "passes it on as a C int"),
    ({"axis": 5}, "axis 5"),
    ({"bit_width": 16.0}, "attribute bit_width = 16.0"),
])
def test_bfp_refuses_what_the_library_leaves_undefined_or_refuses(attributes: dict, words: str) -> None:
    """Each refused on a row of 7 values (past a whole sub-block of 3 in a block of 8: a value left unwritten)."""
    x = np.ones((2, 7), np.float32)
    node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, name="bfp0", **attributes)
    with pytest.raises(EvaluationError, match=rf"node 'bfp0' .*{words}"):
        _run(_model([node], x, ["y"]), x)


def test_bfp_refuses_float64_input_and_leaves_its_input_unrounded() -> None:
    """The library rounds its input buffer to bfloat16 in place; here the input a second consumer reads is the
    value given."""
    x = np.array([1.0 + 2.0**-20, 3.0], np.float32)
    nodes = [helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, axis=0, block_size=2,
                              convert_to_bfloat_before_bfp=1),
             helper.make_node("Identity", ["x"], ["same"])]
    y, same = _run(_model(nodes, x, ["y", "same"]), x)
    assert y[0] == 1.0 and _same(same, x)
    wide = x.astype(np.float64)
    node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, name="bfp1")
    with pytest.raises(EvaluationError, match=r"node 'bfp1' .*input of float64"):
        _run(_model([node], wide, ["y"]), wide)


def test_bfp_prime_refuses_a_mode_of_no_name_only_on_a_tie() -> None:
    """rounding_mode 5: the library's round_bits reads it only on an exact tie (and leaves that value undefined);
    without one the block is defined (the recording's edge case computes it), with one it is refused."""
    node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, name="bfp2", axis=0, block_size=2,
                            bfp_method="to_bfp_prime", bit_width=13, rounding_mode=5, sub_block_size=2)
    untied = np.array([1.0, 0.36], np.float32)  # steps of 2^-3 beside 1.0: 0.36 / 0.125 = 2.88, no tie
    named = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, axis=0, block_size=2,
                             bfp_method="to_bfp_prime", bit_width=13, rounding_mode=0, sub_block_size=2)
    y = _run(_model([node], untied, ["y"]), untied)[0]
    assert _same(y, _run(_model([named], untied, ["y"]), untied)[0])  # no tie: as a named mode rounds it
    assert y[1] == 0.375  # rounded to the nearest step (truncation would give 0.25): the comparison reads a rounding
    tied = np.array([1.0, 1.0625], np.float32)  # 4 mantissa bits at exponent 0: steps of 2^-3, 1.0625 half of one
    with pytest.raises(EvaluationError, match=r"node 'bfp2' .*rounding_mode 5 on a tie"):
        _run(_model([node], tied, ["y"]), tied)


def test_bfp_reads_only_what_the_library_reads() -> None:
    """A tensor of one value passes through whatever its attributes (C int or not); to_bfp reads no sub_block_size,
    to_bfp_prime not the compiler flag; a tensor of no values reads nothing past the method and block size; a row of
    infinities and NaN never reads to_bfp's rounding mode (the library passes them first)."""
    def bfp(x: np.ndarray, **attributes: object) -> np.ndarray:
        node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, **attributes)
        return _run(_model([node], x, ["y"]), x)[0]

    one = np.array([[2.7]], np.float32)
    assert _same(bfp(one, rounding_mode=2**32, bit_width=2**32 + 16, bfp_method="bogus"), one)
    x = np.array([1.0, 0.3], np.float32)
    assert _same(bfp(x, axis=0, block_size=2, sub_block_size=2**32), bfp(x, axis=0, block_size=2))
    assert _same(bfp(x, axis=0, block_size=2, bfp_method="to_bfp_prime", use_compiler_version_cpu_kernel=2**32),
                 bfp(x, axis=0, block_size=2, bfp_method="to_bfp_prime"))
    empty = np.zeros((0, 10), np.float32)
    assert _same(bfp(empty, bfp_method="to_bfp_prime", block_size=8, sub_block_size=3, rounding_mode=7), empty)
    specials = np.array([np.inf, np.nan], np.float32)
    assert _same(bfp(specials, axis=0, block_size=2, rounding_mode=3), specials)
