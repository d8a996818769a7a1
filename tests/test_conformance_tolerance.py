"""conformance_tests/tolerance.py: the operator classes (semantics.md#tolerance-table), near-ties (semantics.md#quantize-precision) and the chain rule (semantics.md#chains),
and that the rule's bound holds on the suite's chains for the integer kernels, onnxruntime's unoptimized path and
an implementation that lands one step off wherever its class allows."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, set_qtype
from onnx_qtypes.conformance import PASS, ReferenceBackend, load_backend, load_cases, run_case
from onnx_qtypes.conformance.tolerance import near_ties, operator_tolerance, tolerances
from onnx_qtypes.reference_ops import evaluator

CHAINS = [c for c in load_cases() if "chain" in c.tags.get("feature", ())]
A = QType("int8", 0.25, 3)
B = QType("int8", 0.5, -1)


@pytest.mark.parametrize("op, ins, outs, steps", [
    ("Transpose", [A], [A], 0), ("Reshape", [A, None], [A], 0), ("MaxPool", [A], [A], 0), ("Relu", [A], [A], 0),
    ("Clip", [A, None, None], [A], 0), ("Concat", [A, A], [A], 0), ("DequantizeLinear", [A, None, None], [None], 0),
    ("QuantizeLinear", [None, None, None], [A], 0), ("Gather", [A, None], [None], 0),
    ("Transpose", [A], [B], 1), ("Relu", [A], [B], 1), ("Concat", [A, B], [B], 1), ("Resize", [A], [A], 1),
    ("AveragePool", [A], [A], 1), ("Sigmoid", [A], [A], 1), ("Gelu", [A], [B], 1), ("Div", [A, B], [B], 1),
    ("LayerNormalization", [A, None, None], [B], 1), ("Softmax", [A], [B], 1), ("Add", [A, A], [A], 1),
])
def test_the_operator_class_gives_the_tolerance(op, ins, outs, steps):
    attrs = {"mode": b"linear"} if op == "Resize" else {}
    got = operator_tolerance(op, ins, outs, attrs)
    assert got.steps == steps
    assert got.reason.endswith("(proposal/spec/semantics.md#tolerance-table)")  # every class says why, exact ones too
    assert ("one storage step" in got.reason) == (steps == 1) and (": exact (" in got.reason) == (steps == 0)
    for expressed in ("float16", "bfloat16"):  # the class, not the expressed type, decides
        typed = [None if q is None else q.replace(expressed=expressed) for q in ins]
        out = [None if q is None else q.replace(expressed=expressed) for q in outs]
        assert operator_tolerance(op, typed, out, attrs).steps == steps


def test_near_ties_of_a_scalar_are_judged_as_of_any_tensor():
    """A 0-d activation (PP-OCR's QDQ files quantize one): numpy's nonzero refuses a 0-d array, and compare ended
    in an internal error on three of onnxruntime's PP-OCR files."""
    near = (3.5 + 2 ** -10) * 0.5  # 3.50098: a near tie for float16 (the list test below)
    assert near_ties(np.float64(near), np.float64(0.5), "float16").shape == ()
    assert bool(near_ties(np.float64(near), np.float64(0.5), "float16"))
    assert not bool(near_ties(np.float64(1.25), np.float64(0.5), "float16"))  # an exact tie is no near tie


def test_near_ties_are_non_ties_within_the_expressed_types_rounding_of_a_half_integer():
    s = np.float64(0.5)
    x = np.array([
        1.25,                      # x/s = 2.5: an exact tie, exact in every division
        1.0,                       # 2: far from a tie
        2.0,                       # 4: an integer, half a step from 3.5 and 4.5
        (1023.5 + 2 ** -3) * 0.5,  # 1023.625: |1023.625 - 1023.5| = 0.125 <= 1023.625 * 2^-11 = 0.4998
        (3.5 + 2 ** -10) * 0.5,    # 3.50098: 0.00098 <= 3.5 * 2^-11 = 0.0017
        (3.5 + 2 ** -8) * 0.5,     # 3.5039: 0.0039 > 0.0017 (float16), <= 3.5 * 2^-8 = 0.0137 (bfloat16)
    ])
    assert near_ties(x, s, "float16").tolist() == [False, False, False, True, True, False]
    assert near_ties(x, s, "float32").tolist() == [False, False, False, False, False, False]
    assert near_ties(x, s, "bfloat16").tolist() == [False, False, False, True, True, True]


def _matmul_add(scales: dict[str, float], weights: np.ndarray) -> tuple:
    nodes = [helper.make_node("MatMul", ["a", "w"], ["t"], name="mm"), helper.make_node("Add", ["t", "c"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, 0, [2, 3]) for n in ("a", "c")],
                              [helper.make_tensor_value_info("y", 0, [2, 3])],
                              [numpy_helper.from_array(weights.astype(np.int8), "w")],
                              value_info=[helper.make_tensor_value_info("t", 0, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    for name in ("a", "c", "t", "y"):
        set_qtype(model, name, QType("int8", scales[name], 0))
    set_qtype(model, "w", QType("int8", scales["w"], 0, schema="symmetric"))
    return model


def test_the_chain_rule_adds_each_operators_step_to_what_it_carries():
    """MatMul computes t (e = 1). Add reads t (1 step) with L = 1 and the exact c: t_y = 1 + floor(1 * 1 * s_t / s_y)
    + 1. With the weight's column L1 norm 3 * s_w entering nowhere (a's error is 0), only the scales decide."""
    w = np.array([[1, -2, 0], [2, 1, -1], [0, 0, 2]])
    for s_t, s_y, want in ((0.25, 0.5, 2), (0.5, 0.5, 3), (1.0, 0.25, 6)):
        model = _matmul_add({"a": 0.125, "w": 0.5, "c": 0.25, "t": s_t, "y": s_y}, w)
        got = tolerances(model)["y"]
        assert got.steps == want, (s_t, s_y)
        assert "MatMul 1 -> Add" in got.reason


def test_an_error_entering_a_weighted_operator_is_scaled_by_the_weights_l1_norm():
    """Relu into a new type (one step), then MatMul: L = max column L1 norm of the dequantized weight = 4 * 0.5."""
    w = np.array([[1, -3, 0], [2, 1, 0], [0, 0, 1]])
    nodes = [helper.make_node("Relu", ["a"], ["r"], name="relu"), helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", 0, [2, 3])],
                              [helper.make_tensor_value_info("y", 0, [2, 3])],
                              [numpy_helper.from_array(w.astype(np.int8), "w")],
                              value_info=[helper.make_tensor_value_info("r", 0, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, "a", QType("int8", 0.25, 0))
    set_qtype(model, "r", QType("int8", 0.5, -128))
    set_qtype(model, "w", QType("int8", 0.5, 0, schema="symmetric"))
    set_qtype(model, "y", QType("int8", 0.75, 0))
    # t_r = 1; t_y = 1 + floor(L * t_r * s_r / s_y) + 1 = 1 + floor(2 * 1 * 0.5 / 0.75) + 1 = 3
    assert tolerances(model)["y"].steps == 3


def _float16_miss(scale: float) -> float:
    """The first float16 x > 1 whose quotient by ``scale``, divided in float16, rounds to another integer than the
    exact quotient: what a runtime dividing in the expressed type gets wrong."""
    for bits in range(0x3C00, 0x5800):
        x = np.array(bits, np.uint16).view(np.float16)
        exact = Fraction(float(x)) / Fraction(scale)
        nearest = round(exact)  # Python rounds Fractions half to even, exactly
        if int(np.rint(np.float16(x) / np.float16(scale))) != nearest:
            return float(x)
    raise AssertionError("no miss")


def test_a_near_tie_in_the_feeds_gives_quantize_linear_one_step_and_says_why():
    graph = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [3])],
                              [helper.make_tensor_value_info("y", 0, [3])],
                              [numpy_helper.from_array(np.array(0.300048828125, np.float16), "s"),
                               numpy_helper.from_array(np.array(0, np.int8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, "y", QType("int8", 0.300048828125, 0, expressed="float16"))  # float16(0.3)
    tie = 0.5 * 0.300048828125  # an exact tie: x / s = 0.5 (a float16 value)
    assert tolerances(model, {"x": np.array([tie, 1.0, -3.0], np.float16)})["y"].steps == 0
    miss = _float16_miss(0.300048828125)
    assert near_ties(np.array([miss]), 0.300048828125, "float16").tolist() == [True]
    near = tolerances(model, {"x": np.array([tie, miss, 1.0], np.float16)})["y"]
    assert near.steps == 1 and "1 element(s) of x are near-ties" in near.reason


@pytest.mark.parametrize("backend", ["reference-integer", "onnxruntime-unoptimized"])
def test_the_chain_rules_bound_holds_on_the_chains(backend):
    assert len(CHAINS) >= 24 and {len(c.tags["operator"]) for c in CHAINS}
    depths = {int(f.split("-")[1]) for c in CHAINS for f in c.tags["feature"] if f.startswith("depth-")}
    assert depths == set(range(2, 9))
    runner = load_backend(backend)
    outcomes = {c.id: run_case(runner, c).outcome for c in CHAINS}
    assert set(outcomes.values()) == {PASS}, {k: v for k, v in outcomes.items() if v != PASS}


@pytest.mark.parametrize("bias", ["random", "up", "down"])
def test_an_implementation_one_step_off_wherever_its_class_allows_stays_within_the_bound(monkeypatch, bias):
    """Every node whose class allows one step lands one step off (randomly, or always up / always down, the worst
    a systematic rounding bias does along a path): the chain rule's tolerance still holds."""
    rng = np.random.default_rng(19)
    original = evaluator._TypedNode._finish
    moved = []

    def finish(self, outputs, args, resolved):
        out = original(self, outputs, args, resolved)
        if operator_tolerance(self._node.op_type, self._in, self._out).steps == 0:
            return out
        perturbed = []
        for value, qtype in zip(out, self._out):
            if qtype is None or qtype.storage_type.is_float:
                perturbed.append(value)
                continue
            q = np.asarray(value).astype(np.int64)
            step = rng.integers(-1, 2, q.shape) if bias == "random" else np.full(q.shape, 1 if bias == "up" else -1)
            shifted = np.clip(q + step, qtype.storage_min, qtype.storage_max)
            moved.append(int(np.count_nonzero(shifted != q)))
            perturbed.append(shifted.astype(np.asarray(value).dtype))
        return tuple(perturbed)

    monkeypatch.setattr(evaluator._TypedNode, "_finish", finish)
    backend = ReferenceBackend()
    results = {c.id: run_case(backend, c) for c in CHAINS}
    assert sum(moved) > 100, "the perturbation moved values"
    assert {r.outcome for r in results.values()} == {PASS}, {k: r.message for k, r in results.items() if r.outcome != PASS}
    assert max(r.max_steps or 0 for r in results.values()) >= 2, "errors carried along the chains"


def test_the_near_tie_cases_hold_inputs_onnx_reference_misses():
    """semantics.md#quantize-precision: the near-tie cases sample the elements where a division in the expressed type misses the exact
    quotient; onnx.reference (x / scale in the input's type, then rint) misses every one, and allowed one step."""
    import onnx
    import onnx.reference

    cases = [c for c in load_cases() if "near-ties" in c.tags.get("feature", ())]
    assert {c.tags["expressed"] for c in cases} == {"float16", "float32"}
    for case in cases:
        assert case.tolerance == {"y": 1} and "near-ties" in case.tolerance_reason
        got = onnx.reference.ReferenceEvaluator(onnx.load(str(case.qdq_model_path))).run(None, case.feeds())[0]
        want = case.expected()["y"]
        missed = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert missed.max() == 1 and np.count_nonzero(missed) >= len(want) // 2, case.id


def test_every_execution_case_says_why_its_tolerance_is_what_it_is():
    """Exact cases too (semantics.md#tolerance-table: a tolerance_reason derived from the class): an all-0 case names why it is
    exact, a case allowing steps names the one-step class, a near tie or the chain rule."""
    cases = load_cases()
    exact = [c for c in cases if not any(c.tolerance.values())]
    assert len(exact) > 500
    assert all(c.tolerance_reason for c in cases), [c.id for c in cases if not c.tolerance_reason][:5]
    assert all(": exact (" in c.tolerance_reason for c in exact), [c.id for c in exact if ": exact (" not in
                                                                   c.tolerance_reason][:5]
    stepped = [c for c in cases if any(c.tolerance.values())]
    assert all(any(k in c.tolerance_reason for k in ("one storage step", "near-ties", "a chain")) for c in stepped)


def _definition(model, feeds):
    """The definitional reference's storage and reals of every tensor a node writes."""
    from onnx_qtypes.reference_ops import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model)
    names = [n for node in model.graph.node for n in node.output if n]
    stored = dict(zip(names, evaluator.run(names, feeds)))
    return stored, {n: evaluator.dequantized(n, v) for n, v in stored.items()}


@pytest.mark.parametrize("chain", ["attention", "convolutions", "gemm_concat_pad"])
def test_the_bound_holds_beyond_constant_weights(chain):
    """MatMul of two activations (attention's scores and context), Mul by a constant, Softmax, LayerNormalization,
    grouped ConvTranspose, Conv with an activation as weight, Gemm of two activations, Concat and Pad with other
    parameters, Div by a constant (tests/chain_models.py): the rule's bound (from the definition's values where the
    bound depends on data) holds for an implementation one step off at every node its class allows, systematically
    up or down or at random, and for the integer kernels and onnxruntime's unoptimized path."""
    import onnxruntime as ort
    from chain_models import CHAINS
    from compare_backends import one_step_off

    from onnx_qtypes.interop.lower import lower_model
    from onnx_qtypes.reference_ops import ReferenceEvaluator

    for seed in range(3):
        model, feeds = CHAINS[chain](seed)
        stored, reals = _definition(model, feeds)
        tolerance = tolerances(model, feeds, values=reals)["y"]
        assert 0 < tolerance.steps < 10 ** 6 and "a chain" in tolerance.reason
        want = stored["y"].astype(np.int64)
        got = {}
        for bias in ("random", "up", "down"):
            with one_step_off(seed, bias):
                got[bias] = ReferenceEvaluator(model).run(["y"], feeds)[0]
        got["integer"] = ReferenceEvaluator(model, kernels="integer").run(["y"], feeds)[0]
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(lower_model(model, "qdq").model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        got["onnxruntime-unoptimized"] = session.run(["y"], feeds)[0]
        off = {k: int(np.abs(v.astype(np.int64) - want).max()) for k, v in got.items()}
        assert max(off.values()) <= tolerance.steps, (seed, off, tolerance.steps)
        assert off["up"] >= 2, "errors carried along the chain"
