"""Record what AMD Quark's own onnxruntime custom-op library computes for its quantization operators, as test data
for reference_ops/producer_ops (tests/test_reference_producer_ops.py): quark_custom_ops.npz beside this file.

Run with an interpreter that has amd-quark (its library is built on first use) and onnxruntime:
    QUARK/bin/python tests/data/record_quark_custom_ops.py
It writes, per case, the input ("<case>.x"), each output onnxruntime gives ("<case>.y"; the stored integers
"<case>.q", bfloat16 storage through a Cast to float32, which onnxruntime's Python API can hand out), the parameters,
and the case's node as JSON ("<case>.node": op type, attributes). Inputs come from a fixed seed and hold the
values a kernel gets wrong first: ties of the rounding, saturation, zeros of both signs, subnormals, infinities,
NaN, blocks that do not fill the last one.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = pathlib.Path(__file__).with_name("quark_custom_ops.npz")
DOMAIN = "com.amd.quark"


def _session(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid(DOMAIN, 1)],
                              ir_version=10)
    from quark.onnx.operators.custom_ops import get_library_path

    options = ort.SessionOptions()
    options.register_custom_ops_library(get_library_path())
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def mx_input(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = (rng.normal(size=shape) * np.exp2(rng.integers(-8, 8, size=shape))).astype(np.float32)
    flat = x.reshape(-1)
    if flat.size < 40:  # a small tensor: its values of every magnitude, and a few of the specials below
        flat[rng.integers(0, flat.size, size=min(3, flat.size))] = rng.choice([0.0, -0.0, 1e-40, np.inf, np.nan, 3e38])
        return x
    specials = np.array([0.0, -0.0, 1e-40, -3e-39, np.inf, -np.inf, np.nan, 3e38, 1.0, 0.5 / 64, 1.5 / 64, -2.5 / 64,
                         -0.25, 0.75, 5.0, -5.0, 7.0, 13.0 / 16, -0.3 / 64, -1e-30], np.float32)
    flat[: specials.size] = specials
    return x


def qdq_input(rng: np.random.Generator, shape: tuple[int, ...], scale: np.ndarray, axis: int,
              special: bool) -> np.ndarray:
    steps = rng.integers(-200000, 200000, size=shape).astype(np.float64) / 2  # ties: half steps
    along = [1] * len(shape)
    along[axis] = -1
    x = (steps * (scale if scale.size == 1 else scale.reshape(along))).astype(np.float32)
    # zeros of both signs, and quotients far beyond every storage range yet inside int64, where the library's
    # cast to int64 is defined (beyond 2^63 it is not: tests/test_reference_producer_ops.py refuses those)
    x.reshape(-1)[:4] = [0.0, -0.0, 2.0**40 * float(scale.reshape(-1)[0]), -(2.0**40) * float(scale.reshape(-1)[0])]
    if special:  # float storage holds them: NaN of either sign, signalling NaN, infinities; float16's subnormals and
        # rounding ties (2^-25 and 3 * 2^-25 between subnormals, 1 + 2^-11 and 1 + 3 * 2^-11 between normals)
        x.reshape(-1)[4:8] = [np.nan, -np.nan, np.inf, -np.inf]
        x.reshape(-1)[8:10] = np.array([0x7F800001, 0x7FA00000], np.uint32).view(np.float32)
        x.reshape(-1)[10:16] = [2.0**-24, 2.0**-25, 3 * 2.0**-25, -(2.0**-20), 1 + 2.0**-11, 1 + 3 * 2.0**-11]
    return x


def _random_mx(rng: np.random.Generator, record: dict[str, np.ndarray], count: int = 40) -> None:
    """``count`` MX cases of random rank (1-4), axis (negative too), block size (partial blocks), element type,
    rounding mode (3: one the library has no name for) and input dtype, over values of every magnitude and the
    specials."""
    for k in range(count):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 7, size=rank))
        attrs = {"element_dtype": str(rng.choice(["fp8_e5m2", "fp8_e4m3", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"])),
                 "axis": int(rng.integers(-rank, rank)), "block_size": int(rng.choice([1, 2, 3, 5, 7, 8, 16, 33])),
                 "rounding_mode": int(rng.integers(0, 4))}
        dtype = np.float16 if k % 5 == 0 else np.float32
        elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
        node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, **attrs)
        session = _session([node], [helper.make_tensor_value_info("x", elem, shape)],
                           [helper.make_tensor_value_info("y", elem, shape)], [])
        with np.errstate(over="ignore"):
            x = mx_input(rng, shape).astype(dtype)
        case = f"mx-random-{k}"
        record[f"{case}.x"], record[f"{case}.y"] = x, session.run(None, {"x": x})[0]
        record[f"{case}.node"] = np.array(json.dumps({"op_type": "MXQuantizeDequantize", "attributes": attrs}))


def bfp_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: type, specials: bool) -> np.ndarray:
    """Values of every magnitude, in blocks of mixed exponents (so that sub-block shifts and the clamp act), ties
    of the rounding at several steps, and with ``specials`` zeros of both signs, subnormals, infinities, NaN
    (signalling too) and float32's largest values."""
    x = rng.normal(size=shape) * np.exp2(rng.integers(-12, 12, size=shape))
    flat = x.reshape(-1)
    flat[::5] = np.round(flat[::5] * 64) / 64 + 1 / 128  # ties at 1/64 steps
    flat[1::7] = rng.integers(-300, 300, size=flat[1::7].shape) / 2  # ties at 1/2 steps
    x = x.astype(np.float32)
    flat = x.reshape(-1)
    if specials and flat.size >= 24:
        values = np.array([0.0, -0.0, 1e-40, -3e-39, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1.0, -1.0, 255.5,
                           -255.5, 127.5, -0.0078125, 1.9999999], np.float32)
        at = rng.choice(flat.size, size=values.size, replace=False)
        flat[at] = values
        flat[at[0] ^ 1 if (at[0] ^ 1) < flat.size else at[0]] = np.array([0x7F800001], np.uint32).view(np.float32)[0]
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def _bfp(rng: np.random.Generator, record: dict[str, np.ndarray]) -> None:
    """Quark's BFP16 and MX4 / MX6 / MX9 presets as its configs write them, each rounding mode, both kernels of
    to_bfp, the bfloat16 pre-rounding, float16 input, ranks 1-4 with negative axes and partial blocks, and 30
    random combinations; a separate block of blocks that all hold specials or only zeros and subnormals."""
    chosen = []
    for method, bits, block in (("to_bfp", 16, 8), ("to_bfp_prime", 11, 16), ("to_bfp_prime", 13, 16),
                                ("to_bfp_prime", 16, 16)):
        for rounding in (0, 1, 2):
            chosen.append({"bfp_method": method, "axis": 1, "bit_width": bits, "block_size": block,
                           "rounding_mode": rounding})
    chosen += [{"bfp_method": "to_bfp", "axis": 1, "bit_width": 16, "block_size": 8, "rounding_mode": r,
                "use_compiler_version_cpu_kernel": 1} for r in (0, 1, 2)]
    chosen += [{"bfp_method": m, "axis": 1, "bit_width": 13, "block_size": 16, "rounding_mode": 2,
                "convert_to_bfloat_before_bfp": 1} for m in ("to_bfp", "to_bfp_prime")]
    chosen += [{"bfp_method": "to_bfp_prime_shared", "axis": 1, "bit_width": 9, "block_size": 12, "rounding_mode": 2,
                "sub_block_size": 3, "sub_block_shift_bits": 2}]
    cases = [(attrs, (2, 37, 3), np.float32, True) for attrs in chosen]
    cases += [(dict(chosen[k], axis=-1), (5, 20), np.float16, True) for k in (2, 8, 12)]
    for k in range(30):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 9, size=rank))
        block = int(rng.choice([1, 2, 4, 6, 8, 16, 32]))
        method = str(rng.choice(["to_bfp", "to_bfp_prime"]))
        attrs = {"bfp_method": method, "axis": int(rng.integers(-rank, rank)), "bit_width": int(rng.integers(9, 33)),
                 "block_size": block, "rounding_mode": int(rng.integers(0, 3)),
                 "convert_to_bfloat_before_bfp": int(rng.integers(0, 2))}
        if method == "to_bfp":
            attrs["use_compiler_version_cpu_kernel"] = int(rng.integers(0, 2))
        else:
            attrs["sub_block_size"] = int(rng.choice([d for d in (1, 2, 3, 4, 8) if block % d == 0]))
            attrs["sub_block_shift_bits"] = int(rng.integers(0, 4))
        cases.append((attrs, shape, np.float16 if k % 6 == 0 else np.float32, True))
    cases += [({"bfp_method": m, "axis": 0, "bit_width": 16, "block_size": 4, "rounding_mode": 2}, (24,), np.float32,
               False) for m in ("to_bfp", "to_bfp_prime")]
    for k, (attrs, shape, dtype, specials) in enumerate(cases):
        elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
        node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, **attrs)
        session = _session([node], [helper.make_tensor_value_info("x", elem, shape)],
                           [helper.make_tensor_value_info("y", elem, shape)], [])
        x = bfp_input(rng, shape, dtype, specials)
        if not specials:  # blocks of one kind each: all zeros, subnormals only, one infinity, one NaN
            x[:] = [0.0, -0.0, 0.0, 0.0, 1e-40, -2e-39, 3e-45, 0.0, 1.0, np.inf, 2.0, -1.0, 0.5, 0.25, np.nan, -4.0,
                    1e-38, -1e-38, 6e-39, 1.5e-38, 3.0, -2.5, 0.75, 1.25]
        case = f"bfp-{k}-{attrs['bfp_method']}-b{attrs['bit_width']}-r{attrs['rounding_mode']}"
        record[f"{case}.x"] = x.copy()  # (the library may round its input buffer in place: kept before the run)
        record[f"{case}.y"] = session.run(None, {"x": x})[0]
        record[f"{case}.node"] = np.array(json.dumps({"op_type": "BFPQuantizeDequantize", "attributes": attrs}))


def _float16_nans(record: dict[str, np.ndarray]) -> None:
    """MX and BFP on float16 input holding NaNs of both signs, signalling or quiet, with payloads (the library casts
    float16 in and out with onnxruntime's Cast), in blocks and as a tensor of one value."""
    nans = np.array([0x7C01, 0xFC01, 0x7D55, 0x7E00, 0xFE3F, 0x3C00, 0xBC00, 0x7BFF, 0x0001, 0x8000, 0x4500, 0xC100],
                    np.uint16).view(np.float16)
    for op, attrs in (("MXQuantizeDequantize", {"element_dtype": "int8", "axis": 0, "block_size": 4,
                                                "rounding_mode": 2}),
                      ("BFPQuantizeDequantize", {"bfp_method": "to_bfp", "axis": 0, "block_size": 4}),
                      ("BFPQuantizeDequantize", {"bfp_method": "to_bfp_prime", "axis": 0, "block_size": 4,
                                                 "bit_width": 13})):
        for x in (nans, nans[:1]):
            node = helper.make_node(op, ["x"], ["y"], domain=DOMAIN, **attrs)
            session = _session([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT16, x.shape)],
                               [helper.make_tensor_value_info("y", TensorProto.FLOAT16, x.shape)], [])
            case = f"float16-nans-{op[:3].lower()}-{attrs.get('bfp_method', 'mx')}-{x.size}"
            record[f"{case}.x"] = x.copy()
            record[f"{case}.y"] = session.run(None, {"x": x.copy()})[0]
            record[f"{case}.node"] = np.array(json.dumps({"op_type": op, "attributes": attrs}))


def _bfloat_nans(record: dict[str, np.ndarray]) -> None:
    """BFP's bfloat16 pre-rounding on NaNs whose rounding carries (0x7FFFFFFF wraps to -0) or not, and on ties."""
    x = np.array([0x7FFFFFFF, 0xFFFF8001, 0x7F808000, 0x7FC00000, 0x3F808000, 0x3F818000, 0x3F80FFFF, 0xBF808001],
                 np.uint32).view(np.float32)
    for method in ("to_bfp", "to_bfp_prime"):
        attrs = {"bfp_method": method, "axis": 0, "block_size": 2, "bit_width": 16, "convert_to_bfloat_before_bfp": 1}
        node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, **attrs)
        session = _session([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)], [])
        case = f"bfloat-nans-{method}"
        record[f"{case}.x"] = x.copy()
        record[f"{case}.y"] = session.run(None, {"x": x.copy()})[0]
        record[f"{case}.node"] = np.array(json.dumps({"op_type": "BFPQuantizeDequantize", "attributes": attrs}))


def _scalars(record: dict[str, np.ndarray]) -> None:
    """A tensor of rank 0 (PP-OCR's scalar constants, which Quark's MX4 preset quantizes) through MX and BFP."""
    for op, attrs in (("MXQuantizeDequantize", {"element_dtype": "fp4_e2m1", "axis": 0, "block_size": 32,
                                                "rounding_mode": 2}),
                      ("BFPQuantizeDequantize", {"bfp_method": "to_bfp_prime", "axis": 0, "bit_width": 11,
                                                 "block_size": 16}),
                      ("BFPQuantizeDequantize", {"bfp_method": "to_bfp", "convert_to_bfloat_before_bfp": 1})):
        for x in (np.array(3.0001, np.float32), np.array(0x7C01, np.uint16).view(np.float16)):
            elem = helper.np_dtype_to_tensor_dtype(x.dtype)
            node = helper.make_node(op, ["x"], ["y"], domain=DOMAIN, **attrs)
            session = _session([node], [helper.make_tensor_value_info("x", elem, [])],
                               [helper.make_tensor_value_info("y", elem, [])], [])
            case = f"scalar-{op[:3].lower()}-{attrs.get('bfp_method', 'mx')}-{len(attrs)}-{x.dtype}"
            record[f"{case}.x"] = x.copy()
            record[f"{case}.y"] = session.run(None, {"x": x.copy()})[0]
            record[f"{case}.node"] = np.array(json.dumps({"op_type": op, "attributes": attrs}))


def _edges(rng: np.random.Generator, record: dict[str, np.ndarray]) -> None:
    """What the library defines outside the presets: to_bfp at any bit width (steps of 2^-149 and below, or larger
    than the values), to_bfp_prime at 33-39 bits (tails of 0 bits or fewer), sub-blocks that do not divide the block
    of a row that ends before the unwritten ones, a mode of no name on data without ties, a tensor of one value
    whatever the attributes, tensors with a dimension of 0, and float16 NaNs of rank 0 through the bfloat16
    rounding and the float16 storage."""
    x = bfp_input(rng, (3, 40), np.float32, True)
    # full random mantissas: no value ties at the steps these widths make (the chance is about 2^-19 a value)
    untied = (rng.normal(size=(3, 40)) * np.exp2(rng.integers(-8, 8, size=(3, 40)))).astype(np.float32)
    cases = [(dict(bfp_method="to_bfp", axis=1, block_size=8, bit_width=w, rounding_mode=2), x)
             for w in (0, 8, 33, 40, 200)]
    cases += [(dict(bfp_method="to_bfp", axis=1, block_size=8, bit_width=w, rounding_mode=1,
                    use_compiler_version_cpu_kernel=1), x) for w in (8, 33)]
    cases += [(dict(bfp_method="to_bfp_prime", axis=1, block_size=16, bit_width=w, rounding_mode=2), x)
              for w in (33, 36, 39)]
    cases += [(dict(bfp_method="to_bfp_prime", axis=1, block_size=8, sub_block_size=3, bit_width=13), x[:, :6]),
              (dict(bfp_method="to_bfp_prime", axis=1, block_size=16, bit_width=13, rounding_mode=5), untied),
              (dict(bfp_method="bogus", rounding_mode=3, bit_width=5, block_size=0), np.array([[2.7]], np.float32)),
              (dict(bfp_method="to_bfp", axis=1, block_size=4), np.zeros((0, 3), np.float32)),
              (dict(bfp_method="to_bfp_prime", axis=-1, block_size=4), np.zeros((2, 0, 4), np.float32)),
              (dict(bfp_method="to_bfp", convert_to_bfloat_before_bfp=1),
               np.array(0x7E00, np.uint16).view(np.float16))]
    for k, (attrs, value) in enumerate(cases):
        elem = helper.np_dtype_to_tensor_dtype(value.dtype)
        node = helper.make_node("BFPQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, **attrs)
        session = _session([node], [helper.make_tensor_value_info("x", elem, value.shape)],
                           [helper.make_tensor_value_info("y", elem, value.shape)], [])
        case = f"edge-{k}-{attrs['bfp_method']}"
        record[f"{case}.x"] = value.copy()
        record[f"{case}.y"] = session.run(None, {"x": value.copy()})[0]
        record[f"{case}.node"] = np.array(json.dumps({"op_type": "BFPQuantizeDequantize", "attributes": attrs}))
    # MX on one value, whatever the element type says (the library checks it only for more)
    value = np.array([[1.37]], np.float32)
    attrs = {"element_dtype": "fp3_e1m1", "block_size": 0, "axis": 1, "rounding_mode": 2}
    node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, **attrs)
    session = _session([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, value.shape)],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, value.shape)], [])
    record["edge-mx-one-value.x"], record["edge-mx-one-value.y"] = value, session.run(None, {"x": value.copy()})[0]
    record["edge-mx-one-value.node"] = np.array(json.dumps({"op_type": "MXQuantizeDequantize", "attributes": attrs}))
    # float16 storage of a NaN of rank 0 (and one of rank 1): a Cast, the scale and zero point unread
    for shape in ((), (1,)):
        value = np.full(shape, np.nan, np.float32)
        nodes = [helper.make_node("ExtendedQuantizeLinear", ["x", "scale", "zp"], ["q"], domain=DOMAIN),
                 helper.make_node("ExtendedDequantizeLinear", ["q", "scale", "zp"], ["y"], domain=DOMAIN)]
        scale, zero_point = np.array(0.5, np.float32), np.array(0, np.float16)
        session = _session(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape),
                            helper.make_tensor_value_info("q", TensorProto.FLOAT16, shape)],
                           [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(zero_point, "zp")])
        case = f"qdq-float16-nan-rank{len(shape)}"
        got = session.run(None, {"x": value.copy()})
        record[f"{case}.x"], record[f"{case}.y"], record[f"{case}.q"] = value, got[0], got[1]
        record[f"{case}.scale"], record[f"{case}.zp"] = scale, zero_point
        record[f"{case}.node"] = np.array(json.dumps({"op_type": "ExtendedQuantizeLinear", "attributes": {},
                                                      "storage": "float16"}))


def main() -> None:
    rng = np.random.default_rng(20261129)
    record: dict[str, np.ndarray] = {}
    for element in ("fp8_e5m2", "fp8_e4m3", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "int8"):
        for rounding in ((0, 1, 2) if element == "int8" else (2,)):
            for shape, axis, dtype in (((70,), 0, np.float32), ((2, 40, 3), 1, np.float32), ((5, 64), -1, np.float32),
                                       ((3, 33), 0, np.float16)):
                case = f"mx-{element}-r{rounding}-{'x'.join(map(str, shape))}-a{axis}-{np.dtype(dtype).name}"
                attrs = {"element_dtype": element, "axis": axis, "block_size": 32, "rounding_mode": rounding}
                node = helper.make_node("MXQuantizeDequantize", ["x"], ["y"], domain=DOMAIN, **attrs)
                elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
                session = _session([node], [helper.make_tensor_value_info("x", elem, shape)],
                                   [helper.make_tensor_value_info("y", elem, shape)], [])
                with np.errstate(over="ignore"):  # 3e38 in float16: an infinity, as meant
                    x = mx_input(rng, shape).astype(dtype)
                record[f"{case}.x"], record[f"{case}.y"] = x, session.run(None, {"x": x})[0]
                record[f"{case}.node"] = np.array(json.dumps({"op_type": "MXQuantizeDequantize", "attributes": attrs}))
    storages = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
                "uint32": np.uint32, "bfloat16": None, "float16": np.float16}
    for storage, dtype in storages.items():
        for per_axis, axis in ((False, None), (True, None), (True, 1)):
            shape = (4, 6, 5)
            count = shape[0 if axis is None else axis]
            integer = dtype is not None and np.dtype(dtype).kind in "iu"
            scale = (rng.uniform(0.5, 2.0, size=count if per_axis else 1) * (2e-3 if integer and
                     np.iinfo(dtype).bits == 8 else 1e-4)).astype(np.float32)
            if not per_axis:
                scale = scale.reshape(())
            if dtype is None:
                import ml_dtypes

                zero_point = np.asarray(rng.uniform(-3, 3, size=scale.shape), ml_dtypes.bfloat16)
                zp_tensor = helper.make_tensor("zp", TensorProto.BFLOAT16, zero_point.shape, zero_point.tobytes(),
                                               raw=True)  # (a list would be read as numbers, not bit patterns)
            elif not integer:  # float16: the library's Cast reads neither scale nor zero point
                zero_point = rng.uniform(-3, 3, size=scale.shape).astype(dtype)
                zp_tensor = numpy_helper.from_array(zero_point, "zp")
            else:
                info = np.iinfo(dtype)
                zero_point = rng.integers(max(info.min, -100), min(info.max, 100), size=scale.shape).astype(dtype)
                zp_tensor = numpy_helper.from_array(zero_point, "zp")
            attrs = {} if axis is None else {"axis": axis}
            case = f"qdq-{storage}-{'axis' if per_axis else 'tensor'}-a{axis}"
            quantize = helper.make_node("ExtendedQuantizeLinear", ["x", "scale", "zp"], ["q"], domain=DOMAIN, **attrs)
            dequantize = helper.make_node("ExtendedDequantizeLinear", ["q", "scale", "zp"], ["y"], domain=DOMAIN,
                                          **attrs)
            storage_type = (helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if dtype is not None
                            else TensorProto.BFLOAT16)
            nodes = [quantize, dequantize]
            outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)]
            if dtype is not None:
                outputs.append(helper.make_tensor_value_info("q", storage_type, shape))
            else:  # bfloat16 leaves onnxruntime's Python API as float32 only (a Cast is exact)
                nodes.append(helper.make_node("Cast", ["q"], ["q_float"], to=TensorProto.FLOAT))
                outputs.append(helper.make_tensor_value_info("q_float", TensorProto.FLOAT, shape))
            session = _session(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                               outputs, [numpy_helper.from_array(scale, "scale"), zp_tensor])
            x = qdq_input(rng, shape, scale, 0 if axis is None else axis, not integer)
            got = session.run(None, {"x": x})
            record[f"{case}.x"], record[f"{case}.y"], record[f"{case}.q"] = x, got[0], got[1]
            record[f"{case}.scale"] = scale
            record[f"{case}.zp"] = zero_point.view(np.uint16) if dtype is None else zero_point
            record[f"{case}.node"] = np.array(json.dumps({"op_type": "ExtendedQuantizeLinear", "attributes": attrs,
                                                          "storage": storage}))
    _random_mx(rng, record)
    _bfp(rng, record)
    _float16_nans(record)
    _bfloat_nans(record)
    _scalars(record)
    _edges(rng, record)
    import importlib.metadata  # noqa: PLC0415 - the versions the results are of

    record["versions"] = np.array(json.dumps({p: importlib.metadata.version(p) for p in ("amd-quark", "onnxruntime")}))
    np.savez_compressed(OUT, **record)
    print(f"{OUT}: {len([k for k in record if k.endswith('.node')])} cases")


if __name__ == "__main__":
    main()
