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
    import importlib.metadata  # noqa: PLC0415 - the versions the results are of

    record["versions"] = np.array(json.dumps({p: importlib.metadata.version(p) for p in ("amd-quark", "onnxruntime")}))
    np.savez_compressed(OUT, **record)
    print(f"{OUT}: {len([k for k in record if k.endswith('.node')])} cases")


if __name__ == "__main__":
    main()
