"""Write the LLM weight-format execution cases (run: python conformance_tests/generators/gguf_cases.py [OUT_DIR]).

For each format a version-3 type expresses (GGUF's Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K-Q6_K, IQ4_NL, MXFP4, and
bitsandbytes' NF4 codebook; proposal/spec/llm_formats.md#mapping), two cases in conformance_tests/cases/execution/:

- ``gguf-gather-<format>``: Gather of rows of a [8, 512] weight in the format (GGUF's layout: blocks along the
  row, as token_embd is read) into a float32 output. Dequantizing a weight is exact, and so is moving its values:
  tolerance 0 (proposal/spec/semantics.md#tolerance-table).
- ``gguf-matmul-<format>``: MatMul of int8 activations [3, 512] by the weight as B[K, N] (a GGUF weight [N, K]
  transposed: blocks along K), with an int8 output: requantized, one step.

Each folder holds case.json, the typed model.onnx, model.qdq.onnx (``onnx_qtypes.lower``: the exact float chain of
interop/lower_llm_formats.py, standard ONNX that onnxruntime runs) and test_data_set_0/. Blocks are random but
valid (tests/gguf_files.py); the expected outputs are the definitional reference's, and the generator refuses to
write a case the integer kernels do not reproduce within its tolerance. Only ``gguf-*`` folders are replaced;
tests/test_gguf_cases.py regenerates them and fails on drift.
"""

from __future__ import annotations

import pathlib
import shutil
import sys
import zlib

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # run as a script too
from execution_gen.common import from_tests, write_documents  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = ROOT / "conformance_tests" / "cases" / "execution"
PREFIX = "gguf-"
ANCHOR = "proposal/spec/llm_formats.md#execution"
ROWS, K, M = 8, 512, 3
# bitsandbytes' NF4 levels (the normal-float 4-bit quantiles, as float32), a codebook with a float32 block scale
NF4_LEVELS = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
              -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
              0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
              0.7229568362236023, 1.0)
NF4_BLOCK = 64

def _tests_helpers():
    return from_tests("gguf_files")  # the tests' valid-block writer


def formats() -> list[str]:
    from onnx_qtypes.interop.gguf_formats import FORMATS  # noqa: PLC0415

    return [*FORMATS, "NF4", "ROWWISE_U8"]


def _weight(fmt_name: str, name: str, transpose: bool, rng: np.random.Generator):
    """(initializers, declarations, weight's tensor name, its QType summary) of a [ROWS, K] weight in the format."""
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    from onnx_qtypes.interop.gguf import declare, typed_tensors  # noqa: PLC0415
    from onnx_qtypes.interop.gguf_formats import FORMATS  # noqa: PLC0415
    from onnx_qtypes.proto import onnx_qtypes_pb2 as pb  # noqa: PLC0415

    if fmt_name == "ROWWISE_U8":
        return _rowwise(name, transpose, rng)
    if fmt_name != "NF4":
        fmt = FORMATS[fmt_name]
        data = _tests_helpers().tensor_bytes(fmt, (ROWS, K), rng)
        inits, infos = typed_tensors(fmt, name, data, (ROWS, K), transpose=transpose)
        return inits, infos, name + ".q"
    codes = rng.integers(0, 16, (ROWS, K)).astype(np.uint8)
    absmax = (np.abs(rng.normal(0, 0.05, (ROWS, K // NF4_BLOCK))) + 2 ** -10).astype(np.float32)
    dims, scale_dims, axis = (ROWS, K), (ROWS, K // NF4_BLOCK), 1
    if transpose:
        codes, absmax, dims, scale_dims, axis = codes.T, absmax.T, dims[::-1], scale_dims[::-1], 0
    packed = np.ascontiguousarray(codes).reshape(-1)
    q = helper.make_tensor(name + ".q", TensorProto.UINT4, list(dims), vals=packed.tolist())
    scale = numpy_helper.from_array(np.ascontiguousarray(absmax), name + ".absmax")
    msg = pb.QuantizedType(storage_type=TensorProto.UINT4, expressed_type=TensorProto.FLOAT, axis=axis,
                           block_size=NF4_BLOCK, scale_tensor=name + ".absmax", version=3)
    msg.codebook.extend(NF4_LEVELS)
    return [q, scale], [declare(name + ".q", TensorProto.UINT4, dims, msg)], name + ".q"


def _rowwise(name: str, transpose: bool, rng: np.random.Generator):
    """A [ROWS, K] uint8 weight with a float scale and a float offset per row, both listed in the type: the fused
    row-wise layout of Caffe2 / FBGEMM embedding tables (x = scale * q + offset; not a GGUF type)."""
    from onnx import TensorProto, helper  # noqa: PLC0415

    from onnx_qtypes.interop.gguf import declare  # noqa: PLC0415
    from onnx_qtypes.proto import onnx_qtypes_pb2 as pb  # noqa: PLC0415

    codes = rng.integers(0, 256, (ROWS, K)).astype(np.uint8)
    # float16-exact scales (11 significant bits, as GGUF's d): the product with an 8-bit code is exact in float32, so
    # the standard form (DequantizeLinear, then Add of the offset) rounds once, as the definition does
    scales = [float(np.float16(s)) for s in rng.uniform(2 ** -9, 2 ** -6, ROWS)]
    offsets = [float(np.float32(o)) for o in rng.uniform(-0.5, 0.1, ROWS)]
    dims, axis = (ROWS, K), 1  # one block of K per row: GGUF's layout with a block as long as the row
    if transpose:
        codes, dims, axis = codes.T, dims[::-1], 0
    q = helper.make_tensor(name + ".q", TensorProto.UINT8, list(dims), vals=np.ascontiguousarray(codes).tobytes(),
                           raw=True)
    msg = pb.QuantizedType(storage_type=TensorProto.UINT8, expressed_type=TensorProto.FLOAT, axis=axis, block_size=K,
                           version=3)
    msg.scale.extend(scales)
    msg.offset.extend(offsets)
    return [q], [declare(name + ".q", TensorProto.UINT8, dims, msg)], name + ".q"


def _model(nodes, inputs, outputs, inits, infos, opset: int, ir: int):
    from onnx import helper  # noqa: PLC0415

    from onnx_qtypes.proto.encoding import to_wire_form  # noqa: PLC0415

    graph = helper.make_graph(nodes, "gguf_case", inputs, outputs, inits, value_info=infos)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    return to_wire_form(model)


def _versions(fmt_name: str) -> tuple[int, int]:
    """(IR, opset): 2-bit storage needs opset 25, FLOAT4E2M1 opset 23 (as lift writes them)."""
    from onnx_qtypes.interop.gguf import opset_for  # noqa: PLC0415

    return opset_for({fmt_name})


def gather_case(fmt_name: str, rng: np.random.Generator):
    from onnx import TensorProto, helper  # noqa: PLC0415

    inits, infos, weight = _weight(fmt_name, "w", False, rng)
    ids = np.asarray([[5, 0, 7], [2, 2, 6]], np.int64)
    nodes = [helper.make_node("Gather", [weight, "ids"], ["y"], axis=0, name="rows")]
    ir, opset = _versions(fmt_name)
    model = _model(nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, list(ids.shape))],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*ids.shape, K])], inits, infos, opset, ir)
    return model, {"ids": ids}


def matmul_case(fmt_name: str, rng: np.random.Generator):
    from onnx import TensorProto, helper  # noqa: PLC0415

    from onnx_qtypes import QType  # noqa: PLC0415
    from onnx_qtypes.proto.model import write_qtype  # noqa: PLC0415
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415

    inits, infos, weight = _weight(fmt_name, "b", True, rng)
    a_type = QType("int8", 2.0 ** -5, 3)
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    ir, opset = _versions(fmt_name)
    a_vi = helper.make_tensor_value_info("a", TensorProto.INT8, [M, K])
    write_qtype(a_vi, a_type)

    def build(y_type):
        y_vi = helper.make_tensor_value_info("y", TensorProto.INT8 if y_type else TensorProto.FLOAT, [M, ROWS])
        if y_type is not None:
            write_qtype(y_vi, y_type)
        nodes = [helper.make_node("MatMul", ["a", weight], ["y"], name="matmul")]
        return _model(nodes, [a_vi], [y_vi], [i.__deepcopy__({}) for i in inits], infos, opset, ir)

    reals = np.asarray(ReferenceEvaluator(build(None)).run(None, {"a": a})[0], np.float64)
    span = max(float(np.percentile(np.abs(reals), 96)), 2.0 ** -8)
    step = float(np.float32(2.0 ** np.ceil(np.log2(span / 127)) * 1.25))  # a few percent saturate
    return build(QType("int8", step, 0)), {"a": a}


BUILDS = {"gather": gather_case, "matmul": matmul_case}


def _features(fmt_name: str) -> list[str]:
    """What the format adds to a plain blocked type, for the tags' ``feature`` list."""
    from onnx_qtypes.interop.gguf_formats import FORMATS, Level  # noqa: PLC0415

    fmt = FORMATS.get(fmt_name)
    storage = fmt.storage if fmt else "uint4"
    features = ["llm-format", fmt_name.lower()]
    if fmt_name == "ROWWISE_U8":
        return [*features, "offset"]
    if fmt is None or fmt.codebook or storage == "float4e2m1":
        features.append("codebook" if storage != "float4e2m1" else "microscaling")
    if fmt is not None and fmt.offset is not None:
        features.append("offset")
    if fmt is not None and isinstance(fmt.scale, Level):
        features.append("quantized-parameters")
    return features


def _tensor_bytes(name: str, value: np.ndarray) -> bytes:
    from onnx import numpy_helper  # noqa: PLC0415

    return numpy_helper.from_array(np.asarray(value), name).SerializeToString()


def case_documents() -> dict[str, tuple[dict, dict[str, bytes]]]:
    """Case id -> (case.json document, {relative path: bytes})."""
    import onnx_qtypes  # noqa: PLC0415
    from onnx_qtypes.conformance.coverage import case_tags  # noqa: PLC0415
    from onnx_qtypes.conformance.tolerance import tolerances  # noqa: PLC0415
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415

    out = {}
    for fmt_name in formats():
        for op, build in BUILDS.items():
            case_id = f"{PREFIX}{op}-{fmt_name.lower()}"
            rng = np.random.default_rng(zlib.crc32(case_id.encode()))
            model, feeds = build(fmt_name, rng)
            model_bytes = model.SerializeToString()
            typed = onnx_qtypes.load(model_bytes)
            judged = tolerances(typed, feeds)["y"]  # the one rule (semantics.md#tolerance-table)
            tolerance = judged.steps
            expected = ReferenceEvaluator(typed, kernels="definitional").run(None, feeds)[0]
            integer = ReferenceEvaluator(onnx_qtypes.load(model_bytes), kernels="integer").run(None, feeds)[0]
            worst = np.max(np.abs(np.asarray(expected, np.float64) - np.asarray(integer, np.float64)))
            if op == "gather" and not np.array_equal(expected, integer) or op == "matmul" and worst > tolerance:
                raise AssertionError(f"{case_id}: the integer kernels are {worst} steps from the definition")
            qdq = onnx_qtypes.lower(typed).SerializeToString()
            source = {"NF4": "bitsandbytes NF4 (not a GGUF type)",
                      "ROWWISE_U8": "fused row-wise uint8 (Caffe2 / FBGEMM; not a GGUF type)"}.get(fmt_name,
                                                                                            f"GGUF {fmt_name}")
            doc = {
                "id": case_id,
                "kind": "execution",
                "operator": "MatMul" if op == "matmul" else "Gather",
                "spec": ANCHOR,
                "description": (f"{'MatMul of int8 activations by' if op == 'matmul' else 'Gather of rows of'} a "
                                f"{source} weight (version-3 type)"),
                "tags": case_tags(typed, "MatMul" if op == "matmul" else "Gather", feeds, _features(fmt_name)),
                "model": "model.onnx",
                "qdq_model": "model.qdq.onnx",
                "inputs": list(feeds),
                "outputs": ["y"],
                "tolerance": {"y": tolerance},
                "tolerance_reason": judged.reason,
            }
            files = {"model.onnx": model_bytes, "model.qdq.onnx": qdq}
            for i, (name, value) in enumerate(feeds.items()):
                files[f"test_data_set_0/input_{i}.pb"] = _tensor_bytes(name, value)
            files["test_data_set_0/output_0.pb"] = _tensor_bytes("y", np.asarray(expected))
            out[case_id] = (doc, files)
    return out


def write(folder: pathlib.Path = CASES) -> int:
    """Replace the ``gguf-*`` folders of ``folder`` with every case; returns how many were written."""
    documents = case_documents()  # first: a case that fails to build leaves the folder as it was
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"{PREFIX}*"):
        shutil.rmtree(old)
    write_documents(folder, documents)
    return len(documents)


if __name__ == "__main__":
    from execution_gen.common import output_folder  # noqa: PLC0415 (beside this file)

    out = output_folder(__doc__, CASES, "execution")
    print(f"{write(out)} LLM-format execution cases in {out}")
