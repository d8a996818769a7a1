"""com.microsoft QuantizeLinear / DequantizeLinear (onnxruntime 1.32's UseQDQContribOps, as AMD Quark 0.13 writes
A8W8 / A16W8 / S16S8, and onnxruntime's int4 weights below opset 21) lift to standard-domain boundary nodes, so that
``onnx-qtypes run`` executes the lifted model: its outputs are onnxruntime's unoptimized ones, and lower +
onnxruntime gives the original's bit for bit."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.version_converter
import pytest

from onnx_qtypes.cli import main
from onnx_qtypes.interop import lift_model, lower
from tests.corpus import _quiet, run_onnxruntime
from tests.corpus_producers import _Reader, ops, output_step, producer_feeds

SETTINGS = {  # name: (opset of the float model, activation type, weight type)
    "a8w8-opset17": (17, "QUInt8", "QInt8"),
    "a16w8-opset13": (13, "QUInt16", "QInt8"),
    "s16s8-opset17": (17, "QInt16", "QInt8"),
    "a8w4-opset13": (13, "QUInt8", "QInt4"),
}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, onnx.ModelProto]:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    folder = tmp_path_factory.mktemp("contrib")
    out = {}
    for name, (opset, activation, weight) in SETTINGS.items():
        onnx.save(ops(opset), folder / f"{name}.float.onnx")
        with _quiet():
            quantize_static(folder / f"{name}.float.onnx", folder / f"{name}.onnx", _Reader(),
                            quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType[activation],
                            weight_type=QuantType[weight], extra_options={"UseQDQContribOps": True})
        out[name] = onnx.load(folder / f"{name}.onnx")
    return out


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_contrib_qdq_lifts_to_standard_nodes_that_run_executes(name, written, tmp_path):
    original = written[name]
    assert any(n.domain == "com.microsoft" and n.op_type == "QuantizeLinear" for n in original.graph.node)
    result = lift_model(original)
    assert not result.left and not result.warnings
    assert not [n for n in result.model.graph.node if n.domain == "com.microsoft"]
    assert any("com.microsoft QuantizeLinear / DequantizeLinear node(s) read as the standard operators" in n
               for n in result.notes)
    onnx.save(result.model, tmp_path / "typed.onnx")
    for seed in range(2):
        feeds = producer_feeds(name, seed)
        np.savez(tmp_path / "in.npz", **feeds)
        assert main(["run", str(tmp_path / "typed.onnx"), "--inputs", str(tmp_path / "in.npz"),
                     "--outputs", str(tmp_path / "out.npz")]) == 0
        ours = np.load(tmp_path / "out.npz")["y"]
        theirs = run_onnxruntime(original, feeds, optimize=False)["y"]
        assert np.array_equal(ours, theirs)  # measured: no difference at all on these inputs
        onnx.save(original, tmp_path / "file.onnx")  # the file as written: its com.microsoft pairs run as the standard
        assert main(["run", str(tmp_path / "file.onnx"), "--inputs", str(tmp_path / "in.npz"),  # ones (refused before)
                     "--outputs", str(tmp_path / "out.npz")]) == 0
        step = output_step(original)  # (plain float operators in onnx.reference: a near tie may round the other way)
        assert np.abs(np.load(tmp_path / "out.npz")["y"] - theirs).max() <= step * 1.0001
        lowered = lower(result.model)  # at 21 only where a type needs it (int16, int4): its AveragePool rounds 1 ulp
        if lowered.opset_import[0].version != original.opset_import[0].version:  # apart from opset 17's
            theirs = run_onnxruntime(_at_opset_21(original), feeds, optimize=False)["y"]
        assert np.array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"], theirs)


def _at_opset_21(model: onnx.ModelProto) -> onnx.ModelProto:
    raised = onnx.version_converter.convert_version(model, 21)
    raised.ir_version = 10
    return raised


def test_a_raised_opset_keeps_naming_nodes_at_their_place_in_the_file(written):
    model = onnx.ModelProto()
    model.CopyFrom(written["a8w4-opset13"])
    softmax = next(i for i, n in enumerate(model.graph.node) if n.op_type == "Softmax")
    model.graph.node[softmax].domain, model.graph.node[softmax].op_type = "com.example", "QuantSoftmax"
    model.opset_import.add(domain="com.example", version=1)
    result = lift_model(model)
    assert any(n.startswith("default-domain opset raised from 13 to 21") for n in result.notes)
    assert [(n.index, n.reason) for n in result.left if n.op_type == "QuantSoftmax"] == [
        (softmax, "unknown quantization: QuantSoftmax (com.example) not lifted")]
