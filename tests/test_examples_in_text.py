"""Every model the proposal and README show exists under examples/, checks as the text says and runs with the
reference; the typed value the RFC's guide-level section prints is the one examples/typed_cnn.onnx declares."""

from __future__ import annotations

import re

import numpy as np
import pytest
from builders import ROOT

import onnx_qtypes
from onnx_qtypes.proto import get_statistics
from onnx_qtypes.reference_ops import ReferenceEvaluator

TEXTS = [ROOT / "README.md", *sorted((ROOT / "proposal").rglob("*.md"))]
MENTIONED = sorted({m for t in TEXTS for m in re.findall(r"examples/[A-Za-z0-9_/.-]+\.onnx", t.read_text(encoding="utf-8"))})
BROKEN = {"examples/broken_cnn.onnx", "examples/broken_qdq_cnn.onnx"}  # shown for their findings


def test_the_texts_show_models():
    assert "examples/typed_cnn.onnx" in MENTIONED and len(MENTIONED) >= 20


@pytest.mark.parametrize("path", MENTIONED)
def test_a_model_shown_in_the_text_exists_checks_and_runs(path):
    file = ROOT / path
    assert file.is_file(), f"{path} is named in the text but does not exist"
    errors = [d for d in onnx_qtypes.diagnose(str(file)).diagnostics if d.severity.value == "error"]  # typed or QDQ
    if path in BROKEN:
        assert errors, f"{path} is shown for its findings"
        return
    assert not errors, [str(d) for d in errors[:3]]
    model = onnx_qtypes.load(str(file))
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        q = onnx_qtypes.get_qtype(model, vi.name)
        if q is not None:
            feeds[vi.name] = rng.integers(q.storage_min, q.storage_max + 1, size=shape).astype(q.storage_type.np_dtype)
        elif vi.type.tensor_type.elem_type == 9:  # BOOL: a control-flow condition
            feeds[vi.name] = np.array(False)
        else:
            feeds[vi.name] = rng.normal(0, 2, shape).astype(np.float32)
    outputs = ReferenceEvaluator(model).run(None, feeds)
    assert len(outputs) == len(model.graph.output)


def test_the_rfc_guide_prints_typed_cnn_as_it_is():
    rfc = (ROOT / "proposal" / "0001-quantized-element-types.md").read_text(encoding="utf-8")
    guide = rfc.split("## Guide-level explanation", 1)[1].split("## Reference-level", 1)[0]
    assert "examples/typed_cnn.onnx" in guide
    model = onnx_qtypes.load(str(ROOT / "examples" / "typed_cnn.onnx"))
    conv = onnx_qtypes.get_qtype(model, "conv_q")
    quant = re.search(r'name: "conv_q".*?scale: ([\d.]+)\s+zero_point: (-?\d+)', guide, re.S)
    assert quant and conv.zero_point == (int(quant.group(2)),)
    assert conv.scale[0] == pytest.approx(float(quant.group(1)), rel=1e-7)  # a float32 scale, printed rounded
    printed = dict(re.findall(r"(min|max|mean|std|count): (-?[\d.]+)", guide.split("[1001] statistics", 1)[1][:200]))
    stats = get_statistics(model, "conv_q").tensor
    assert {k: float(v) for k, v in printed.items()} == pytest.approx(
        {"min": stats.min, "max": stats.max, "mean": stats.mean, "std": stats.std, "count": stats.count})
    for name, scale, zp in re.findall(r"(\w+_q) : int8<([\d.]+):(-?\d+)>", guide):
        q = onnx_qtypes.get_qtype(model, name)
        assert q.zero_point == (int(zp),) and q.scale[0] == pytest.approx(float(scale), rel=1e-7), name
