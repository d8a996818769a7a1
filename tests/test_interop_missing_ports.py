"""Nodes with missing inputs or outputs, or empty names, never crash the lift: the node is left as it was (named),
or the model is refused with the project's own error. Each onnxruntime-written model (static QDQ / QOperator and
quantize_dynamic) is mutated at every node the lift reads, in the ways a truncated or hand-edited file has them."""

from __future__ import annotations

import onnx
import pytest

from onnx_qtypes.interop import lift_model
from onnx_qtypes.proto.errors import QTypesError
from tests.corpus import corpus_models
from tests.corpus_dynamic import dynamic_models

MUTATIONS = ("drop-outputs", "drop-last-input", "empty-first-input", "empty-first-output", "drop-inputs")
WATCHED = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearGlobalAveragePool",
           "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "Cast", "Mul"}


def _mutated(model: onnx.ModelProto, index: int, how: str) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    node = copy.graph.node[index]
    if how == "drop-outputs":
        del node.output[:]
    elif how == "drop-inputs":
        del node.input[:]
    elif how == "drop-last-input" and node.input:
        del node.input[-1]
    elif how == "empty-first-input" and node.input:
        node.input[0] = ""
    elif how == "empty-first-output" and node.output:
        node.output[0] = ""
    return copy


MODELS = {
    "static-qdq": lambda: corpus_models()["cnn-qdq_s8_perchannel"],
    "qoperator": lambda: corpus_models()["cnn-qop_u8"],
    "dynamic": lambda: dynamic_models()["matmul-dyn_s8"],
}


@pytest.mark.parametrize("source", sorted(MODELS))
def test_a_node_missing_inputs_or_outputs_never_crashes_the_lift(source):
    model = MODELS[source]()
    tried = 0
    for index, node in enumerate(model.graph.node):
        if node.op_type not in WATCHED:
            continue
        for how in MUTATIONS:
            for tolerant in (False, True):
                tried += 1
                try:
                    lift_model(_mutated(model, index, how), tolerant=tolerant)
                except QTypesError:
                    pass  # refused with a located, one-line error: fine; anything else fails the test
    assert tried >= 40


def test_a_quantize_linear_without_output_is_left_and_named():
    """A QuantizeLinear that writes nothing (read by nothing) is left and named; one whose output its
    DequantizeLinear still reads leaves a name nothing defines, which the reader refuses, naming the reader."""
    model = corpus_models()["cnn-qdq_s8_perchannel"]
    index = next(i for i, n in enumerate(model.graph.node) if n.op_type == "QuantizeLinear")
    quantize = model.graph.node[index]
    reader = next(i for i, n in enumerate(model.graph.node) if quantize.output[0] in n.input)
    with pytest.raises(QTypesError, match=rf"/graph/node/{reader} \(DequantizeLinear .*\): reads "
                                          rf"'{quantize.output[0]}', which no input, initializer or node"):
        lift_model(_mutated(model, index, "drop-outputs"))
    alone = onnx.ModelProto()
    alone.CopyFrom(model)
    alone.graph.node.append(onnx.helper.make_node("QuantizeLinear", list(quantize.input), [], name="writes_nothing"))
    result = lift_model(alone)
    at = len(alone.graph.node) - 1
    assert any(w.startswith(f"QuantizeLinear 'writes_nothing' (/graph/node/{at}): no output")
               for w in result.warnings), result.warnings
