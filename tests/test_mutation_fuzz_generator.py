"""The fuzzer's own generator (tests/mutation_fuzz.py) keeps going on the models it damages itself."""

from __future__ import annotations

import random

import onnx
from onnx import TensorProto, helper

from mutation_fuzz import NOT_TEXT, _structure_step


def _model_with_output_not_text() -> onnx.ModelProto:
    """A node whose output name is not UTF-8 (protobuf holds the bytes; reading the name as text raises)."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["yyyy"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("yyyy", TensorProto.FLOAT, [1])])
    data = helper.make_model(graph).SerializeToString().replace(b"yyyy", b"y\xff\xfey")
    return onnx.ModelProto.FromString(data)


def test_a_string_that_is_not_text_cuts_a_structure_mutation_short_instead_of_ending_the_run():
    outcomes = set()
    for seed in range(300):  # every branch of _structure_mutation, "a node reads its own output" among them
        model = _model_with_output_not_text()
        outcomes.add(_structure_step(random.Random(seed), model) == NOT_TEXT)
    assert outcomes == {True, False}  # some mutations read the name and are cut short; the others still mutate
