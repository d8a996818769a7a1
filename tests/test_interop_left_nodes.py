"""What the lift leaves is named node by node (op type, name, position in the file) with its reason and counted
exactly, by lift, lift --format json and check; a quantizing custom op is "unknown quantization", never "no
quantization"."""

from __future__ import annotations

import json

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes.cli import main
from onnx_qtypes.interop import lift_model

MS = "com.microsoft"


def _const(name: str, value, dtype) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def chain_after_reduce_mean(muls: int = 5, gemms: int = 3) -> onnx.ModelProto:
    """x -> Q -> QLinearReduceMean (which the lift does not read) -> ``muls`` QLinearMul -> ``gemms`` QGemm -> DQ -> y:
    everything after the unknown node reads its integers, as on PP-OCR rec quantized by onnxruntime."""
    inits = [_const("s", 0.05, np.float32), _const("z", 128, np.uint8), _const("ws", 0.01, np.float32),
             _const("wz", 128, np.uint8), _const("w", np.full((4, 4), 130), np.uint8)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["t0"], name="q_in"),
             helper.make_node("QLinearReduceMean", ["t0", "s", "z", "s", "z"], ["t1"], name="mean", domain=MS,
                              axes=[1], keepdims=1)]
    last = "t1"
    for k in range(muls):
        nodes.append(helper.make_node("QLinearMul", [last, "s", "z", last, "s", "z", "s", "z"], [f"m{k}"],
                                      name=f"mul{k}", domain=MS))
        last = f"m{k}"
    for k in range(gemms):
        nodes.append(helper.make_node("QGemm", [last, "s", "z", "w", "ws", "wz", "", "s", "z"], [f"g{k}"],
                                      name=f"gemm{k}", domain=MS))
        last = f"g{k}"
    nodes.append(helper.make_node("DequantizeLinear", [last, "s", "z"], ["y"], name="dq_out"))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)],
                             ir_version=10)


def test_every_node_left_is_named_and_counted_exactly():
    result = lift_model(chain_after_reduce_mean(5, 3))
    assert len(result.left) == 11  # Q, QLinearReduceMean, 5 QLinearMul, 3 QGemm, DQ
    assert ("left 11 quantization node(s) as they were: 5 com.microsoft.QLinearMul, 3 com.microsoft.QGemm, "
            "1 DequantizeLinear, 1 QuantizeLinear, 1 com.microsoft.QLinearReduceMean") in result.notes
    by_name = {n.name: n for n in result.left}
    assert by_name["mean"].index == 1
    assert by_name["mean"].reason == "an onnxruntime contrib operator the lift does not read"
    assert by_name["gemm2"].index == 9 and by_name["gemm2"].op_type == "QGemm"
    assert "stays plain integers" in by_name["mul0"].reason and "'mean' (/graph/node/1) is left" in by_name["mul0"].reason
    assert [n.index for n in result.left] == list(range(11))


def test_lift_and_check_print_each_left_node(tmp_path, capsys):
    path, out = tmp_path / "chain.onnx", tmp_path / "typed.onnx"
    onnx.save(chain_after_reduce_mean(2, 1), path)
    assert main(["lift", str(path), str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(n["node"], n["op_type"]) for n in doc["left"]] == [
        (0, "QuantizeLinear"), (1, "QLinearReduceMean"), (2, "QLinearMul"), (3, "QLinearMul"), (4, "QGemm"),
        (5, "DequantizeLinear")]
    main(["check", str(path)])
    printed = capsys.readouterr().out
    assert "the lift left 6 quantization node(s) as they were: 2 com.microsoft.QLinearMul" in printed
    assert "com.microsoft.QGemm 'gemm0' (/graph/node/4): tensor" in printed


def _custom(op_type: str, domain: str) -> onnx.ModelProto:
    """A Quark-style fake-quantizer (AMD Quark 0.13's BF16 / BFP / MX custom ops, domain com.amd.quark)."""
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["xq"], name="fq", domain=domain),
                               helper.make_node("Relu", ["xq"], ["y"], name="relu")], "custom",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(domain, 1)],
                             ir_version=10)


def test_a_quantizing_custom_op_is_unknown_quantization_never_no_quantization(tmp_path, capsys):
    for op_type in ("BFPQuantizeDequantize", "MXQuantizeDequantize", "ExtendedQuantizeLinear"):
        result = lift_model(_custom(op_type, "com.amd.quark"))
        assert [n.reason for n in result.left] == [f"unknown quantization: {op_type} (com.amd.quark) not lifted"]
        assert not any("no quantization" in text for text in [*result.notes, result.summary()])
    path = tmp_path / "bfp.onnx"
    onnx.save(_custom("BFPQuantizeDequantize", "com.amd.quark"), path)
    main(["check", str(path)])
    main(["lift", str(path), str(tmp_path / "out.onnx")])
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert "unknown quantization: BFPQuantizeDequantize (com.amd.quark) not lifted" in printed
    assert "no quantization" not in printed
    main(["show", str(path)])  # no row, and not "0 quantized tensors" alone: the node is counted
    assert ("note: the lift left 1 quantization node(s) as they were: 1 com.amd.quark.BFPQuantizeDequantize, which "
            "no row shows") in capsys.readouterr().out


def test_a_float_model_still_says_it_has_no_quantization():
    result = lift_model(_custom("Gelu", "com.example"))
    assert not result.left and "the model has no quantization; it lifts to itself" in result.notes


def test_quark_custom_ops_are_named_with_what_they_compute():
    """AMD Quark 0.13's MX and BF16 schemes as it writes them: the reason says what the node does, read from it."""
    mx = _custom("MXQuantizeDequantize", "com.amd.quark")
    mx.graph.node[0].attribute.extend([helper.make_attribute("element_dtype", b"fp4_e2m1"),
                                       helper.make_attribute("axis", 1), helper.make_attribute("block_size", 32)])
    (node,) = lift_model(mx).left
    assert node.reason == ("unknown quantization: MXQuantizeDequantize (com.amd.quark) not lifted: MX "
                           "quantize-dequantize of fp4_e2m1 in blocks of 32 along axis 1, each block's shared "
                           "power-of-two scale computed at run time")
    bf16 = _custom("ExtendedQuantizeLinear", "com.amd.quark")
    bf16.graph.node[0].input.extend(["s", "z"])
    bf16.graph.initializer.extend([helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]),
                                   helper.make_tensor("z", TensorProto.BFLOAT16, [], [0])])
    (node,) = lift_model(bf16).left
    assert node.reason.endswith("not lifted: quantization to bfloat16 storage (its zero point is bfloat16), a storage "
                                "type the proposal does not define")


def _one_contrib_node(op_type: str, **attrs) -> onnx.ModelProto:
    """x -> Q -> com.microsoft ``op_type`` (QGemm with a constant weight, or QLinearMul of its input twice) -> DQ."""
    inits = [_const("s", 0.05, np.float32), _const("z", 128, np.uint8), _const("ws", 0.01, np.float32),
             _const("wz", 128, np.uint8), _const("w", np.arange(16).reshape(4, 4) + 120, np.uint8)]
    inputs = (["t", "s", "z", "w", "ws", "wz", "", "s", "z"] if op_type == "QGemm"
              else ["t", "s", "z", "t", "s", "z", "s", "z"])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["t"], name="q_in"),
             helper.make_node(op_type, inputs, ["u"], name="op", domain=MS, **attrs),
             helper.make_node("DequantizeLinear", ["u", "s", "z"], ["y"], name="dq_out")]
    graph = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)],
                             ir_version=10)


@pytest.mark.parametrize("op_type, attrs", [("QGemm", {"beta": 1.0}), ("QGemm", {"beta": 0.5}),
                                            ("QLinearMul", {"axis": 0})])
def test_a_contrib_node_with_an_attribute_its_schema_does_not_take_is_left_as_onnxruntime_refuses_it(op_type, attrs):
    """QGemm's beta (even 1, what it means anyway): the float Gemm takes it, onnxruntime's QGemm does not and refuses
    the model; lifted, check would call clean and run would compute a file no runtime loads."""
    import onnxruntime as ort

    plain, extra = _one_contrib_node(op_type), _one_contrib_node(op_type, **attrs)
    ort.InferenceSession(plain.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=f"[Uu]nrecognized attribute: {next(iter(attrs))}"):
        ort.InferenceSession(extra.SerializeToString(), providers=["CPUExecutionProvider"])
    assert not lift_model(plain).left
    left = {n.name: n for n in lift_model(extra).left}
    assert left["op"].reason == f"{op_type} takes no attribute {next(iter(attrs))} (onnxruntime refuses the model)"


def test_the_attributes_each_contrib_op_takes_are_onnxruntime_s_own_schema_s():
    """qoperator.MICROSOFT's ``takes`` decides what the lift leaves and what run refuses (an attribute onnxruntime's
    schema lacks makes it refuse the model): the table against the schemas of the onnxruntime installed."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    from onnx_qtypes.interop.qoperator import MICROSOFT

    schemas = {s.name: s for s in ort_c.get_all_operator_schema() if s.domain == MS}
    for op_type, spec in MICROSOFT.items():
        assert set(spec.takes) == set(schemas[op_type].attributes), op_type


def test_a_contrib_node_whose_string_attribute_is_not_text_stays_out_of_onnx_s_domain(tmp_path):
    """Lifted, a QLinearAveragePool whose auto_pad holds b'VAL\\xffID' became an AveragePool of ONNX's domain that the
    reader refuses: lift wrote a file its own check refused, and check called the original clean. It is left, with
    that reason, and the lifted file reads."""
    pool = helper.make_node("QLinearAveragePool", ["t", "s", "z", "s", "z"], ["u"], name="pool", domain=MS,
                            kernel_shape=[2, 2], auto_pad="VALID")
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["t"], name="q_in"), pool,
             helper.make_node("DequantizeLinear", ["u", "s", "z"], ["y"], name="dq_out")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])],
                              [_const("s", 0.05, np.float32), _const("z", 128, np.uint8)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)],
                              ir_version=10)
    assert {n.name for n in lift_model(model).left} == set()  # with auto_pad of text: lifted whole
    next(a for a in pool.attribute if a.name == "auto_pad").s = b"VAL\xffID"
    model.graph.node[1].CopyFrom(pool)
    left = {n.name: n.reason for n in lift_model(model).left}
    assert left["pool"] == "attribute auto_pad holds b'VAL\\xffID', which is not UTF-8 (onnxruntime reads it as text)"
    path, lifted = tmp_path / "pool.onnx", tmp_path / "lifted.onnx"
    onnx.save(model, path)
    assert main(["lift", str(path), str(lifted)]) == 0
    assert main(["check", str(lifted)]) == 0  # read: nothing of ONNX's domain carries the bytes


def test_a_contrib_quantize_linear_whose_string_attribute_is_not_text_keeps_its_domain():
    node = helper.make_node("DequantizeLinear", ["t", "s", "z"], ["y"], name="dq", domain=MS)
    node.attribute.append(helper.make_attribute("note", b"\xfe"))
    graph = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["t"], name="q"), node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [_const("s", 0.05, np.float32), _const("z", 128, np.uint8)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)],
                              ir_version=10)
    result = lift_model(model)
    assert [(n.op_type, n.domain) for n in result.model.graph.node if n.name == "dq"] == [("DequantizeLinear", MS)]
    # left with its reason, and nothing typed on its say (the lift typed 't' between the pair, silently)
    assert {n.name: n.reason for n in result.left}["dq"] == "attribute note holds b'\\xfe', which is not UTF-8"
    from onnx_qtypes import quantized_tensors

    assert "t" not in quantized_tensors(result.model)


def test_a_quantize_linear_with_a_fourth_input_is_left_not_folded():
    """A mutated file repeated the zero point as a fourth input: the lift folded the node (the fourth ignored), so
    check called the file clean and lift wrote it typed; onnx.checker and onnxruntime refuse it. It is left, with
    that reason, and check reports QT412 on the file's node."""
    graph = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z", "z"], ["t"], name="q"),
                               helper.make_node("DequantizeLinear", ["t", "s", "z"], ["y"], name="dq")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [_const("s", 0.05, np.float32), _const("z", 128, np.uint8)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    left = {n.name: n.reason for n in lift_model(model).left}
    assert left["q"] == ("4 input(s) and 1 output(s), where the operator takes at most 3 and 1 (onnxruntime refuses "
                         "the model)")
    from onnx_qtypes import diagnose

    assert "QT412" in {d.rule for d in diagnose(model).diagnostics if d.is_error}


def test_a_softmax_whose_opset_is_no_integer_is_left_and_refused_by_run_in_the_same_words():
    """One reason, worded once (qoperator.opset_attribute_problem), for the lift and for run's kept node."""
    from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator

    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["t"], name="q_in"),
             helper.make_node("QLinearSoftmax", ["t", "s", "z", "s", "z"], ["u"], name="softmax", domain=MS,
                              opset=b"13"),
             helper.make_node("DequantizeLinear", ["u", "s", "z"], ["y"], name="dq_out")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [_const("s", 0.05, np.float32), _const("z", 128, np.uint8)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    reason = "attribute opset is b'13', not an integer"
    assert {n.name: n.reason for n in lift_model(model).left}["softmax"] == reason
    with pytest.raises(EvaluationError, match=f"'softmax'.*{reason}"):
        ReferenceEvaluator(model).run(None, {"x": np.zeros((2, 4), np.float32)})


def _dynamic_read_in_branches() -> onnx.ModelProto:
    """quantize_dynamic(EnableSubgraph=True) on an If whose branches hold a MatMul of one outer tensor: the
    DynamicQuantizeLinear stays in the main graph, written after the If (onnxruntime's order), and each branch's
    MatMulInteger reads its outputs."""
    def branch(name: str) -> onnx.GraphProto:
        nodes = [helper.make_node("MatMulInteger", ["x_q", f"{name}_w", "x_z", f"{name}_wz"], [f"{name}_i"],
                                  name=f"{name}_mm"),
                 helper.make_node("Cast", [f"{name}_i"], [f"{name}_y"], to=TensorProto.FLOAT)]
        output = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [2, 4])
        return helper.make_graph(nodes, name, [], [output], [_const(f"{name}_w", np.full((4, 4), 3), np.int8),
                                                             _const(f"{name}_wz", 0, np.int8)])

    nodes = [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=branch("then"),
                              else_branch=branch("else")),
             helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_s", "x_z"], name="quantize_x")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_quantization_read_inside_subgraphs_is_named_node_by_node_at_its_place_in_the_file(tmp_path, capsys):
    """The branches' MatMulInteger nodes went unnamed (only Q / DQ / QOperator nodes made a subgraph warning), the
    DynamicQuantizeLinear feeding them was "not a quantization pattern the lift knows", and, the file being out of
    order, lift and check named it at its place in the sorted graph (/graph/node/0), not in the file."""
    path = tmp_path / "branches.onnx"
    onnx.save(_dynamic_read_in_branches(), path)
    assert main(["lift", str(path), str(tmp_path / "typed.onnx"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(n["node"], n["op_type"], n["reason"]) for n in doc["left"]] == [
        (1, "DynamicQuantizeLinear", "its output 'x_q' is read inside a subgraph, which the lift does not lift")]
    main(["check", str(path)])
    printed = capsys.readouterr().out
    assert "DynamicQuantizeLinear 'quantize_x' (/graph/node/1): its output 'x_q' is read inside a subgraph" in printed
    branches = {a.name: k for k, a in enumerate(_dynamic_read_in_branches().graph.node[0].attribute)}
    for name in ("then", "else"):
        assert (f"MatMulInteger '{name}_mm' (/graph/node/0/attribute/{branches[name + '_branch']}/g/node/0): in a "
                "subgraph, which the lift does not lift") in printed, printed


def test_a_pair_nothing_reads_is_folded_whole(tmp_path):
    """quantize_static(EnableSubgraph) quantizes a tensor only If branches read, which read the float tensor itself:
    the file's Q / DQ pair on it is read by nothing. The lift removed the DequantizeLinear and kept the
    QuantizeLinear, whose typed output nothing read; now both go, and lower + onnxruntime is still the file's run."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    from onnx_qtypes.interop import lower_model
    from tests.corpus import run_onnxruntime

    rng = np.random.default_rng(3)

    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("MatMul", ["h", f"{name}_w"], [f"{name}_y"])], name, [],
                                 [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [2, 4])],
                                 [_const(f"{name}_w", rng.normal(size=(4, 4)), np.float32)])

    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=branch("then"), else_branch=branch("else"))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [_const("w", rng.normal(size=(4, 4)), np.float32), _const("zero", 0.0, np.float32)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), tmp_path / "f.onnx")
    samples = [{"x": rng.normal(size=(2, 4)).astype(np.float32)} for _ in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(samples)

        def get_next(self):
            return next(self.it, None)

    quantize_static(tmp_path / "f.onnx", tmp_path / "q.onnx", Reader(), quant_format=QuantFormat.QDQ,
                    extra_options={"EnableSubgraph": True})
    original = onnx.load(tmp_path / "q.onnx")
    read = {i for n in original.graph.node for i in n.input}
    dead = [n.name for n in original.graph.node if n.op_type == "DequantizeLinear" and n.output[0] not in read]
    assert dead  # the file's own dead pair (onnxruntime's quantizer, as measured)
    typed = lift_model(original).model
    read = {i for n in typed.graph.node for i in n.input} | {o.name for o in typed.graph.output}
    assert [n.name for n in typed.graph.node if n.op_type == "QuantizeLinear" and n.output[0] not in read] == []
    lowered = lower_model(typed).model
    for seed in range(2):
        feeds = {"x": np.random.default_rng(seed).normal(size=(2, 4)).astype(np.float32)}
        assert run_onnxruntime(lowered, feeds, optimize=False)["y"].tobytes() == \
            run_onnxruntime(original, feeds, optimize=False)["y"].tobytes()
