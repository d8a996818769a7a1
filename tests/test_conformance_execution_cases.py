"""The execution conformance cases (conformance_tests/cases/execution): valid per case.schema.json, regenerated
byte for byte by their generator, enough of them and small enough, and our reference reproduces every expected
output (the definitional kernels exactly, the integer kernels within each case's tolerance)."""

from __future__ import annotations

import json
import re

import jsonschema
import numpy as np
import onnx
import pytest
from builders import ROOT, load_script
from onnx import numpy_helper

import onnx_qtypes
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.conformance.execution_cases import load_case
from onnx_qtypes.conformance.judging import float_steps
from onnx_qtypes.reference_ops import ReferenceEvaluator

FOLDER = ROOT / "conformance_tests" / "cases" / "execution"
SCHEMA = json.loads((ROOT / "conformance_tests" / "case.schema.json").read_text())
# gguf-* cases (LLM weight formats) are written by the same command through conformance_tests/generators/gguf_cases.py
# and checked case by case in test_gguf_cases.py; the drift test below covers every folder
ALL = sorted(p.name for p in FOLDER.iterdir() if p.is_dir())
CASES = [c for c in ALL if not c.startswith("gguf-")]
OPS = sorted(p.stem for p in (ROOT / "reference_ops" / "ops").glob("[a-z]*.py") if p.stem != "__init__")


def _case(case_id: str) -> dict:
    return json.loads((FOLDER / case_id / "case.json").read_text())


def _files(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _snake(op: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


def test_committed_cases_are_what_the_generator_writes(tmp_path):
    written = load_script("conformance_tests/generators/execution_cases.py").write(tmp_path / "execution")
    assert written == len(ALL)
    fresh = _files(tmp_path / "execution")
    committed = _files(FOLDER)
    assert sorted(fresh) == sorted(committed), "run python conformance_tests/generators/execution_cases.py"
    for name, data in fresh.items():
        assert data == committed[name], f"{name} is stale: run python conformance_tests/generators/execution_cases.py"


def test_the_suite_is_large_enough_small_enough_and_covers_every_op():
    assert len(CASES) >= 300
    assert sum(len(b) for b in _files(FOLDER).values()) < 20 * 2**20
    cases = [_case(c) for c in CASES]
    assert {_snake(c["operator"]).replace("mat_mul", "matmul") for c in cases} >= set(OPS), set(OPS)
    tags = {(c["tags"]["storage"], c["tags"]["expressed"]) for c in cases}
    for storage in ("int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2"):
        assert {(storage, "float32"), (storage, "float16")} <= tags, storage
    granularity = {(c["operator"], c["tags"].get("weight_granularity", c["tags"]["granularity"])) for c in cases}
    for op in ("Conv", "ConvTranspose", "MatMul", "Gemm"):
        assert {(op, "per-tensor"), (op, "per-axis"), (op, "blocked")} <= granularity, op
    for op in ("QuantizeLinear", "DequantizeLinear"):
        assert {(op, "per-axis"), (op, "blocked")} <= granularity, op
    ids = set(CASES)
    chains = [c for c in CASES if any(c.startswith(p) for p in ("conv-relu-max_pool-", "matmul-add-",
                                                               "reshape-requantize-concat-", "quantize-relu-dequantize-"))]
    assert len(chains) >= 20, "small multi-op graphs where requantization chains"
    assert {"dynamic_quantize_linear-uint8-float32-mixed", "quantize_linear-binds-dynamic-int8-float32",
            "dynamic_quantize_linear-matmul-int8-float32-per-axis"} <= ids, "dynamic types"
    assert {"matmul-int16-wint8-float32-per-tensor", "conv-uint8-wint4-float32-per-axis"} <= ids, "mixed storage"
    for name in ("ties", "saturation", "zp-min", "zp-max", "requantize-ties"):
        assert any(c.startswith(f"{name}-") for c in CASES), name
    # no dead cases: every case has a standard-ONNX form (int16 / uint16 with float16 too: lower computes those
    # in float32 inside), so "unsupported" means a runtime declined; the one exception is a dynamic float8 / float4
    # type quantized at run time, whose symmetric parameters lower does not write (interop.md#lower-dynamic): those
    # cases hold typed readers to semantics.md#dynamic-parameters and say why they have no standard form
    typed_only = [c for c in cases if c["qdq_model"] is None]
    assert typed_only and all(
        "dynamic" in c["tags"]["feature"] and c["tags"]["storage"] in ("float8e4m3fn", "float8e5m2", "float4e2m1")
        and c["qdq_unavailable"].endswith(f"a dynamic {c['tags']['storage']} type has no standard form")
        for c in typed_only), [(c["id"], c.get("qdq_unavailable")) for c in typed_only]


def _read(folder, prefix: str, names: list[str]) -> list[np.ndarray]:
    out = []
    for i, name in enumerate(names):
        tensor = onnx.load_tensor(str(folder / "test_data_set_0" / f"{prefix}_{i}.pb"))
        assert tensor.name == name
        out.append(numpy_helper.to_array(tensor))
    return out


@pytest.mark.parametrize("case_id", CASES)
def test_case_meets_the_schema_and_our_reference_meets_the_case(case_id):
    case = _case(case_id)
    jsonschema.validate(case, SCHEMA)
    assert case["id"] == case_id and case["kind"] == "execution"
    document, anchor = case["spec"].split("#")
    assert f'<a id="{anchor}"></a>' in (ROOT / document).read_text(encoding="utf-8"), case["spec"]
    folder = FOLDER / case_id
    model = onnx_qtypes.load((folder / case["model"]).read_bytes())
    errors = [d for d in iter_diagnostics(model) if d.severity.value == "error"]
    assert not errors, [str(d) for d in errors[:3]]  # a valid typed model: a checker that passes it is right
    graph_inputs = [i.name for i in model.graph.input]
    # after the graph inputs: the <x>.scale / <x>.zero_point feeds of dynamic graph inputs (the calling convention)
    assert case["inputs"][:len(graph_inputs)] == graph_inputs
    assert all(n.rsplit(".", 1)[0] in graph_inputs for n in case["inputs"][len(graph_inputs):])
    graph_outputs = [o.name for o in model.graph.output]
    # after the graph outputs: <y>.scale / <y>.zero_point of dynamic graph outputs (the calling convention)
    assert case["outputs"][:len(graph_outputs)] == graph_outputs
    convention = case["outputs"][len(graph_outputs):]
    assert all(n.rsplit(".", 1)[0] in graph_outputs for n in convention)
    if case["qdq_model"] is None:  # typed-only: lower refuses it, and the case says why
        with pytest.raises(onnx_qtypes.QTypesError, match=re.escape(case["qdq_unavailable"])):
            onnx_qtypes.lower(model, dynamic_inputs="reals" if "dynamic-input-reals" in case["tags"]["feature"]
                              else "storage")
    else:
        qdq = onnx.load(str(folder / case["qdq_model"]))
        onnx.checker.check_model(qdq, full_check=True)
        storages = {q.storage for q in onnx_qtypes.quantized_tensors(model).values()}
        e8m0 = any(t.data_type == onnx.TensorProto.FLOAT8E8M0 for t in qdq.graph.initializer)  # microscaling scales
        assert (qdq.ir_version, [(o.domain, o.version) for o in qdq.opset_import if o.domain in ("", "ai.onnx")]) == (
            (13, [("", 25)]) if storages & {"int2", "uint2"} or e8m0 else (11, [("", 23)])
            if "float4e2m1" in storages else (10, [("", 21)]))
        names = [i.name for i in qdq.graph.input]
        assert [n for n in names if n in case["inputs"]] == case["inputs"]
        defaults = {t.name for t in qdq.graph.initializer}  # a case may leave out an optional input (x.zero_point)
        assert all(n in defaults for n in names if n not in case["inputs"])
        assert [o.name for o in qdq.graph.output] == case["outputs"]
    feeds = dict(zip(case["inputs"], _read(folder, "input", case["inputs"])))
    expected = _read(folder, "output", case["outputs"])
    definitional = ReferenceEvaluator(model, kernels="definitional").run(None, feeds)
    integer = ReferenceEvaluator(model, kernels="integer").run(None, feeds)
    for name in convention:  # the parameters the reference chose for a dynamic graph output
        tensor, field = name.rsplit(".", 1)
        index = graph_outputs.index(tensor)
        chosen = getattr(definitional[index], "qtype")
        want = expected[len(graph_outputs) + convention.index(name)]
        value = chosen.scale if field == "scale" else chosen.zero_point
        np.testing.assert_array_equal(np.asarray(value, np.float64).reshape(want.shape), want.astype(np.float64))
    expected = expected[:len(graph_outputs)]
    quantized = onnx_qtypes.quantized_tensors(model)
    for name, want, exact, approx in zip(case["outputs"], expected, definitional, integer):
        exact, approx = np.asarray(exact), np.asarray(approx)
        assert exact.shape == approx.shape == want.shape, name
        if name in quantized and not quantized[name].storage_type.is_float:
            want64 = want.astype(np.int64)
            np.testing.assert_array_equal(exact.astype(np.int64), want64, err_msg=name)
            steps = int(np.max(np.abs(approx.astype(np.int64) - want64), initial=0))
            assert steps <= case["tolerance"][name], f"{name}: integer kernels {steps} steps from the expected output"
        else:  # float outputs and float8 / float4 storage (no integer kernel: the definition runs)
            assert exact.dtype == want.dtype, name
            wide = want.astype(np.float64)  # NaN equals NaN there (not in float8 arrays)
            np.testing.assert_array_equal(exact.astype(np.float64), wide, err_msg=name)
            if case["tolerance"][name] == 0 or name in quantized:
                np.testing.assert_array_equal(approx.astype(np.float64), wide, err_msg=name)
            else:  # judged in the output's step (case.json "steps", or the DequantizeLinear input's scale)
                step = float_steps(load_case(folder))[name]
                diff = np.abs(approx.astype(np.float64) - want.astype(np.float64)) / step
                assert float(np.max(diff, initial=0)) <= case["tolerance"][name], name


def test_a_typed_only_case_is_unsupported_by_model_file_backends_with_its_reason():
    """A vendor subclass calling the shipped ``supports`` gets the case's reason, not an AttributeError."""
    from onnx_qtypes.conformance.backends import ModelFileBackend  # noqa: PLC0415

    case = load_case(FOLDER / "dynamic-graph-output-add-float8e4m3fn-float32")
    assert case.model_file("qdq") is None
    assert ModelFileBackend().supports(case) == case.qdq_unavailable != ""


@pytest.mark.parametrize("storage, largest", [("float8e4m3fn", 448.0), ("float8e5m2", 57344.0)])
def test_a_typed_only_float8_output_case_agrees_with_numpy_and_onnxruntime(storage, largest):
    """The typed-only dynamic float8 output cases rest on more than our reference: y.scale is max|a + b| / the
    largest finite value (symmetric, whatever the schema; semantics.md#calling-convention), computed here in numpy,
    and onnxruntime's unoptimized QuantizeLinear at that scale gives the expected y."""
    import onnxruntime as ort  # noqa: PLC0415 (the [ort] extra)
    from onnx import TensorProto, helper  # noqa: PLC0415

    folder = FOLDER / f"dynamic-graph-output-add-{storage}-float32"
    case = json.loads((folder / "case.json").read_text())
    assert case["qdq_model"] is None  # (a standard form would be checked by the case test above instead)
    types = onnx_qtypes.quantized_tensors(onnx.load(str(folder / "model.onnx")))
    a, b = _read(folder, "input", case["inputs"])
    y, y_scale, y_zero_point = _read(folder, "output", case["outputs"])
    reals = a.astype(np.float64) * types["a"].scale[0] + b.astype(np.float64) * types["b"].scale[0]
    np.testing.assert_allclose(float(y_scale), np.abs(reals).max() / largest, rtol=1e-6)
    assert float(np.asarray(y_zero_point, np.float64)) == 0.0
    zero = numpy_helper.from_array(np.zeros((), y.dtype), "z")
    scale = np.asarray(y_scale, np.float32).reshape(())
    graph = helper.make_graph(  # DequantizeLinear after: onnxruntime hands float8e5m2 outputs to no numpy type
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["r"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(y.shape))],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, list(y.shape))],
        [numpy_helper.from_array(scale, "s"), zero])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(onnx.helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString(), options)
    (got,) = session.run(None, {"x": reals.astype(np.float32)})
    np.testing.assert_array_equal(got, y.astype(np.float32) * scale)  # each rounds float8 * scale to float32 once


def _float_storage_data(case: dict, folder) -> list[tuple[str, str, np.ndarray]]:
    """(tensor, storage, values) of every float-storage tensor a case feeds or holds as a constant, in its storage
    type (zero points aside: they are 0 by definition; a dynamic input fed as reals is not storage)."""
    from onnx_qtypes.proto.encoding import tensor_array  # noqa: PLC0415

    model = onnx.load(str(folder / "model.onnx"))
    types = onnx_qtypes.quantized_tensors(model)
    arrays = dict(zip(case["inputs"], _read(folder, "input", case["inputs"])))
    arrays |= {t.name: tensor_array(t) for t in model.graph.initializer}
    return [(name, types[name].storage, array) for name, array in arrays.items()
            if name in types and types[name].storage_type.is_float and not name.endswith("zero_point")
            and array.dtype == types[name].storage_type.np_dtype]


def _binades(values: np.ndarray) -> set[int]:
    """The magnitude classes [2^(e-1), 2^e) the non-zero finite values fall in, as e (np.frexp's exponent)."""
    wide = np.abs(values.astype(np.float64))
    return set(np.frexp(wide[np.isfinite(wide) & (wide > 0)])[1].tolist())


def test_float_storage_data_reach_the_largest_values_and_every_magnitude_class():
    """A runtime that decodes a float storage type's large values wrongly (4 and 6 of float4e2m1, 448 of
    float8e4m3fn) must fail a case: every float-storage tensor a case feeds or holds reaches +max and -max; one
    with room for every binade of its type (two more elements than binades) holds a value of each, and a smaller
    one (float8e5m2's 32 binades in 24 elements) leaves no two adjacent binades out; a float4e2m1 tensor that
    can hold all of its type's finite values holds each."""
    from onnx_qtypes.proto.storage_types import STORAGE_TYPES  # noqa: PLC0415

    checked = set()
    for case_id in ALL:
        for name, storage, values in _float_storage_data(_case(case_id), FOLDER / case_id):
            st = STORAGE_TYPES[storage]
            wide = set(values.astype(np.float64).ravel().tolist())
            assert {st.max, -st.max} <= wide, (case_id, name)
            codes = np.arange(2 ** st.bits, dtype=np.uint8).view(st.np_dtype).astype(np.float64)
            every, held = _binades(codes), _binades(values)
            if values.size >= len(every) + 2:
                assert held == every, (case_id, name, sorted(every - held))
            else:
                assert all({e - 1, e, e + 1} & held for e in every), (case_id, name, sorted(every - held))
            if storage == "float4e2m1" and values.size >= np.isfinite(codes).sum():
                assert set(codes[np.isfinite(codes)].tolist()) <= wide, (case_id, name)
            checked.add(storage)
    assert checked == {s for s, st in STORAGE_TYPES.items() if st.is_float}


def test_the_float4_pow2_case_tells_rounding_up_from_down_and_nearest():
    """dynamic-graph-output-add-float4e2m1-float32 (SYMMETRIC_POW2_SCALE): the scale the definition rounds up
    (semantics.md#dynamic-parameters) is not the one rounding down or to the nearest power of two gives, and y is
    the reals quantized at the expected scale (ml_dtypes rounds to nearest, ties to even)."""
    import ml_dtypes  # noqa: PLC0415

    folder = FOLDER / "dynamic-graph-output-add-float4e2m1-float32"
    case = _case("dynamic-graph-output-add-float4e2m1-float32")
    types = onnx_qtypes.quantized_tensors(onnx.load(str(folder / "model.onnx")))
    assert types["y"].schema.name == "SYMMETRIC_POW2_SCALE" and types["y"].is_dynamic
    a, b = _read(folder, "input", case["inputs"])
    y, y_scale, _ = _read(folder, "output", case["outputs"])
    reals = a.astype(np.float64) * types["a"].scale[0] + b.astype(np.float64) * types["b"].scale[0]
    wanted = float(np.float32(np.abs(reals).max() / 6))  # the scale that maps the largest |real| to 6
    up, down, nearest = (2.0 ** f(np.log2(wanted)) for f in (np.ceil, np.floor, np.round))
    assert float(y_scale) == up and len({up, down}) == 2 and nearest == down
    assert abs(up - wanted) > abs(down - wanted)
    np.testing.assert_array_equal(y.astype(np.float64),
                                  (reals / up).astype(ml_dtypes.float4_e2m1fn).astype(np.float64))
