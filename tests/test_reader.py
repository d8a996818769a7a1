"""Every command reads a model the one shared way (proto/reader.py), so they all refuse, sort and locate alike."""

from __future__ import annotations

import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_qtypes import diagnose, load, lower, save
from onnx_qtypes.cli import main
from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.reader import read_model
from onnx_qtypes.reference_ops import ReferenceEvaluator

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")
COMMANDS = {  # each command's arguments around the model path
    "check": lambda m, tmp: ["check", m],
    "show": lambda m, tmp: ["show", m],
    "show-html": lambda m, tmp: ["show", m, "--format", "html", "-o", str(tmp / "page.html")],
    "lift": lambda m, tmp: ["lift", m, str(tmp / "lifted.onnx")],
    "lower": lambda m, tmp: ["lower", m, str(tmp / "lowered.onnx")],
    "run": lambda m, tmp: ["run", m, "--inputs", str(tmp / "in.npz"), "--outputs", str(tmp / "out.npz")],
    "calibrate": lambda m, tmp: ["calibrate", m, "--data", str(tmp / "in.npz"), "-o", str(tmp / "cal.onnx")],
    "compare": lambda m, tmp: ["compare", m, "--backend", "onnxruntime-unoptimized", "--inputs", str(tmp / "in.npz")],
}


def _error_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], lines
    return lines[0]


def _inputs(tmp_path) -> None:
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 3, 8, 8), np.float32))


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", ["symlink-loop", "dangling-symlink", "directory", "fifo", "unreadable"])
def test_a_file_that_is_no_model_file_is_one_line_naming_it(tmp_path, capsys, command, kind):
    _inputs(tmp_path)
    path = tmp_path / "model.onnx"
    if kind == "symlink-loop":
        os.symlink(tmp_path / "other.onnx", path)
        os.symlink(path, tmp_path / "other.onnx")
        why = "symlink loop (too many levels of symbolic links)"
    elif kind == "dangling-symlink":
        os.symlink(tmp_path / "gone.onnx", path)
        why = f"is a symlink to {tmp_path / 'gone.onnx'}, which does not exist"
    elif kind == "directory":
        path.mkdir()
        why = "is a directory"
    elif kind == "fifo":
        os.mkfifo(path)
        why = "not a regular file (a device, FIFO or socket)"
    else:  # a regular file whose reading fails: the kernel's own memory file, size 0, read -> EIO
        path = "/proc/self/mem"
        why = "cannot read (Input/output error)"
    line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
    assert line.startswith(f"onnx-qtypes: error: {path}: {why}"), line


def _typed_cnn(**change) -> onnx.ModelProto:
    model = load(os.path.join(EXAMPLES, "typed_cnn.onnx"))
    for name, edit in change.items():
        edit(next(t for t in model.graph.initializer if t.name == name))
    return model


def _short(tensor: onnx.TensorProto) -> None:
    tensor.raw_data = tensor.raw_data[:-1]


def _huge(tensor: onnx.TensorProto) -> None:
    del tensor.dims[:]
    tensor.dims.extend([2**20, 2**20])  # 2^40 elements over the same few bytes


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(("edit", "why"), [(_short, "dims [4, 3, 3, 3] need 108 bytes of INT8 raw_data, found 107"),
                                           (_huge, "dims [1048576, 1048576] need 1099511627776 bytes of INT8 raw_data")])
def test_every_command_refuses_a_stored_tensor_its_dims_do_not_fit(tmp_path, capsys, command, edit, why):
    _inputs(tmp_path)
    path = tmp_path / "model.onnx"
    save(_typed_cnn(w=edit), path)
    k = [t.name for t in load(path, load_external_data=False).graph.initializer].index("w")
    line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
    assert line.startswith(f"onnx-qtypes: error: {path}: /graph/initializer/{k}: tensor 'w': {why}"), line


def _also_int32_data(tensor: onnx.TensorProto) -> None:
    tensor.int32_data.extend([1] * (len(tensor.raw_data) or 1))  # the same count again, in a second field


def _int32_for_float(tensor: onnx.TensorProto) -> None:  # a float scale's values where int32s belong
    values = onnx.numpy_helper.to_array(tensor).ravel().view(np.int32).tolist()
    tensor.ClearField("raw_data")
    tensor.int32_data.extend(values)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(("edit", "name", "why"), [
    (_also_int32_data, "w", "holds values in both raw_data and int32_data; a tensor holds them in one field"),
    (_int32_for_float, "x_scale", "holds its FLOAT values in int32_data, where float_data holds them")])
def test_every_command_refuses_a_tensor_whose_values_are_not_in_its_one_field(tmp_path, capsys, command, edit, name,
                                                                             why):
    """onnxruntime reads raw_data and ignores the rest; onnx.checker refuses the file. check called it clean and
    lower's result was refused."""
    _inputs(tmp_path)
    path = tmp_path / "model.onnx"
    model = load(os.path.join(EXAMPLES, "broken_qdq_cnn.onnx"))
    k = [t.name for t in model.graph.initializer].index(name)
    edit(model.graph.initializer[k])
    with pytest.raises(onnx.checker.ValidationError, match="one and only one value field|should be stored in field"):
        onnx.checker.check_model(model)
    onnx.save(model, path)
    line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
    assert line.startswith(f"onnx-qtypes: error: {path}: /graph/initializer/{k}: tensor {name!r}: {why}"), line
    assert not (tmp_path / "lifted.onnx").exists() and not (tmp_path / "lowered.onnx").exists()


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(("node", "field", "value"), [(2, "f", 0.0), (4, "i", 1), (2, "floats", [1.0])])
def test_every_command_refuses_an_attribute_whose_value_is_in_a_field_of_another_type(tmp_path, capsys, command, node,
                                                                                      field, value):
    """The weight DequantizeLinear's INT axis also holding a float (a MatMulNBits' bits so, in the inconsistency
    scan): onnx.checker and onnxruntime refuse the file, but the lift read the INT field, so check called it clean
    and lower's result was refused; a Conv's INTS pads with an INT too."""
    _inputs(tmp_path)
    path = tmp_path / "model.onnx"
    model = load(os.path.join(EXAMPLES, "broken_qdq_cnn.onnx"))
    attribute = model.graph.node[node].attribute[0]
    if isinstance(value, list):
        getattr(attribute, field).extend(value)
    else:
        setattr(attribute, field, value)
    with pytest.raises(onnx.checker.ValidationError, match="type field and data field mismatch"):
        onnx.checker.check_model(model)
    onnx.save(model, path)
    line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
    kind = onnx.AttributeProto.AttributeType.Name(attribute.type)
    assert line.startswith(f"onnx-qtypes: error: {path}: /graph/node/{node}/attribute/0: attribute "
                           f"{attribute.name!r} is of type {kind} but holds a value in field {field!r}"), line
    assert not (tmp_path / "lifted.onnx").exists() and not (tmp_path / "lowered.onnx").exists()


def _reversed(model: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes = list(out.graph.node)[::-1]
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


def test_an_unsorted_graph_is_checked_run_and_lowered_as_its_sorted_form():
    typed = load(os.path.join(EXAMPLES, "broken_cnn.onnx"))
    unsorted = _reversed(typed)
    read = read_model(unsorted)
    assert [n.op_type for n in read.model.graph.node] == [n.op_type for n in typed.graph.node]
    assert list(unsorted.graph.node) == list(_reversed(typed).graph.node)  # the caller's model is not changed
    count = len(typed.graph.node)

    def places(model):
        return sorted((d.rule, d.location.pointer, d.message) for d in diagnose(model).diagnostics)

    # the same findings, each at the place the file has the node: index i of the sorted graph is count-1-i
    flip = {f"/graph/node/{i}": f"/graph/node/{count - 1 - i}" for i in range(count)}
    expected = sorted((rule, next((flip[p] + pointer[len(p):] for p in flip if pointer.startswith(p + "/")
                                   or pointer == p), pointer), message) for rule, pointer, message in places(typed))
    assert places(unsorted) == expected and expected
    good = load(os.path.join(EXAMPLES, "typed_cnn.onnx"))
    x = np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32)
    want = ReferenceEvaluator(good).run(None, {"x": x})
    got = ReferenceEvaluator(read_model(_reversed(good)).model).run(None, {"x": x})
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert lower(_reversed(good)).graph.node == lower(good).graph.node


def test_lower_names_a_node_of_a_sorted_file_where_the_file_has_it(tmp_path, capsys):
    """The Loop of examples/ops/loop.onnx (a body lower cannot write) read through an Identity written after it: the
    reader sorts the Loop to node 1, and lower named it there, not at node 0 where the file has it."""
    model = load(os.path.join(EXAMPLES, "ops", "loop.onnx"))
    loop = model.graph.node[0]
    loop.input[2] = "x_passed"
    model.graph.node.append(helper.make_node("Identity", ["x"], ["x_passed"], name="pass"))
    path = tmp_path / "unsorted.onnx"
    onnx.save(model, path)
    line = _error_line(capsys, COMMANDS["lower"](str(path), tmp_path))
    assert f"{path}: Loop 'loop_0' (/graph/node/0): Relu 'carry' (/graph/node/0/attribute/0/g/node/0) in its" in line


def _branch_out_of_order(then_nodes: list[onnx.NodeProto], value_info: list | None = None) -> onnx.ModelProto:
    """An If at node 0 reading 'xp', which node 1 writes (sorted: the If is node 1), its then_branch of
    ``then_nodes`` writing 't_y'."""
    then = helper.make_graph(then_nodes, "then", [], [helper.make_tensor_value_info("t_y", TensorProto.FLOAT, [2, 4])],
                             [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "s"),
                              onnx.numpy_helper.from_array(np.array(0, np.int8), "z")], value_info=value_info or [])
    other = helper.make_graph([helper.make_node("Identity", ["xp"], ["e_y"], name="e_id")], "else", [],
                              [helper.make_tensor_value_info("e_y", TensorProto.FLOAT, [2, 4])])
    nodes = [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other),
             helper.make_node("Identity", ["x"], ["xp"], name="pass")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_lift_and_check_name_the_nodes_of_a_sorted_subgraph_where_the_file_has_them(tmp_path, capsys):
    """The branch holds its DequantizeLinear before the QuantizeLinear it reads, in an If the main graph holds out of
    order too: both levels are sorted, and lift named the branch's nodes at their sorted places."""
    nodes = [helper.make_node("DequantizeLinear", ["tq", "s", "z"], ["t_y"], name="t_dq"),
             helper.make_node("QuantizeLinear", ["xp", "s", "z"], ["tq"], name="t_q")]
    path = tmp_path / "branch.onnx"
    onnx.save(_branch_out_of_order(nodes), path)
    then = [a.name for a in _branch_out_of_order(nodes).graph.node[0].attribute].index("then_branch")
    for argv in (["lift", str(path), str(tmp_path / "lifted.onnx")], ["check", str(path)]):
        main(argv)
        printed = "".join(capsys.readouterr())
        for name, k in (("t_dq", 0), ("t_q", 1)):
            assert f"'{name}' (/graph/node/0/attribute/{then}/g/node/{k}): in a subgraph" in printed, (argv, printed)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_names_a_malformed_part_of_a_sorted_file_where_the_file_has_it(tmp_path, capsys, command):
    """A declaration in the If's branch whose field 1000 is not a message, the If at node 0 of the file and node 1
    once sorted: every command named /graph/node/1/... (calibrate without the file in front)."""
    from onnx_qtypes.proto.external import varint

    declared = helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 4])
    declared.type.tensor_type.MergeFromString(varint(1000 << 3) + varint(5))  # a varint where a message goes
    nodes = [helper.make_node("Identity", ["xp"], ["t"], name="t_id"), helper.make_node("Identity", ["t"], ["t_y"])]
    path = tmp_path / "branch.onnx"
    onnx.save(_branch_out_of_order(nodes, [declared]), path)
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 4), np.float32), c=np.array(True))
    if command == "calibrate":  # samples on a leading axis
        np.savez(tmp_path / "in.npz", x=np.zeros((2, 2, 4), np.float32), c=np.array([True, True]))
    then = [a.name for a in onnx.load(path).graph.node[0].attribute].index("then_branch")
    line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
    assert line.startswith(f"onnx-qtypes: error: {path}: /graph/node/0/attribute/{then}/g/value_info/0"), line


def test_file_text_moves_the_places_a_message_names_and_nothing_else():
    """Only JSON pointers where a message puts them (at the start, after a space or "("); a quoted name holding one,
    a path ending in one and a run of digits too long for int() stay as they are."""
    from onnx_qtypes.proto.graph_order import file_text

    orders = {"/graph": [2, 0, 1], "/graph/node/1/attribute/0/g": [1, 0]}
    text = ("/graph/node/0/input/1: Conv 'c' (/graph/node/1), If (/graph/node/1/attribute/0/g/node/0), "
            "/graph/initializer/0 and /functions/0/node/1")
    assert file_text(text, orders) == ("/graph/node/2/input/1: Conv 'c' (/graph/node/0), If "
                                       "(/graph/node/0/attribute/0/g/node/1), /graph/initializer/0 and "
                                       "/functions/0/node/1")
    for kept in ("node 'q /graph/node/1' (QuantizeLinear)", 'node "it\'s /graph/node/0"', "./graph/node/1/m.onnx",
                 "(/graph/node/" + "7" * 5000 + ")"):
        assert file_text(kept, orders) == kept
    assert file_text(text, {}) == text


def test_check_names_in_its_messages_the_places_of_a_sorted_quantizer_file():
    """A finding of the lift (QT307, naming the two nodes that disagree) named them at their sorted places."""
    plain = load(os.path.join(EXAMPLES, "broken_qdq_cnn.onnx"))
    count = len(plain.graph.node)

    def messages(model):
        return sorted(d.message for d in diagnose(model).diagnostics)

    flip = {f"/graph/node/{i}": f"/graph/node/{count - 1 - i}" for i in range(count)}
    named = [m for m in messages(plain) if "(/graph/node/" in m]
    assert named  # the file's own words name nodes
    expected = sorted(re.sub(r"\(/graph/node/(\d+)\)", lambda m: f"({flip[m.group(0)[1:-1]]})", m)
                      for m in messages(plain))
    assert messages(_reversed(plain)) == expected


def test_lift_lists_what_it_left_of_a_sorted_file_in_file_order(tmp_path, capsys):
    """broken_qdq_cnn.onnx with its pair's scales agreeing (the lift refuses it otherwise) and a zero scale, whose
    pair the lift leaves: the list came in sorted order, each node at its place in the file."""
    plain = load(os.path.join(EXAMPLES, "broken_qdq_cnn.onnx"))
    dequantize = next(n for n in plain.graph.node if n.name == "dequantize_y")
    dequantize.input[1] = next(n for n in plain.graph.node if n.output[0] == dequantize.input[0]).input[1]
    zero = next(t for t in plain.graph.initializer if t.name == "relu_q_scale")
    zero.CopyFrom(onnx.numpy_helper.from_array(np.array(0.0, np.float32), zero.name))
    import json

    def left(model: onnx.ModelProto) -> list[tuple[int, str]]:
        path = tmp_path / "model.onnx"
        onnx.save(model, path)
        assert main(["lift", str(path), str(tmp_path / "lifted.onnx"), "--format", "json"]) == 0
        return [(n["node"], n["name"]) for n in json.loads(capsys.readouterr().out)["left"]]

    in_order, count = left(plain), len(plain.graph.node)
    assert len(in_order) > 1
    assert left(_reversed(plain)) == sorted((count - 1 - k, name) for k, name in in_order)


def test_an_error_of_the_lift_of_a_sorted_model_keeps_its_words():
    """Its message put back at the file's places was made again, and an error that puts words in front of its
    message said them twice."""
    from onnx_qtypes.interop import lift_model
    from onnx_qtypes.interop.errors import StatisticsImportError

    with pytest.raises(StatisticsImportError) as raised:
        lift_model(_reversed(load(os.path.join(EXAMPLES, "broken_qdq_cnn.onnx"))), statistics={"x": "bad"})
    assert str(raised.value).count("not onnxruntime calibration data") == 1, str(raised.value)


def test_a_cycle_is_refused_alike_by_every_command(tmp_path, capsys):
    plain = lower(load(os.path.join(EXAMPLES, "typed_cnn.onnx")))
    relu = next(i for i, n in enumerate(plain.graph.node) if n.op_type == "Relu")
    after = next(n for n in plain.graph.node if n.op_type == "DequantizeLinear"
                 and n.input[0].startswith(plain.graph.node[relu].output[0]))
    plain.graph.node[relu].input[0] = after.output[0]  # Relu reads the dequantized form of its own output
    path = tmp_path / "cycle.onnx"
    onnx.save(plain, path)
    _inputs(tmp_path)
    lines = {_error_line(capsys, COMMANDS[c](str(path), tmp_path)) for c in ("check", "show", "lift", "lower", "run")}
    assert len(lines) == 1, lines
    assert f"/graph/node/{relu} (Relu 'relu'): reads what it computes itself, through the cycle" in lines.pop()


def test_a_negative_dimension_is_read_as_unknown():
    """-1 (PaddleOCR's "any size") on a Slice input used to abort onnx.shape_inference inside check and lift."""
    nodes = [helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="slice")]
    inits = [onnx.numpy_helper.from_array(np.array([0], np.int64), "starts"),
             onnx.numpy_helper.from_array(np.array([2], np.int64), "ends")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, -1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    read = read_model(model)
    dim = read.model.graph.input[0].type.tensor_type.shape.dim[1]
    assert not dim.HasField("dim_value") and model.graph.input[0].type.tensor_type.shape.dim[1].dim_value == -1
    assert diagnose(model).diagnostics == ()


@pytest.mark.parametrize(("field", "value", "why"), [
    ("opset", 2**32, "/opset_import/0: domain 'ai.onnx' version 4294967296 is not an opset version"),
    ("ir", 2**62, f"/ir_version: {2**62} is not an IR version"),
])
def test_versions_beyond_int32_are_refused(field, value, why):
    model = load(os.path.join(EXAMPLES, "typed_cnn.onnx"))
    if field == "opset":
        model.opset_import[0].version = value
    else:
        model.ir_version = value
    with pytest.raises(ModelLoadError, match=why):
        read_model(model.SerializeToString())


def test_qt412_judges_the_quantization_nodes_as_the_file_writes_them():
    """A QDQ file: the lift folds the DequantizeLinear away, yet QT412 names it where the file has it."""
    from checker_models import _per_axis_dequantize

    found = [d for d in diagnose(_per_axis_dequantize(11)).diagnostics if d.rule == "QT412"]
    assert [(d.location.pointer, d.location.node) for d in found] == [("/graph/node/0/attribute/0", "dq")]
    assert not [d for d in diagnose(_per_axis_dequantize(13)).diagnostics if d.rule == "QT412"]


def test_show_locates_a_sorted_quantizer_file_where_the_file_has_it(tmp_path, capsys):
    import json

    plain = load(os.path.join(EXAMPLES, "broken_qdq_cnn.onnx"))
    count = len(plain.graph.node)
    onnx.save(plain, tmp_path / "sorted.onnx")
    onnx.save(_reversed(plain), tmp_path / "reversed.onnx")

    def places(name):
        assert main(["show", str(tmp_path / name), "--format", "json"]) == 0
        return {t["tensor"]: t["declared_at"] for t in json.loads(capsys.readouterr().out)["tensors"]}

    flip = {f"/graph/node/{i}": f"/graph/node/{count - 1 - i}" for i in range(count)}
    expected = {name: [flip.get(p, p) for p in at] for name, at in places("sorted.onnx").items()}
    assert places("reversed.onnx") == expected and any(p in flip for at in expected.values() for p in at)


def _model_with_every_kind_of_graph() -> onnx.ModelProto:
    """A main graph with initializers, an If whose branches hold nodes, and a function body."""
    branch = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="inner")], "then", [],
                               [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["r"])], "else", [],
                              [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q", axis=0),
             helper.make_node("DequantizeLinear", ["q", "s", ""], ["d"], name="d"),
             helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch, else_branch=other),
             helper.make_node("Twice", ["d"], ["t"], domain="local")]
    graph = helper.make_graph(nodes, "main", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                              helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [helper.make_tensor("s", TensorProto.FLOAT, [], [0.5]),
                               helper.make_tensor("z", TensorProto.INT8, [], [3])])
    function = helper.make_function("local", "Twice", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                                    [helper.make_opsetid("", 21)])
    return helper.make_model(graph, functions=[function], ir_version=10,
                             opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)])


def test_what_the_reader_keeps_of_each_graph_is_what_its_nodes_and_initializers_hold():
    """The later passes (QT412, the lift) take node fields from ``ReadModel.reads`` instead of reading them again:
    each graph's record must be exactly what protobuf gives for it, node by node."""
    model = _model_with_every_kind_of_graph()
    read = read_model(model)
    graphs = {**dict(read.graphs()), "/functions/0": model.functions[0]}
    assert set(read.reads) == set(graphs) and len(graphs) == 4  # main, both If branches, the function body
    for pointer, graph in graphs.items():
        kept = read.reads[pointer]
        nodes = list(graph.node)
        assert kept.op_types == [n.op_type for n in nodes]
        assert kept.domains == [n.domain for n in nodes]
        assert kept.inputs == [list(n.input) for n in nodes]
        assert kept.outputs == [list(n.output) for n in nodes]
        assert kept.attributes == [tuple(a.name for a in n.attribute) for n in nodes]
        tensors = list(getattr(graph, "initializer", ()))
        assert kept.initializers == [t.name for t in tensors]
        assert kept.initializer_types == [t.data_type for t in tensors]
    assert read.reads["/graph"].inputs[1] == ["q", "s", ""]  # an omitted optional input stays in its place


def _branch(op: str, reads: str, writes: str, inputs: list[onnx.ValueInfoProto] = ()) -> onnx.GraphProto:
    return helper.make_graph([helper.make_node(op, [reads], [writes], name=f"in_{op}")], op, list(inputs),
                             [helper.make_tensor_value_info(writes, TensorProto.FLOAT, [2])])


def _model(nodes: list[onnx.NodeProto], outputs: list[str]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2]) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_a_branch_may_write_a_name_the_outer_graph_writes_only_after_it():
    """onnx.checker allows it (the If's scope has not seen the later name), and the If is no reader of that name:
    the graph is in order and runs as onnxruntime runs it, where the reader called it a cycle."""
    nodes = [helper.make_node("If", ["c"], ["y"], name="choose", then_branch=_branch("Neg", "x", "later"),
                              else_branch=_branch("Abs", "x", "e")),
             helper.make_node("Relu", ["x"], ["later"], name="after")]
    model = _model(nodes, ["y", "later"])
    onnx.checker.check_model(model)
    assert not read_model(model).orders  # in order, nothing sorted
    feeds = {"x": np.array([-1.0, 2.0], np.float32), "c": np.array(True)}
    y, later = ReferenceEvaluator(model).run(None, feeds)
    np.testing.assert_array_equal(y, [1.0, -2.0])
    np.testing.assert_array_equal(later, [0.0, 2.0])


def test_a_branch_writing_a_name_of_its_nearest_enclosing_body_is_located_there():
    """The Loop body's input x hides the main graph's x; an If inside the body writing x clashes with the body's x,
    and the message points at that definition, not at the outer one it hides."""
    inner_if = helper.make_node("If", ["cond_in"], ["v"], name="inner", then_branch=_branch("Neg", "z", "x"),
                                else_branch=_branch("Abs", "z", "w"))
    body = helper.make_graph([inner_if, helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
                              helper.make_node("Identity", ["z"], ["z_out"], name="carry")], "body",
                             [helper.make_tensor_value_info("it", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                              helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v", TensorProto.FLOAT, [2]),
                              helper.make_tensor_value_info("z_out", TensorProto.FLOAT, [2])])
    loop = helper.make_node("Loop", ["", "c", "x", "x"], ["y", "y2"], name="loop", body=body)
    model = _model([loop], ["y", "y2"])
    with pytest.raises(onnx.checker.ValidationError, match="single static assignment"):
        onnx.checker.check_model(model)
    with pytest.raises(ModelLoadError, match=r"/graph/node/0/attribute/0/g/node/0/attribute/1/g/node/0 \(Neg "
                                             r"'in_Neg'\): writes 'x', which an enclosing graph defines before this "
                                             r"subgraph \(/graph/node/0/attribute/0/g/input/2\)"):
        read_model(model)


def test_a_function_input_that_is_not_utf8_is_named_not_an_internal_error():
    function = helper.make_function("local", "F", ["fx"], ["fy"], [helper.make_node("Relu", ["fx"], ["fy"])],
                                    [helper.make_opsetid("", 21)])
    model = _model([helper.make_node("F", ["x"], ["y"], domain="local", name="call")], ["y"])
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.functions.append(function)
    data = model.SerializeToString().replace(b"\x22\x02fx", b"\x22\x02\xff\xfe", 1)  # FunctionProto.input (field 4)
    with pytest.raises(ModelLoadError, match=r"/functions/0/input/0 holds b'\\xff\\xfe', which is not UTF-8"):
        read_model(data)


@pytest.mark.parametrize("fault, message", [
    ({"reads": "ghost"}, r"/functions/0/node/1 \(Relu 'second'\): reads 'ghost', which no input or node of the "
                         r"function body defines"),
    ({"writes": "fy"}, r"/functions/0/node/1 \(Relu 'second'\): writes 'fy' as /functions/0/node/0 \(Relu 'first'\) "
                       r"does; a function body defines each name once"),
    ({"writes": "fx"}, r"/functions/0/node/1 \(Relu 'second'\): writes 'fx', which is the function body's input; a "
                       r"function body defines each name once"),
])
def test_a_fault_in_a_function_body_is_called_one_of_the_function_body_not_of_a_graph(fault, message):
    body = [helper.make_node("Relu", ["fx"], ["fy"], name="first"),
            helper.make_node("Relu", [fault.get("reads", "fy")], [fault.get("writes", "fz")], name="second")]
    function = helper.make_function("local", "F", ["fx"], ["fy"], body, [helper.make_opsetid("", 21)])
    model = _model([helper.make_node("F", ["x"], ["y"], domain="local", name="call")], ["y"])
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.functions.append(function)
    with pytest.raises(onnx.checker.ValidationError):  # onnx.checker refuses each as well
        onnx.checker.check_model(model, full_check=True)
    with pytest.raises(ModelLoadError, match=message) as refused:
        read_model(model)
    assert "graph" not in str(refused.value)


def test_strings_in_raw_data_are_named_as_such():
    """onnx.checker: STRING data should not be stored in raw_data; the reader said "need 2 strings, found 0"."""
    tensor = helper.make_tensor("names", TensorProto.STRING, [2], [b"a", b"b"])
    tensor.ClearField("string_data")
    tensor.raw_data = b"ab"
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_tensor(tensor)
    model = _model([helper.make_node("Identity", ["x"], ["y"])], ["y"])
    model.graph.initializer.append(tensor)
    with pytest.raises(ModelLoadError, match=r"/graph/initializer/0: tensor 'names': holds STRING values in raw_data, "
                                             r"where string_data holds them"):
        read_model(model)


def test_the_quick_size_yes_sees_every_typed_field_beside_raw_data():
    """tensor_sizes.fits unrolls encoding.TYPED_FIELDS for speed: a typed field it forgot would let a tensor with
    two value fields through the quick path, unread by the check that names them."""
    from onnx import numpy_helper

    from onnx_qtypes.proto.encoding import TYPED_FIELDS
    from onnx_qtypes.proto.tensor_sizes import fits

    plain = numpy_helper.from_array(np.zeros(2, np.float32), "t")
    assert fits(plain)
    for field in TYPED_FIELDS:
        tensor = onnx.TensorProto()
        tensor.CopyFrom(plain)
        getattr(tensor, field).append(b"x" if field == "string_data" else 1)
        assert not fits(tensor), field


def _resize(mode: bytes, domain: str = "") -> onnx.ModelProto:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", domain=domain, mode="nearest")
    node.attribute[0].s = mode  # AttributeProto.s is bytes to protobuf: nothing decodes it on the way in
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    opsets = [helper.make_opsetid("", 19)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_string_attribute_of_an_onnx_operator_that_is_not_utf8_is_refused_alike_by_every_command(tmp_path, capsys,
                                                                                               command):
    """Resize's mode holding b'\\xf5': check called it clean, lift and lower copied it, and run ended in onnx.reference's
    bare "'utf-8' codec can't decode byte 0xf5" naming neither node nor attribute."""
    _inputs(tmp_path)
    path = tmp_path / "model.onnx"
    onnx.save(_resize(b"\xf5"), path)
    line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
    assert line.endswith(f"{path}: /graph/node/0/attribute/0/s holds b'\\xf5', which is not UTF-8; ONNX's operators "
                         "read their string attributes as text"), line
    onnx.save(_resize(b"nearest"), path)  # the same file with a mode of text: read by every command
    if command == "calibrate":  # samples on a leading axis
        np.savez(tmp_path / "in.npz", x=np.zeros((2, 1, 3, 8, 8), np.float32))
    if command == "compare":  # read, and found to hold no quantization
        assert _error_line(capsys, COMMANDS[command](str(path), tmp_path)).endswith("nothing to compare")
        return
    assert main(COMMANDS[command](str(path), tmp_path)) in (0, 1), capsys.readouterr().err


def test_a_string_attribute_of_another_domain_may_hold_any_bytes_until_the_reference_reads_it(tmp_path, capsys):
    """Other domains may keep binary in a string attribute (a runtime's cached context): the reader takes it, and
    run names the attribute when onnx.reference decodes it (a model's own function reads its attributes as text)."""
    body = [helper.make_node("Identity", ["fx"], ["fy"])]
    function = helper.make_function("local", "F", ["fx"], ["fy"], body, [helper.make_opsetid("", 17)],
                                    attributes=["tag"])
    node = helper.make_node("F", ["x"], ["y"], domain="local", name="call", tag="text")
    node.attribute[0].s = b"\xff\xfe"
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                              functions=[function], ir_version=8)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    _inputs(tmp_path)
    assert main(["check", str(path)]) == 0
    line = _error_line(capsys, COMMANDS["run"](str(path), tmp_path))
    assert line.endswith("/graph/node/0/attribute/0/s holds b'\\xff\\xfe', which is not UTF-8; F 'call' reads it as "
                         "text"), line


def test_a_string_tensor_that_is_not_utf8_is_named_not_a_non_text_attribute_beside_it(tmp_path, capsys):
    """onnx.proto holds each element of a STRING tensor as UTF-8 text, and onnx.reference decodes it so: the reader
    names the element (run said "'utf-8' codec can't decode byte 0xfe", or named the attribute beside it; check,
    lift and lower read the file)."""
    body = [helper.make_node("Identity", ["fx"], ["fy"])]
    function = helper.make_function("local", "F", ["fx"], ["fy"], body, [helper.make_opsetid("", 17)],
                                    attributes=["tag"])
    call = helper.make_node("F", ["x"], ["y"], domain="local", name="call", tag="text")
    call.attribute[0].s = b"\xff\xfe"
    strings = helper.make_tensor("c", TensorProto.STRING, [1], [b"\xfe\xfd"])
    graph = helper.make_graph([helper.make_node("Identity", ["c"], ["z"], name="id"), call], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8]),
                               helper.make_tensor_value_info("z", TensorProto.STRING, [1])], [strings])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                              functions=[function], ir_version=8)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    _inputs(tmp_path)
    for command in ("check", "lift", "run"):
        line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
        assert line.endswith(f"{path}: /graph/initializer/0/string_data/0 holds b'\\xfe\\xfd', which is not UTF-8; "
                             "onnx.proto holds each element of a STRING tensor as UTF-8 text"), line


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("field", ["doc_string", "quantization_annotation"])
def test_any_string_field_that_is_not_utf8_is_refused_alike_by_every_command(tmp_path, capsys, command, field):
    """Lift and lower refused any string field that is not UTF-8 (they copy and rewrite them all); check, show and
    run refused names only, so check called a file clean that lift then refused (a mutated quantization annotation
    key, found by the inconsistency scan)."""
    _inputs(tmp_path)
    model = _resize(b"nearest")
    if field == "doc_string":
        model.graph.doc_string = "@@"
    else:
        model.graph.quantization_annotation.add(tensor_name="y").quant_parameter_tensor_names.add(key="@@", value="s")
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString().replace(b"@@", b"\xff\xfe"))
    pointer = ("/graph/doc_string" if field == "doc_string"
               else "/graph/quantization_annotation/0/quant_parameter_tensor_names/0/key")
    line = _error_line(capsys, COMMANDS[command](str(path), tmp_path))
    assert line.endswith(f"{path}: {pointer} holds b'\\xff\\xfe', which is not UTF-8; ONNX names and strings must be "
                         "UTF-8 text (rename it)"), line


def test_run_names_a_non_text_attribute_inside_a_subgraph_of_a_function_body(tmp_path, capsys):
    """The walk that names the attribute covers every list of nodes the reader walks (proto.reader.every_graph):
    it missed the If bodies inside a function body."""
    f_body = [helper.make_node("Identity", ["fx"], ["fy"])]
    f = helper.make_function("local", "F", ["fx"], ["fy"], f_body, [helper.make_opsetid("", 17)], attributes=["tag"])
    call = helper.make_node("F", ["gx"], ["t"], domain="local", name="call", tag="text")
    call.attribute[0].s = b"\xff\xfe"
    branch = helper.make_graph([call], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Identity", ["gx"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    g_body = [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])),
              helper.make_node("If", ["c"], ["gy"], then_branch=branch, else_branch=other)]
    g = helper.make_function("local", "G", ["gx"], ["gy"], g_body,
                             [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    graph = helper.make_graph([helper.make_node("G", ["x"], ["y"], domain="local", name="outer")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                              functions=[f, g], ir_version=8)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    _inputs(tmp_path)
    line = _error_line(capsys, COMMANDS["run"](str(path), tmp_path))
    assert line.endswith("/functions/1/node/1/attribute/1/g/node/0/attribute/0/s holds b'\\xff\\xfe', which is not "
                         "UTF-8; F 'call' reads it as text"), line


def test_a_string_constant_that_is_not_utf8_is_named_at_its_attribute():
    value = helper.make_tensor("c", TensorProto.STRING, [2], [b"ok", b"\xfe"])
    model = _model([helper.make_node("Constant", [], ["c"], name="const", value=value)], ["c"])
    with pytest.raises(ModelLoadError, match=r"/graph/node/0/attribute/0/t/string_data/1 holds b'\\xfe', which is not "
                                             "UTF-8"):
        read_model(model)
