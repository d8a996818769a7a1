"""What stock `onnx.compose.add_prefix` does to a type whose parameters are kept by reference.

The RFC's implementation cost for onnx.compose rests on this: add_prefix renames the initializer holding
the scales but not the name the type refers to it by, so the typed model is refused (QT117), never misread.
"""

from __future__ import annotations

import onnx
import onnx.compose
from test_parameters_by_reference import _blocked_qdq

import onnx_qtypes as qt
from onnx_qtypes.checker import iter_diagnostics


def test_stock_add_prefix_leaves_a_parameter_reference_dangling_and_the_checker_refuses_it(tmp_path):
    typed = qt.lift(_blocked_qdq(k=64, n=64 * 32))  # 2,048 blocked scales: above the listed-form threshold
    path = tmp_path / "typed.onnx"
    qt.save(typed, path)
    assert [d.rule for d in iter_diagnostics(qt.load(path)) if d.severity.name == "ERROR"] == []
    prefixed = onnx.compose.add_prefix(onnx.load(path), "m_")  # stock onnx, no knowledge of the extension
    onnx.save(prefixed, tmp_path / "prefixed.onnx")
    errors = [d for d in iter_diagnostics(qt.load(tmp_path / "prefixed.onnx")) if d.severity.name == "ERROR"]
    assert [d.rule for d in errors] == ["QT117"]
    assert errors[0].location.tensor == "m_w"
