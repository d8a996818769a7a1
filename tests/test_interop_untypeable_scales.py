"""A quantizer's pair with a scale no type holds is kept as written, named, and still checked.

onnxruntime's quantize_static calibrates a -inf attention mask (as torch exports of BERT and GPT-2 write it) to
scale inf: its range [-inf, 0] has no finite width. The lift keeps those pairs as written, with a warning
naming each node, and lifts the rest; lower gives the file back bit for bit on onnxruntime; check reports
each kept pair (QT101), in the QDQ file and in the lifted one (proposal/spec/interop.md#lift-untypeable-scales).
"""

from __future__ import annotations

import functools
import pathlib

import numpy as np
import onnx
import pytest
from builders import IR_VERSION
from corpus import _quiet, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import diagnose, lower, quantized_tensors
from onnx_qtypes.cli import main
from onnx_qtypes.interop import lift_model
from onnx_qtypes.reference_ops import ReferenceEvaluator

pytest.importorskip("onnxruntime")


def _masked_attention() -> onnx.ModelProto:
    """y = Softmax(x + Where(m > 0, 0, -inf)) @ w: the additive attention mask of a torch export."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array(-np.inf, np.float32), "minus_inf"),
             numpy_helper.from_array(rng.normal(0, 0.3, (4, 4)).astype(np.float32), "w")]
    nodes = [helper.make_node("Greater", ["m", "zero"], ["keep"], name="keep"),
             helper.make_node("Where", ["keep", "zero", "minus_inf"], ["bias"], name="mask"),
             helper.make_node("Add", ["x", "bias"], ["masked"], name="add_mask"),
             helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
             helper.make_node("MatMul", ["probs", "w"], ["y"], name="proj")]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 4]) for n in ("x", "m", "y")]
    graph = helper.make_graph(nodes, "masked_attention", io[:2], io[2:], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)


def _feeds(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(1, 4, 4)).astype(np.float32), "m": rng.normal(size=(1, 4, 4)).astype(np.float32)}


@functools.cache
def _quantized(folder: pathlib.Path, form: str = "QDQ") -> onnx.ModelProto:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    class Reader:
        def __init__(self) -> None:
            self.samples = iter([_feeds(seed) for seed in range(4)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.samples, None)

    onnx.save(_masked_attention(), folder / "float.onnx")
    with _quiet(), np.errstate(divide="ignore", invalid="ignore"):  # the quantizer's own zero point of -inf / inf
        quantize_static(folder / "float.onnx", folder / f"{form}.onnx", Reader(), quant_format=QuantFormat[form],
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return onnx.load(folder / f"{form}.onnx")


@pytest.fixture(scope="module")
def qdq(tmp_path_factory) -> onnx.ModelProto:
    return _quantized(tmp_path_factory.mktemp("untypeable"))


def _kept(model: onnx.ModelProto) -> dict[str, int]:
    """Quantization node name -> its position, for the nodes whose scale is not finite."""
    nodes = {k: n for k, n in enumerate(model.graph.node) if n.op_type in ("QuantizeLinear", "DequantizeLinear")}
    scale_names = {n.input[1] for n in nodes.values()}  # plain float initializers, unlike typed weights
    scales = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer if t.name in scale_names}
    return {n.name: k for k, n in nodes.items() if not np.all(np.isfinite(scales[n.input[1]]))}


def test_the_quantizer_writes_an_infinite_scale(qdq):
    """The premise: without it the tests below would pass on a model with nothing to keep."""
    assert len(_kept(qdq)) == 4  # the mask's and the masked scores' pairs


def test_the_pairs_are_kept_named_and_the_rest_lifted(qdq):
    result = lift_model(qdq)
    kept = _kept(result.model)
    assert set(kept) == set(_kept(qdq))
    for name in kept:
        assert sum(f"'{name}'" in w and "must be finite and non-zero, which no quantized type holds (QT101); left as "
                   "it was" in w for w in result.warnings) == 1, name
    assert {n.name for n in result.left} >= set(kept)
    typed = quantized_tensors(result.model)
    assert {"x_QuantizeLinear_Output", "probs_QuantizeLinear_Output", "w_quantized"} <= set(typed)  # finite scales
    assert not {"bias_QuantizeLinear_Output", "masked_QuantizeLinear_Output"} & set(typed)


def test_lower_gives_onnxruntime_the_same_bits(qdq):
    lowered = lower(lift_model(qdq).model)
    for seed in (10, 11):
        theirs = run_onnxruntime(qdq, _feeds(seed), optimize=False)
        again = run_onnxruntime(lowered, _feeds(seed), optimize=False)
        assert theirs.keys() == again.keys()
        for name, value in theirs.items():
            assert value.tobytes() == again[name].tobytes(), name


def test_check_reports_each_kept_pair_in_the_file_and_in_its_lifted_form(qdq):
    """QT101 at each kept QuantizeLinear's scale input (its DequantizeLinear related), in the QDQ file and in
    the typed model lift writes, where the pairs are no type's boundary."""
    lifted = lift_model(qdq).model
    for model in (qdq, lifted):
        kept = _kept(model)
        errors = [d for d in diagnose(model).diagnostics if d.is_error]
        assert {d.rule for d in errors} == {"QT101"}
        quantizers = {k for name, k in kept.items() if model.graph.node[k].op_type == "QuantizeLinear"}
        assert {d.location.pointer for d in errors} == {f"/graph/node/{k}/input/1" for k in quantizers}
        related = {r.pointer for d in errors for r in d.related}
        assert related == {f"/graph/node/{k}/input/1" for k in set(kept.values()) - quantizers}
        assert all("scale inf must be finite and non-zero" in d.message for d in errors)


def test_the_commands_lift_and_then_check_it(qdq, tmp_path, capsys):
    onnx.save(qdq, tmp_path / "qdq.onnx")
    assert main(["lift", str(tmp_path / "qdq.onnx"), str(tmp_path / "typed.onnx")]) == 0
    err = capsys.readouterr().err
    assert err.count("(QT101); left as it was") == 4 and "Traceback" not in err
    assert main(["check", str(tmp_path / "typed.onnx")]) == 1
    out = capsys.readouterr().out
    assert out.count("QT101") == 2 and all(name in out for name in _kept(qdq) if "QuantizeLinear" in name)
    assert main(["show", str(tmp_path / "typed.onnx")]) == 0
    assert "note: 4 quantization node(s) outside the types" in capsys.readouterr().out
    assert main(["show", str(tmp_path / "qdq.onnx")]) == 0  # the file itself: the kept nodes counted once
    out = capsys.readouterr().out
    assert "note: the lift left 4 quantization node(s) as they were" in out and "malformed" not in out
    from test_interop_malformed import qdq_relu

    onnx.save(qdq_relu(), tmp_path / "clean.onnx")  # lifted whole: its Q / DQ are typed boundaries
    assert main(["lift", str(tmp_path / "clean.onnx"), str(tmp_path / "clean_typed.onnx")]) == 0
    assert main(["show", str(tmp_path / "clean_typed.onnx")]) == 0
    assert "outside the types" not in capsys.readouterr().out


def test_the_reference_runs_the_kept_pairs_as_onnxruntime_does(qdq):
    """The kept pairs compute the operators' formulas in IEEE arithmetic (x / inf = 0, 0 * inf = NaN), at the
    file's opset (below 19, where onnx.reference has no DequantizeLinear of its own): the reference's outputs equal
    onnxruntime's unoptimized ones, NaN for NaN."""
    assert next(o.version for o in qdq.opset_import if o.domain in ("", "ai.onnx")) < 19
    lifted = lift_model(qdq).model
    for seed in (10, 11):
        theirs = run_onnxruntime(qdq, _feeds(seed), optimize=False)
        ours = ReferenceEvaluator(lifted).run(list(theirs), _feeds(seed))
        for (name, value), got in zip(theirs.items(), ours):
            np.testing.assert_array_equal(np.asarray(got, np.float32), value, err_msg=name)


def test_a_typed_boundary_is_left_to_the_type_rules(tmp_path):
    """Only quantization nodes outside the types are read as a QDQ file's: a boundary whose zero point is marked as
    typed storage (wire form) stays the type rules' even when its tensor's declaration is lost, so no finding
    speaks of the marker's data type number (1003) as if it were an element type."""
    from test_interop_malformed import qdq_relu

    from onnx_qtypes import save

    save(lift_model(qdq_relu()).model, tmp_path / "typed.onnx")
    typed = onnx.load(tmp_path / "typed.onnx")
    assert any(t.data_type > 1000 for t in typed.graph.initializer)  # the boundary zero points, marked
    typed.graph.value_info[0].name = "elsewhere"  # xq's type now names no tensor: the model stays typed, xq not
    messages = [d.message for d in diagnose(typed).diagnostics]
    assert not [m for m in messages if "data type 10" in m], messages


def test_check_reports_the_same_nodes_of_a_qoperator_file_and_of_its_lifted_form(tmp_path):
    """quantize_static's QOperator form keeps the mask's scale inf in com.microsoft QLinearAdd / QLinearSoftmax
    nodes: each node check reports in the file it reports in the lifted form too (the QLinearSoftmax only when the
    lifted form is read at the model's opset)."""
    qop = _quantized(tmp_path, "QOperator")
    assert any(n.op_type == "QLinearSoftmax" for n in qop.graph.node)
    lifted = lift_model(qop).model

    def reported(model: onnx.ModelProto) -> set[str]:
        found = [d for d in diagnose(model).diagnostics if d.rule == "QT101"]
        return {d.location.node for d in found} | {r.node for d in found for r in d.related}

    in_file = reported(qop)
    assert "softmax_quant" in in_file
    assert reported(lifted) == in_file


def test_findings_on_nodes_outside_the_types_name_their_places_in_the_file():
    """A pair outside the types whose halves disagree (QT307): the message names both nodes at their positions in the
    typed model, as the finding's pointer does."""
    from test_interop_malformed import qdq_relu

    typed = lift_model(qdq_relu()).model
    first = len(typed.graph.node)
    typed.graph.initializer.extend([numpy_helper.from_array(np.array(0.1, np.float32), "k_s"),
                                    numpy_helper.from_array(np.array(0.2, np.float32), "k_other"),
                                    numpy_helper.from_array(np.array(0, np.int8), "k_z")])
    typed.graph.node.extend([helper.make_node("QuantizeLinear", ["y", "k_s", "k_z"], ["k_q"], name="k_Q"),
                             helper.make_node("DequantizeLinear", ["k_q", "k_other", "k_z"], ["k_y"], name="k_DQ")])
    typed.graph.output.append(helper.make_tensor_value_info("k_y", TensorProto.FLOAT, [2, 3]))
    (found,) = [d for d in diagnose(typed).diagnostics if d.rule == "QT307"]
    assert found.location.pointer == f"/graph/node/{first + 1}/input/1"
    assert f"DequantizeLinear 'k_DQ' (/graph/node/{first + 1})" in found.message
    assert f"QuantizeLinear 'k_Q' (/graph/node/{first})" in found.message


def test_a_node_outside_the_types_whose_scale_cannot_be_read_is_a_located_load_error():
    """The scale of a pair outside the types lies in an external file that is not there (the model given in memory):
    check stops with the project's error naming the tensor, not onnx's ValidationError."""
    from test_interop_malformed import qdq_relu

    from onnx_qtypes import QTypesError

    typed = lift_model(qdq_relu()).model
    scale = numpy_helper.from_array(np.array(0.1, np.float32), "k_s")
    onnx.external_data_helper.set_external_data(scale, "missing.bin", offset=0, length=4)
    scale.ClearField("raw_data")
    scale.data_location = TensorProto.EXTERNAL
    typed.graph.initializer.extend([scale, numpy_helper.from_array(np.array(0, np.int8), "k_z")])
    typed.graph.node.extend([helper.make_node("QuantizeLinear", ["y", "k_s", "k_z"], ["k_q"], name="k_Q"),
                             helper.make_node("DequantizeLinear", ["k_q", "k_s", "k_z"], ["k_y"], name="k_DQ")])
    typed.graph.output.append(helper.make_tensor_value_info("k_y", TensorProto.FLOAT, [2, 3]))
    with pytest.raises(QTypesError, match="tensor 'k_s': its external data cannot be read"):
        diagnose(typed)
