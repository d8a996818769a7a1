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

Others edit one thing of the standard-ONNX model (``DoublesFinalScale``, ``DoublesDynamicInput``), or run the typed
model one step off wherever the operator's class allows (``OneStepOff``, ``one_step_off``).
"""

from __future__ import annotations

import contextlib
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


class _EditedQdq:
    """onnxruntime's unoptimized path on the case's standard-ONNX model after ``edit(model)``."""

    form = "qdq"

    def edit(self, model: onnx.ModelProto) -> None:
        raise NotImplementedError

    def supports(self, case: Any) -> bool | str:
        return OnnxRuntimeBackend(optimize=False).supports(case)

    def prepare(self, case: Any) -> Any:
        model = onnx.load(str(case.qdq_model_path))
        self.edit(model)
        path = case.folder / "edited.onnx"
        onnx.save(model, path)
        inner = OnnxRuntimeBackend(optimize=False)
        return inner, inner.prepare(dataclasses.replace(case, qdq_model_path=path))

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        inner, session = prepared
        return inner.run(session, feeds)


class DoublesFinalScale(_EditedQdq):
    """Doubles the scale of the DequantizeLinear that writes a graph output: every quantized tensor stays exactly
    the reference's, only the float output the model returns is wrong (twice the definition's)."""

    name = "doubles-final-scale"

    def edit(self, model: onnx.ModelProto) -> None:
        outputs = {o.name for o in model.graph.output}
        node = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] in outputs)
        scale = next(t for t in model.graph.initializer if t.name == node.input[1])  # QuantizeLinear shares it
        model.graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(scale) * 2, "doubled"))
        node.input[1] = "doubled"


class DoublesDynamicInput(_EditedQdq):
    """examples/ops/dynamic_quantize_linear.onnx: DynamicQuantizeLinear reads twice its input, so it binds twice the
    scale to the same stored values: the dynamic tensor's stored values agree, its real values do not."""

    name = "doubles-dynamic-input"

    def edit(self, model: onnx.ModelProto) -> None:
        node = next(n for n in model.graph.node if n.op_type == "DynamicQuantizeLinear")
        model.graph.initializer.append(numpy_helper.from_array(np.array(2, np.float32), "two"))
        double = helper.make_node("Mul", [node.input[0], "two"], ["x_doubled"], name="double")
        node.input[0] = "x_doubled"
        nodes = list(model.graph.node)
        nodes.insert(nodes.index(node), double)
        del model.graph.node[:]
        model.graph.node.extend(nodes)


class OneStepOff:
    """The typed model on the reference evaluator with every quantized output of an operator in the one-step class
    moved one step (up, down or kept, drawn per element with a fixed seed): the worst a conformant implementation
    may do at each node, carried along the chain."""

    name = "one-step-off"
    form = "typed"
    seed = 5

    def supports(self, case: Any) -> bool:
        return True

    def prepare(self, case: Any) -> Any:
        from onnx_qtypes.reference_ops import ReferenceEvaluator

        return ReferenceEvaluator(str(case.model_path)), list(case.outputs)

    def run(self, prepared: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        evaluator, names = prepared
        with one_step_off(self.seed):
            return dict(zip(names, (np.array(v) for v in evaluator.run(names, dict(feeds)))))


@contextlib.contextmanager
def one_step_off(seed: int, bias: str = "random") -> Any:
    """Within the block, every node of the reference evaluator whose class allows one step lands one step off
    (per element: random, or always up / always down)."""
    from onnx_qtypes.conformance.tolerance import operator_tolerance
    from onnx_qtypes.reference_ops import evaluator

    rng = np.random.default_rng(seed)
    original = evaluator._TypedNode._finish

    def finish(self: Any, outputs: Any, args: Any, resolved: Any) -> tuple:
        out = original(self, outputs, args, resolved)
        if operator_tolerance(self._node.op_type, self._in, self._out).steps == 0:
            return out
        moved = []
        for value, qtype in zip(out, self._out):
            if qtype is None or qtype.is_dynamic or qtype.storage_type.is_float:
                moved.append(value)
                continue
            q = np.asarray(value).astype(np.int64)
            step = rng.integers(-1, 2, q.shape) if bias == "random" else np.full(q.shape, 1 if bias == "up" else -1)
            moved.append(np.clip(q + step, qtype.storage_min, qtype.storage_max).astype(np.asarray(value).dtype))
        return tuple(moved)

    evaluator._TypedNode._finish = finish
    try:
        yield
    finally:
        evaluator._TypedNode._finish = original
