"""Backends (``MODULE:CLASS``, built with no arguments) whose departure from the reference is known by construction.

Each runs the case's standard-ONNX model on onnxruntime's unoptimized path (ORT_DISABLE_ALL: within the
suite's one step of the definition) after one edit: the QuantizeLinear writing ``TARGET`` reads its float
input shifted by ``SHIFT`` quantization steps, so ``TARGET`` lands up to ``SHIFT`` steps away (less where it
saturates) and every reader downstream computes on the shifted values.

- ``Perturbing*``: the shift is always there: ``compare`` must name ``TARGET`` and its node, with the node's
  inputs agreeing.
- ``Fusing*``: the shift is there only when ``TARGET`` is *not* a graph output, as a fused kernel that rounds
  differently is used only while the tensor it hides need not be kept: exposing ``TARGET`` changes the
  backend's graph outputs, so ``compare`` must not take its value from an exposed run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnx_qtypes.conformance import OnnxRuntimeBackend


def shifted(model: onnx.ModelProto, target: str, steps: float) -> onnx.ModelProto:
    """``model`` with the QuantizeLinear writing ``target`` reading its input plus ``steps`` of its scale."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    writers = [n for n in graph.node if n.op_type == "QuantizeLinear" and list(n.output[:1]) == [target]]
    assert len(writers) == 1, f"no single QuantizeLinear writes {target!r}"
    node = writers[0]
    scale = next(numpy_helper.to_array(t) for t in graph.initializer if t.name == node.input[1])
    assert scale.size == 1, "the shift needs a per-tensor scale"
    delta = numpy_helper.from_array(np.array(float(scale) * steps, dtype=scale.dtype), f"{target}__shift")
    graph.initializer.append(delta)
    moved = f"{node.input[0]}__shifted"
    add = helper.make_node("Add", [node.input[0], delta.name], [moved], name=f"{target}__shift")
    node.input[0] = moved
    nodes = list(graph.node)
    nodes.insert(nodes.index(node), add)
    del graph.node[:]
    graph.node.extend(nodes)
    return copy


class _Shifting:
    TARGET = ""
    SHIFT = 5.0
    ONLY_WHEN_HIDDEN = False

    def __init__(self) -> None:
        self.inner = OnnxRuntimeBackend(optimize=False)
        self.name = type(self).__name__
        self.version = "test"

    def supports(self, case: Any) -> bool | str:
        return self.inner.supports(case)

    def prepare(self, case: Any) -> Any:
        model = onnx.load(str(case.qdq_model_path))
        if not (self.ONLY_WHEN_HIDDEN and self.TARGET in case.outputs):
            model = shifted(model, self.TARGET, self.SHIFT)
        path = case.folder / "shifted.onnx"
        onnx.save(model, path)
        return self.inner.prepare(dataclasses.replace(case, qdq_model_path=path))

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.inner.run(prepared, feeds)


class PerturbingTypedConv(_Shifting):
    """examples/typed_cnn.onnx: the Conv's output ``conv_q`` (lowered: the QuantizeLinear after the Conv)."""

    TARGET = "conv_q"


class FusingTypedConv(PerturbingTypedConv):
    ONLY_WHEN_HIDDEN = True


class PerturbingQdqConv2(_Shifting):
    """The corpus CNN quantized by onnxruntime (QDQ): conv2's output, as the file names its storage."""

    TARGET = "c2_QuantizeLinear_Output"
    SHIFT = 9.0


class NoOutputs:
    """A backend that runs nothing and returns nothing."""

    name = "no-outputs"

    def supports(self, case: Any) -> bool:
        return True

    def prepare(self, case: Any) -> Any:
        return None

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {}


class Declines:
    name = "declines"

    def supports(self, case: Any) -> str:
        return "this runtime has no int8 Conv"

    def prepare(self, case: Any) -> Any:  # pragma: no cover - never called
        raise AssertionError

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict:  # pragma: no cover
        raise AssertionError


class FromFolder:
    """Runs onnxruntime's unoptimized path on the inputs the case folder holds (``case.feeds()``), not on the
    feeds ``run`` is handed: a backend that reads the case layout."""

    name = "from-folder"

    def __init__(self) -> None:
        self.inner = OnnxRuntimeBackend(optimize=False)

    def supports(self, case: Any) -> bool | str:
        return self.inner.supports(case)

    def prepare(self, case: Any) -> Any:
        return self.inner.prepare(case), case.feeds()

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        session, own = prepared
        return self.inner.run(session, own)
