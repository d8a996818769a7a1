"""`onnx-qtypes compare`: the first tensor where a backend departs from the reference.

What a vendor's optimized kernels compute is never asserted here. The departures are built: backends in
compare_backends.py shift one chosen tensor on onnxruntime's unoptimized path, so where the backend departs is
known by construction; onnxruntime's unoptimized path (the definition path) must agree on every corpus model.
"""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from builders import ROOT
from corpus import corpus_paths

from onnx_qtypes.cli import main
from onnx_qtypes.compare import BEYOND, NOT_OBSERVED, OK, compare
from onnx_qtypes.compare.inputs import draw
from onnx_qtypes.compare.page import render_html
from onnx_qtypes.compare.render import render_json, render_text
from onnx_qtypes.compare.sides import build
from onnx_qtypes.proto.reader import read_model
from onnx_qtypes.reference_ops import ReferenceEvaluator

TYPED = ROOT / "examples" / "typed_cnn.onnx"


def _row(result, tensor):
    return next(r for r in result.rows if r.tensor == tensor)


def _states(row):
    return {s.name: s.state for s in row.inputs}


def test_names_the_perturbed_tensor_of_a_typed_model_and_its_agreeing_inputs():
    result = compare(TYPED, "compare_backends:PerturbingTypedConv")
    first = result.first
    assert (first.tensor, first.node, first.op) == ("conv_q", "conv", "Conv")
    assert first.status == BEYOND and first.deviation > first.tolerance == 1
    assert _states(first) == {"x_q": "agreed", "w": "constant", "b": "constant"}
    assert [r.tensor for r in result.rows] == ["x_q", "conv_q", "relu_q", "pool_q", "y"]  # the model's node order
    assert _row(result, "x_q").status == OK
    assert result.exit_code == 1


def test_names_the_perturbed_tensor_of_a_qdq_file_by_the_files_names():
    """conv2's output is 'c2' in the lifted model; the file stores it as c2_QuantizeLinear_Output."""
    result = compare(corpus_paths()["cnn-qdq_u8_pertensor"], "compare_backends:PerturbingQdqConv2")
    first = result.first
    assert (first.tensor, first.node, first.op) == ("c2_QuantizeLinear_Output", "conv2", "Conv")
    assert _states(first) == {"r1_QuantizeLinear_Output": "agreed", "w2_quantized": "constant",
                              "b2_quantized": "constant"}
    before = result.rows[:result.rows.index(first)]
    assert [r.tensor for r in before] == ["x_QuantizeLinear_Output", "r1_QuantizeLinear_Output"]
    assert all(r.status == OK for r in before)


def _pair(name: str, domain: str = "") -> list[onnx.NodeProto]:
    """QuantizeLinear / DequantizeLinear of ``name`` with ``name``_s / ``name``_z: ``name``_q, then ``name``_d."""
    return [onnx.helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"], name=f"{name}_Q",
                                  domain=domain),
            onnx.helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_d"],
                                  name=f"{name}_DQ", domain=domain)]


def _compared(tmp_path, capsys, nodes, io: tuple[tuple, tuple], inits, opsets=(("", 21),), ir_version=10) -> str:
    """compare's text report on a float-input model of ``nodes`` (``io``: (name, shape) of the input and the
    output) against onnxruntime's unoptimized path, which must agree with the reference (exit 0)."""
    from onnx import TensorProto, helper

    (x, x_shape), (y, y_shape) = io
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(x, TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, ir_version=ir_version,
                                opset_imports=[helper.make_opsetid(d, v) for d, v in opsets]), path)
    assert main(["compare", str(path), "--backend", "onnxruntime-unoptimized"]) == 0
    return capsys.readouterr().out


def _scalars(*values: tuple[str, float, type]) -> list[onnx.TensorProto]:
    return [numpy_helper.from_array(np.array(v, dtype), n) for n, v, dtype in values]


def test_a_scalar_constant_node_quantized_in_a_qdq_file_is_compared(tmp_path, capsys):
    """onnxruntime's quantizer quantizes paddle2onnx's 0-d Constant nodes (PP-OCR's HardSwish factors) with a
    QuantizeLinear the lift keeps: compare ended in an internal error there (numpy's nonzero of a 0-d array)."""
    inits = _scalars(("x_s", 0.05, np.float32), ("x_z", 128, np.uint8), ("c_s", 0.02, np.float32), ("c_z", 0, np.uint8),
                     ("y_s", 0.25, np.float32), ("y_z", 120, np.uint8))
    three = onnx.helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(3.0, np.float32)))
    nodes = [three, *_pair("x"), *_pair("c"), onnx.helper.make_node("Mul", ["x_d", "c_d"], ["y"]), *_pair("y")]
    out = _compared(tmp_path, capsys, nodes, (("x", [2, 3]), ("y_d", [2, 3])), inits)
    assert re.search(r"^c_q\s+c_Q\s+QuantizeLinear\s+steps\s+0\s+0 of 1\s", out, re.M), out


def test_an_unsorted_qdq_file_is_compared_as_its_sorted_form_and_named_as_the_file_has_it(tmp_path, capsys):
    """Quark XINT8 writes its nodes out of order; check, run, lift and lower sort them (the shared reader), but compare
    read the file by itself and refused it ("reads 'y_q', which no graph input, initializer or earlier node
    defines"). An unnamed node is named by its index in the file, not in the sorted graph."""
    inits = _scalars(("x_s", 0.05, np.float32), ("x_z", 128, np.uint8), ("y_s", 0.25, np.float32),
                     ("y_z", 120, np.uint8))
    nodes = [onnx.helper.make_node("Relu", ["x_d"], ["y"]), *_pair("x"), *_pair("y")]  # sorted, the Relu is third
    out = _compared(tmp_path, capsys, nodes, (("x", [2, 3]), ("y_d", [2, 3])), inits)
    rows = re.findall(r"^(\S+)\s+(\S+(?: \d+)?)\s+(\w+)\s+steps\s", out, re.MULTILINE)
    assert rows == [("x_q", "x_Q", "QuantizeLinear"), ("y_q", "node 0", "Relu")], out


@pytest.mark.parametrize("zero_points", ["initializers", "constant-nodes"])
def test_4_bit_tensors_of_com_microsoft_pairs_are_read_from_onnxruntime(tmp_path, capsys, zero_points):
    """onnxruntime's quantizer writes 4-bit activations (a4w4) with com.microsoft QuantizeLinear before opset 21,
    whose outputs onnx's inference cannot type: exposed untyped, onnxruntime handed them to numpy, which has no
    4-bit type, and compare ended with 'No corresponding Numpy type for Tensor Type. Int4x2'."""
    from onnx import TensorProto, helper

    inits = _scalars(("x_s", 0.25, np.float32), ("r_s", 0.125, np.float32))
    zeros = [helper.make_tensor(name, TensorProto.INT4, [], [zero]) for name, zero in (("x_z", 1), ("r_z", 0))]
    constants = []
    if zero_points == "initializers":
        inits += zeros
    else:  # as torch-style exporters write them
        constants = [helper.make_node("Constant", [], [z.name], value=z) for z in zeros]
    nodes = [*constants, *_pair("x", "com.microsoft"), helper.make_node("Relu", ["x_d"], ["r"], name="relu"),
             *_pair("r", "com.microsoft")]
    out = _compared(tmp_path, capsys, nodes, (("x", [2, 4]), ("r_d", [2, 4])), inits,
                    opsets=(("", 17), ("com.microsoft", 1)), ir_version=8)
    assert re.search(r"^r_q\s+relu\s+Relu\s+steps\s+0\s+0 of 8\s", out, re.M), out


def test_a_matmul_nbits_departing_under_accuracy_level_4_says_why(tmp_path, capsys):
    """accuracy_level 4 lets onnxruntime quantize A to int8 (the attribute's meaning in com.microsoft): compare
    names the MatMulNBits as the first departure, and now says that this is why. The same weight without the
    attribute agrees."""
    from corpus_matmul_nbits import nbits_feeds, nbits_models

    models = nbits_models()
    name = "ort-q4-asym-k96n20b64-accuracy4"
    for model, departs in ((models[name], True), (_without_accuracy_level(models[name]), False)):
        path, inputs = tmp_path / "m.onnx", tmp_path / "in.npz"
        onnx.save(model, path)
        np.savez(inputs, **nbits_feeds(model))
        assert main(["compare", str(path), "--backend", "onnxruntime-unoptimized", "--inputs", str(inputs)]) == departs
        out = capsys.readouterr().out
        hint = "note: the file's MatMulNBits has accuracy_level 4: onnxruntime may compute its input A in int8"
        assert (hint in out) == departs, out


def _without_accuracy_level(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for node in copy.graph.node:
        kept = [a for a in node.attribute if a.name != "accuracy_level"]
        del node.attribute[:]
        node.attribute.extend(kept)
    return copy


def test_a_near_tie_in_a_constant_weight_a_kept_quantize_linear_reads_is_allowed_its_step(tmp_path, capsys):
    """onnxruntime's PP-OCR `wpair` files quantize float weights at run time. One weight, 0.15113602578639984 over
    scale 0.003250237088650465, is 46.50000036 exactly and 46.5 in float32: the definition stores 47, onnxruntime
    46, one step the spec allows a near tie (semantics.md#quantize-precision). The near ties were looked for in
    the intermediate values only, so a constant's got no step and compare called the file departed (exit 1)."""
    w = np.array([[0.15113602578639984, 0.5], [0.25, -0.125]], np.float32)
    inits = [numpy_helper.from_array(w, "w"), *_scalars(("w_s", 0.003250237088650465, np.float32), ("w_z", 0, np.int8))]
    nodes = [*_pair("w"), onnx.helper.make_node("MatMul", ["a", "w_d"], ["y"], name="mm")]
    out = _compared(tmp_path, capsys, nodes, (("a", [1, 2]), ("y", [1, 2])), inits)
    assert re.search(r"^w_q\s+w_Q\s+QuantizeLinear\s+steps\s+1\s+0 of 4\s", out, re.M), out  # 47 against 46


def test_a_tensor_whose_exposure_changes_the_backend_is_not_read_from_the_exposed_run():
    """The backend shifts conv_q only while conv_q is hidden (a fused kernel): its value from a run exposing it
    would say it agrees. compare reads each tensor alone, leaves conv_q unobserved and names the first reader
    beyond what any conformant conv_q allows."""
    result = compare(TYPED, "compare_backends:FusingTypedConv")
    conv = _row(result, "conv_q")
    assert conv.status == NOT_OBSERVED and "exposing it changes" in conv.note
    assert "run of its own" in result.how and result.runs == 2 + len(result.rows)
    first = result.first
    assert (first.tensor, first.node) == ("relu_q", "relu")
    assert _states(first) == {"conv_q": "not observed"}
    assert result.exit_code == 1


@pytest.mark.parametrize("name", sorted(corpus_paths()))
def test_onnxruntime_unoptimized_agrees_on_every_corpus_model(name):
    result = compare(corpus_paths()[name], "onnxruntime-unoptimized")
    assert result.first is None, result.first
    assert result.rows and all(r.status == OK for r in result.rows)
    assert "changed nothing" in result.how and result.runs == 2


def test_onnxruntime_unoptimized_agrees_on_the_typed_example(capsys):
    assert main(["compare", str(TYPED), "--backend", "onnxruntime-unoptimized"]) == 0
    assert "no tensor beyond its tolerance: 5 of 5" in capsys.readouterr().out


def test_a_backend_reading_the_case_folder_finds_the_same_inputs():
    result = compare(TYPED, "compare_backends:FromFolder")
    assert result.exit_code == 0 and all(r.status == OK for r in result.rows)


def test_qoperator_files_are_compared_under_their_own_names():
    result = compare(corpus_paths()["cnn-qop_u8"], "onnxruntime-unoptimized")
    conv = _row(result, "c1_quantized")  # QLinearConv's output in the file
    assert (conv.node, conv.op) == ("conv1_quant", "QLinearConv")
    assert result.exit_code == 0


def test_the_first_departure_of_the_fused_path_has_no_input_beyond_tolerance():
    """Whatever onnxruntime's fused kernels compute (not asserted), the first row beyond its tolerance comes after
    rows that are not, and none of its inputs is beyond."""
    result = compare(corpus_paths()["mlp-qdq_a16w8"], "onnxruntime")
    if result.first is None:
        assert result.exit_code == 0
        return
    at = result.rows.index(result.first)
    assert all(r.status != BEYOND for r in result.rows[:at])
    assert all(s.state != "beyond tolerance" for s in result.first.inputs)
    assert result.exit_code == 1


def test_inputs_from_a_file_are_the_inputs_used(tmp_path):
    """Drawn inputs saved and given back give the same table; another seed draws other inputs."""
    sides = build(read_model(TYPED))
    feeds, _ = draw(sides.typed, ReferenceEvaluator(sides.typed).input_specs, 7)
    np.savez(tmp_path / "in.npz", **feeds)
    drawn = compare(TYPED, "compare_backends:PerturbingTypedConv", seed=7)
    given = compare(TYPED, "compare_backends:PerturbingTypedConv", tmp_path / "in.npz")
    assert given.feeds_how == [f"from {tmp_path / 'in.npz'}"]
    table = [(r.tensor, r.deviation, r.beyond) for r in given.rows]
    assert table == [(r.tensor, r.deviation, r.beyond) for r in drawn.rows]
    other, _ = draw(sides.typed, ReferenceEvaluator(sides.typed).input_specs, 8)
    assert not np.array_equal(other["x"], feeds["x"])


def test_json_and_exit_codes(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["compare", str(TYPED), "--backend", "compare_backends:PerturbingTypedConv", "--format", "json",
                 "-o", str(out)]) == 1
    data = json.loads(out.read_text())
    assert data["first"]["tensor"] == "conv_q" and data["summary"]["beyond"] >= 1
    assert [t["tensor"] for t in data["tensors"]] == ["x_q", "conv_q", "relu_q", "pool_q", "y"]
    assert {i["name"]: i["state"] for i in data["first"]["inputs"]}["x_q"] == "agreed"


def test_html_page_is_self_contained_and_escapes_names(tmp_path):
    model = onnx.load(TYPED)
    for node in model.graph.node:  # rename conv_q to a name that is markup
        node.input[:] = ["<i>c</i>" if n == "conv_q" else n for n in node.input]
        node.output[:] = ["<i>c</i>" if n == "conv_q" else n for n in node.output]
    for vi in model.graph.value_info:
        if vi.name == "conv_q":
            vi.name = "<i>c</i>"
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    page = tmp_path / "r.html"
    argv = ["compare", str(path), "--backend", "onnxruntime-unoptimized", "--format", "html", "-o", str(page)]
    assert main(argv) == 0
    text = page.read_text()
    from onnx_qtypes.report.style import CSS

    assert CSS in text and "<script" not in text and "http" not in text.replace("http-equiv", "")
    assert "&lt;i&gt;c&lt;/i&gt;" in text and "<i>c</i>" not in text


@pytest.mark.parametrize("argv, says", [
    (["missing.onnx", "--backend", "reference"], "no such file"),
    (["{float}", "--backend", "reference"], "nothing to compare"),
    (["{typed}", "--backend", "nope"], "unknown backend"),
    (["{typed}", "--backend", "compare_backends:Declines"], "no int8 Conv"),
    (["{typed}", "--backend", "compare_backends:NoOutputs"], "graph output 'y'"),
    (["{typed}", "--backend", "results:/tmp"], "results:DIR"),
    (["{typed}", "--backend", "reference", "--inputs", "{bad_npz}"], "'x'"),
    (["{typed}", "--backend", "reference", "-o", "{typed}"], "being read"),
    (["{typed}", "--backend", "reference", "--seed", "-1"], "--seed"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, says):
    float_path = tmp_path / "float.onnx"
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])]))
    onnx.save(model, float_path)
    bad = tmp_path / "bad.npz"
    np.savez(bad, z=np.zeros(3, np.float32))
    args = [a.format(float=float_path, typed=TYPED, bad_npz=bad) for a in argv]
    assert main(["compare", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and says in err, err


OPS = ROOT / "examples" / "ops"


def test_a_wrong_float_output_is_a_departure_though_every_quantized_tensor_agrees():
    """A QDQ model (uint8 activations, int8 weights) on a backend whose final DequantizeLinear uses twice its scale:
    every quantized tensor is the reference's, the model's float output is not."""
    result = compare(corpus_paths()["cnn-qdq_reduce_range"], "compare_backends:DoublesFinalScale")
    first = result.first
    assert (first.tensor, first.op, first.unit) == ("y", "DequantizeLinear", "real")
    assert all(r.status == OK for r in result.rows[:result.rows.index(first)])
    assert [s.state for s in first.inputs if s.state not in ("constant", "fed")] == ["agreed"]
    assert result.exit_code == 1


@pytest.mark.parametrize("example", ["dequantize_linear", "dynamic_quantize_linear"])
def test_models_whose_only_output_leaves_the_quantized_domain_are_compared(example, capsys):
    """No quantized tensor is written inside these examples (a DequantizeLinear; a DynamicQuantizeLinear feeding a
    float MatMul): their float outputs, and the dynamic tensor, are what is compared."""
    assert main(["compare", str(OPS / f"{example}.onnx"), "--backend", "onnxruntime-unoptimized"]) == 0
    out = capsys.readouterr().out
    assert "no tensor beyond its tolerance" in out and " real " in out


def test_a_dynamic_tensor_is_compared_by_the_real_values_its_bound_parameters_give():
    """The backend quantizes twice the input: its stored values agree with the reference's, the scale it binds and
    so every real value is twice the definition's. The dynamic tensor is the first departure."""
    result = compare(OPS / "dynamic_quantize_linear.onnx", "compare_backends:DoublesDynamicInput")
    first = result.first
    assert (first.tensor, first.op, first.unit) == ("xq", "DynamicQuantizeLinear", "steps")
    assert "the backend bound scale" in first.note
    agreeing = compare(OPS / "dynamic_quantize_linear.onnx", "onnxruntime-unoptimized")
    assert _row(agreeing, "xq").status == OK and _row(agreeing, "xq").deviation == 0


@pytest.mark.parametrize("chain", ["attention", "convolutions", "gemm_concat_pad"])
def test_every_tensor_of_a_chain_has_a_bound_that_holds(chain):
    """MatMul of two activations, LayerNormalization, ConvTranspose, Conv with an activation weight, Gemm of two
    activations, Concat / Pad with other parameters, Div (tests/chain_models.py): judged on the deviations its
    inputs measured, every tensor has a finite tolerance, and it holds for an implementation one step off wherever
    its class allows, for the integer kernels and for onnxruntime's unoptimized path."""
    from chain_models import CHAINS

    model, feeds = CHAINS[chain]()
    for backend in ("compare_backends:OneStepOff", "reference-integer", "onnxruntime-unoptimized"):
        result = compare(model, backend, feeds)
        assert all(math.isfinite(r.tolerance) for r in result.rows), [(r.tensor, r.reason) for r in result.rows]
        assert {r.status for r in result.rows} == {OK} and result.exit_code == 0, backend
    assert max(r.deviation for r in result.rows) == 0  # onnxruntime's unoptimized path, here exact


def test_the_tolerance_of_an_agreeing_node_is_the_suites(tmp_path):
    """One rule: on the suite's own cases (one per operator, no near tie), compare's tolerance for each output equals
    the case's, and the reason is the same class's."""
    from onnx_qtypes.conformance import load_cases

    seen = {}
    for case in load_cases():
        if case.kind != "execution" or "near-ties" in case.tolerance_reason or "chain" in case.tags.get("feature", ()):
            continue
        seen.setdefault(case.operator, case)
    checked = 0
    for case in seen.values():
        result = compare(case.model_path, "reference", case.feeds())
        for row in result.rows:
            if row.tensor in case.tolerance and row.unit == "steps":
                assert row.tolerance == case.tolerance[row.tensor], (case.id, row.tensor)
                assert row.reason.split(" (")[0] in case.tolerance_reason, (case.id, row.reason)
                checked += 1
    assert checked >= 30


@pytest.mark.parametrize(("example", "backend"), [
    *[("loop", b) for b in ("onnxruntime", "onnxruntime-unoptimized", "compare_backends:FromFolder")],
    # scan runs: judged on onnxruntime's unoptimized path only (its fused kernels are not what the suite asserts)
    *[("scan", b) for b in ("onnxruntime-unoptimized", "compare_backends:FromFolder")],
])
def test_a_model_lower_refuses_is_one_line_and_exit_2_for_a_standard_onnx_backend(example, backend, capsys):
    """lower writes If / Loop / Scan bodies that only move stored values (scan.onnx); loop.onnx's body computes, so a
    backend running standard ONNX cannot run it: one line naming why, never a traceback. The reference runs both."""
    code = main(["compare", str(OPS / f"{example}.onnx"), "--backend", backend])
    err = capsys.readouterr().err
    if example == "scan":
        assert code == 0, err
        return
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "internal error" not in err and "computes on quantized values" in err, err
    assert main(["compare", str(OPS / f"{example}.onnx"), "--backend", "reference"]) == 0


def test_reasons_and_page_cite_the_spec_not_decision_numbers(tmp_path, capsys):
    result = compare(TYPED, "compare_backends:PerturbingTypedConv")
    text = render_text(result) + render_json(result) + render_html(result)
    assert "proposal/spec/semantics.md#tolerance-table" in text and "proposal/spec/semantics.md#chains" in text
    assert not re.search(r"\(A\.\d|decisions", text), re.search(r".{60}\(A\.\d.{20}", text)


def test_the_references_numpy_warnings_are_not_printed(tmp_path):
    """broken_qdq_cnn.onnx with its zero scale made infinite (a pair lift keeps as written): onnx.reference's
    DequantizeLinear computes 0 * inf = NaN, numpy warns, which is no finding of compare."""
    model = onnx.load(ROOT / "examples" / "broken_qdq_cnn.onnx")
    (scale,) = [t for t in model.graph.initializer if t.name == "relu_q_scale"]
    scale.CopyFrom(numpy_helper.from_array(np.array(np.inf, np.float32), scale.name))
    onnx.save(model, tmp_path / "inf_scale.onnx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare(tmp_path / "inf_scale.onnx", "onnxruntime-unoptimized")
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]


def test_dynamic_outputs_are_compared_with_the_parameters_the_calling_convention_returns():
    """A dynamic graph output returns y.scale / y.zero_point beside it; DynamicQuantizeLinear of all zeros may bind
    any positive finite scale (onnxruntime binds 1, the reference 1/255), its stored and real values are the same."""
    from onnx_qtypes.conformance import load_cases

    cases = {c.id: c for c in load_cases(filter="dynamic")}
    output = cases["dynamic-graph-output-int8-float32"]
    result = compare(output.model_path, "onnxruntime-unoptimized", output.feeds())
    assert [(r.tensor, r.unit, r.status) for r in result.rows] == [("y", "steps", OK)]
    zeros = cases["dynamic-quantize-linear-all-zero"]
    result = compare(zeros.model_path, "onnxruntime-unoptimized", zeros.feeds())
    assert result.exit_code == 0 and _row(result, "y").deviation == 0
    assert "any positive finite value" in _row(result, "y_scale").note


def test_a_tensor_that_deviates_where_the_rule_gives_no_bound_is_listed_as_not_judged():
    """Resize in cubic mode (weights partly negative) has no bound from an input that deviates: one step off
    upstream, its output is reported as not judged, and the all-clear says so instead of covering it."""
    from chain_models import typed_chain
    from onnx import helper

    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"),
             helper.make_node("Resize", ["s", "", "scales"], ["y"], name="resize", mode="cubic")]
    model, feeds = typed_chain("cubic", nodes, {"x": (1, 1, 4, 4)}, {},
                               {"scales": np.array([1, 1, 2, 2], np.float32)}, ["y"])
    result = compare(model, "compare_backends:OneStepOff", feeds)
    resize = _row(result, "y")
    assert resize.status == "no bound" and not math.isfinite(resize.tolerance) and resize.deviation > 0
    assert result.exit_code == 0 and "not judged" in render_text(result)


def test_a_dequantize_after_a_kept_qoperator_node_is_not_blamed_for_it(tmp_path):
    """onnxruntime's QOperator BERT: its -inf mask at scale inf keeps the QLinearAdd and the QLinearSoftmax reading it
    as written (plain integers), and where onnxruntime's kernels and the definition part on inf * 0 the softmax's
    integers differ. Those integers are no quantized tensor, so no row judged them; the table took the kept
    com.microsoft node for plain ONNX (exact) and blamed the DequantizeLinear after it (exit 1). The kept node
    carries no bound now: the DequantizeLinear is not judged, and nothing is beyond its tolerance."""
    ms = "com.microsoft"
    inits = {"xs": np.float32(0.1), "xz": np.int8(0), "mask": np.zeros((2, 4), np.int8), "inf": np.float32(np.inf),
             "z0": np.int8(0), "ps": np.float32(1 / 256), "pz": np.int8(-128)}
    nodes = [onnx.helper.make_node("QLinearAdd", ["x", "xs", "xz", "mask", "inf", "z0", "inf", "z0"], ["s"], name="add",
                                   domain=ms),
             onnx.helper.make_node("QLinearSoftmax", ["s", "inf", "z0", "ps", "pz"], ["p"], name="softmax", domain=ms,
                                   axis=-1, opset=13),
             onnx.helper.make_node("DequantizeLinear", ["p", "ps", "pz"], ["y"], name="dq")]
    graph = onnx.helper.make_graph(nodes, "mask", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.INT8,
                                                                                      [2, 4])],
                                   [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4])],
                                   [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17),
                                                         onnx.helper.make_opsetid(ms, 1)], ir_version=8)
    path = tmp_path / "mask.onnx"
    onnx.save(model, path)
    np.savez(tmp_path / "in.npz", x=np.array([[3, -7, 20, 1], [0, 5, 5, -128]], np.int8))
    result = compare(path, "onnxruntime-unoptimized", tmp_path / "in.npz")
    row = next(r for r in result.rows if r.tensor == "y")
    assert row.status != BEYOND and result.exit_code == 0, render_text(result)
    assert "no bound" in row.reason or "no known bound" in row.reason, row.reason


def test_the_accuracy_level_hint_names_the_type_onnxruntime_s_own_schema_gives_each_level():
    """The hint's table against onnxruntime's MatMulNBits schema text ("0(unset), 1(fp32), 2(fp16), 3(bf16), or
    4(int8)"): every level that narrows A gets a hint naming its type; unset and fp32 get none."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    from onnx_qtypes.compare.comparison import _accuracy_hint
    from onnx_qtypes.interop.matmul_nbits import ACCURACY_KEY

    (schema,) = [s for s in ort_c.get_all_operator_schema() if s.name == "MatMulNBits" and s.domain == "com.microsoft"]
    said = dict(re.findall(r"(\d)\((\w+)\)", schema.attributes["accuracy_level"].description))
    assert set(said) == {"0", "1", "2", "3", "4"}, said
    names = {"unset": None, "fp32": None, "fp16": "float16", "bf16": "bfloat16", "int8": "int8"}
    for level, short in said.items():
        node = onnx.helper.make_node("MatMul", ["a", "b"], ["y"])
        node.metadata_props.add(key=ACCURACY_KEY, value=level)
        hint = _accuracy_hint(node)
        if names[short] is None:
            assert hint == "", (level, hint)
        else:
            assert f"accuracy_level {level}: onnxruntime may compute its input A in {names[short]} " in hint, hint
    assert _accuracy_hint(onnx.helper.make_node("MatMul", ["a", "b"], ["y"])) == ""
