"""QONNX / Brevitas Quant nodes: lift to quantized types, agree with qonnx's own executor, lower to QDQ."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import run_onnxruntime
from corpus_qonnx import DOMAIN, qonnx_feeds, qonnx_models, refused_models

from onnx_qtypes import checker, get_qtype, quantized_tensors
from onnx_qtypes.interop import lift_model, lower
from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.reference_ops import ReferenceEvaluator

qonnx_exec = pytest.importorskip("qonnx.core.onnx_exec")
from qonnx.core.modelwrapper import ModelWrapper  # noqa: E402
from qonnx.custom_op.general.quant import max_int, min_int  # noqa: E402
from qonnx.transformation.infer_shapes import InferShapes  # noqa: E402

QONNX_DOMAINS = (DOMAIN, "onnx.brevitas")


def _quant_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.domain in QONNX_DOMAINS]


def _expected(model: onnx.ModelProto, node: onnx.NodeProto) -> tuple[str, int, int]:
    """Storage, min, max of a Quant node's output, from qonnx's own min_int / max_int."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    bits = int(inits[node.input[3]])
    signed, narrow = bool(attrs["signed"]), bool(attrs["narrow"])
    storage = ("int" if signed else "uint") + ("8" if bits <= 8 else "16")
    return storage, min_int(signed, narrow, bits), max_int(signed, narrow, bits)


def _step(model: onnx.ModelProto) -> float:
    """One step of the last Quant node: how far two correct implementations may differ."""
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    return float(np.max(inits[_quant_nodes(model)[-1].input[1]]))


def _qonnx_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    wrapped = ModelWrapper(model).transform(InferShapes())
    return qonnx_exec.execute_onnx(wrapped, feeds)[model.graph.output[0].name]


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])


@pytest.fixture(scope="module")
def lifted():
    return {name: (model, lift_model(model)) for name, model in qonnx_models().items()}


@pytest.mark.parametrize("name", sorted(qonnx_models()))
def test_every_quant_node_becomes_a_quantized_type(lifted, name):
    model, result = lifted[name]
    quants = _quant_nodes(model)
    assert not result.warnings
    assert result.typed_tensors == len(quants)
    assert not _quant_nodes(result.model)
    assert not [o for o in result.model.opset_import if o.domain in QONNX_DOMAINS]
    found = sorted((q.storage, q.storage_min, q.storage_max)
                   for q in (get_qtype(result.model, t) for t in quantized_tensors(result.model)))
    assert found == sorted(_expected(model, n) for n in quants)


def test_per_channel_scales_become_per_axis_types(lifted):
    axes = {}
    for name in ("mlp", "cnn"):
        model = lifted[name][1].model
        axes[name] = sorted(a for a in (get_qtype(model, t).axis for t in quantized_tensors(model)) if a is not None)
    assert axes == {"mlp": [1], "cnn": [0]}  # MatMul weights [K, N] scaled per column; Conv weights per output channel


@pytest.mark.parametrize("name", sorted(qonnx_models()))
def test_lifted_model_is_clean(lifted, name):
    assert list(checker.iter_diagnostics(lifted[name][1].model)) == []


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(qonnx_models()))
def test_reference_agrees_with_qonnx_executor(lifted, name, seed):
    model, result = lifted[name]
    feeds = qonnx_feeds(model, seed)
    expected = _qonnx_run(model, feeds)
    got = _reference(result.model, feeds)
    assert got.shape == expected.shape
    assert np.max(np.abs(got - expected)) <= _step(model) * 1.0001


@pytest.mark.parametrize("name", sorted(qonnx_models()))
def test_lowered_model_runs_in_onnxruntime(lifted, name):
    model, result = lifted[name]
    lowered = lower(result.model)
    assert (lowered.ir_version, {o.domain: o.version for o in lowered.opset_import}) == (10, {"": 21})
    narrowed = [t for t in quantized_tensors(result.model) if get_qtype(result.model, t).storage_min not in (-128, 0, -32768)
                or get_qtype(result.model, t).storage_max not in (127, 255, 32767, 65535)]
    clips = sum(n.op_type == "Clip" for n in lowered.graph.node)
    quantizes = {n.output[0] for n in result.model.graph.node if n.op_type == "QuantizeLinear"}
    assert clips == len(quantizes & set(narrowed))  # a narrowed computed tensor saturates at its own range
    feeds = qonnx_feeds(model, 2)
    got = run_onnxruntime(lowered, feeds, optimize=False)[model.graph.output[0].name]
    assert np.max(np.abs(got - _reference(result.model, feeds))) <= _step(model) * 1.0001
    assert np.max(np.abs(got - _qonnx_run(model, feeds))) <= _step(model) * 1.0001


@pytest.mark.parametrize("name", sorted(qonnx_models()))
def test_lower_then_lift_gives_the_types_back(lifted, name):
    typed = lifted[name][1].model
    again = lift_model(lower(typed)).model
    assert sorted(map(str, (get_qtype(again, t) for t in quantized_tensors(again)))) == \
        sorted(map(str, (get_qtype(typed, t) for t in quantized_tensors(typed))))


@pytest.mark.parametrize("name", sorted(refused_models()))
def test_refused_nodes_are_left_with_a_warning(name):
    model, node_name, word = refused_models()[name]
    result = lift_model(model)
    kept = [n for n in result.model.graph.node if n.name == node_name]
    assert len(kept) == 1 and kept[0].domain == DOMAIN  # left as it was, in its own domain
    said = [w for w in result.warnings if repr(node_name) in w]
    assert len(said) == 1 and word in said[0], result.warnings
    assert any(o.domain == DOMAIN for o in result.model.opset_import)


def test_brevitas_domain_reads_like_qonnx():
    model = qonnx_models()["mlp"]
    for node in _quant_nodes(model):
        node.domain = "onnx.brevitas"
    model.opset_import[1].domain = "onnx.brevitas"
    result = lift_model(model)
    assert not result.warnings and result.typed_tensors == 3 and not _quant_nodes(result.model)


def _per_channel_activation(narrow: int) -> onnx.ModelProto:
    from corpus_qonnx import _Builder

    b = _Builder(8)
    y = b.quant("x", "quant_in", np.array([0.1, 0.2, 0.05]).reshape(1, 3, 1, 1), 0, 4, narrow=narrow)
    return b.model("per_channel_activation", {"x": [1, 3, 2, 2]}, b.op("Relu", [y], "relu"))


def test_per_channel_activation_lifts_and_runs():
    model = _per_channel_activation(narrow=0)
    result = lift_model(model)
    (tensor,) = quantized_tensors(result.model)
    assert get_qtype(result.model, tensor).axis == 1
    feeds = qonnx_feeds(model)
    assert np.max(np.abs(_reference(result.model, feeds) - _qonnx_run(model, feeds))) <= 0.2 * 1.0001


def test_narrowed_per_channel_activation_has_no_standard_form():
    result = lift_model(_per_channel_activation(narrow=1))
    assert quantized_tensors(result.model)  # the typed form holds it ...
    with pytest.raises(LowerError, match="narrowed storage range on a computed per-axis tensor"):
        lower(result.model)  # ... plain QuantizeLinear saturates at int8's full range and Clip takes one bound


def test_constant_node_parameters_and_weights():
    """Brevitas may export parameters and weights as Constant nodes: read alike, and none is left unread."""
    model = qonnx_models()["mlp"]
    graph = model.graph
    constants = [onnx.helper.make_node("Constant", [], [t.name], value=t) for t in graph.initializer]
    nodes = constants + list(graph.node)
    del graph.initializer[:], graph.node[:]
    graph.node.extend(nodes)
    result = lift_model(model)
    assert not result.warnings and result.typed_tensors == 3
    read = {name for n in result.model.graph.node for name in n.input} | {o.name for o in result.model.graph.output}
    assert all(o in read for n in result.model.graph.node for o in n.output)
    feeds = qonnx_feeds(model)
    assert np.max(np.abs(_reference(result.model, feeds) - _qonnx_run(qonnx_models()["mlp"], feeds))) <= 0.0625


def test_command_line_lifts_checks_and_names_what_it_left(tmp_path, capsys):
    from onnx_qtypes.cli import main

    source, refused, typed = tmp_path / "cnn.onnx", tmp_path / "floor.onnx", tmp_path / "typed.onnx"
    onnx.save(qonnx_models()["cnn"], source)
    onnx.save(refused_models()["floor"][0], refused)
    assert main(["lift", str(source), str(typed)]) == 0
    assert len(quantized_tensors(onnx.load(typed))) == 3
    assert main(["check", str(source)]) == 0
    assert main(["check", str(refused)]) == 0
    said = capsys.readouterr()
    assert "'floor'" in said.out + said.err and "rounding_mode FLOOR" in said.out + said.err


def test_per_channel_zero_points_with_one_scale():
    from corpus_qonnx import _Builder

    b = _Builder(9)
    w = b.quant(b.weight("w", [4, 8]), "quant_w", 0.05, np.array([[1], [2], [0], [3]]), 4, signed=0)
    model = b.model("zero_points", {"x": [2, 4]}, b.op("MatMul", ["x", w], "mm"))
    result = lift_model(model)
    (tensor,) = quantized_tensors(result.model)
    qtype = get_qtype(result.model, tensor)
    assert (qtype.axis, qtype.zero_point, qtype.storage_max) == (0, (1, 2, 0, 3), 15)
    feeds = qonnx_feeds(model)
    assert np.max(np.abs(_reference(result.model, feeds) - _qonnx_run(model, feeds))) <= 1e-5
    got = run_onnxruntime(lower(result.model), feeds, optimize=False)["mm"]
    assert np.max(np.abs(got - _qonnx_run(model, feeds))) <= 1e-5


@pytest.mark.parametrize("name", sorted(qonnx_models()))
def test_older_opsets_are_raised_for_the_quantize_nodes(name):
    """Brevitas exports at opset 11 to 13: per-axis QuantizeLinear needs 13 and 16-bit 21, so lift raises the model."""
    model = qonnx_models()[name]
    model.opset_import[0].version = 11
    result = lift_model(model)
    assert not result.warnings and any("opset raised from 11" in n for n in result.notes)
    assert list(checker.iter_diagnostics(result.model)) == []
    feeds = qonnx_feeds(model)
    assert np.max(np.abs(_reference(result.model, feeds) - _qonnx_run(model, feeds))) <= _step(model) * 1.0001
