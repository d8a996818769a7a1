"""``onnx-qtypes run``: .npz in, .npz out, storage plus <name>.real, and one
located line with exit code 2 for inputs that do not fit the model."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from reference_models import T, typed_model

from onnx_qtypes import QType, save, set_qtype
from onnx_qtypes.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def add_model(tmp_path):
    """y = a + b on int8 types of different scales; y is quantized."""
    model = typed_model("Add", [T("a", (2, 2), QType("int8", 0.5, 0)), T("b", (2, 2), QType("int8", 0.25, 4))],
                        [T("y", (2, 2), QType("int8", 1.0, -1))])
    path = tmp_path / "add.onnx"
    save(model, path)
    return path


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


GOOD = {"a": np.array([[10, -3], [0, 2]], np.int8), "b": np.array([[8, 0], [4, 4]], np.int8)}


@pytest.mark.parametrize("kernels", ["definitional", "integer"])
def test_run_writes_storage_and_real_values(add_model, tmp_path, kernels):
    inputs = _npz(tmp_path / "in.npz", **GOOD)
    out = tmp_path / "out.npz"
    result = run_cli("run", str(add_model), "--inputs", inputs, "--outputs", str(out), "--kernels", kernels)
    assert result.returncode == 0, result.stderr
    with np.load(out) as data:
        assert sorted(data.files) == ["y", "y.real"]
        # reals: a = [5, -1.5, 0, 1], b = [1, -1, 0, 0] -> sums [6, -2.5, 0, 1] -> ties to even, zero point -1
        assert data["y"].dtype == np.int8 and data["y"].tolist() == [[5, -3], [-1, 0]]
        assert data["y.real"].dtype == np.float32 and data["y.real"].tolist() == [[6.0, -2.0], [0.0, 1.0]]
    if kernels == "integer":
        assert "integer kernels ran for 1 of 1 typed node(s)" in result.stdout


def test_sub_byte_outputs_are_widened(tmp_path):
    model = typed_model("Relu", [T("x", (3,), QType("int4", 1.0, 0))], [T("y", (3,), QType("int4", 1.0, 0))])
    save(model, tmp_path / "m.onnx")
    inputs = _npz(tmp_path / "in.npz", x=np.array([-8, 3, 7], np.int8))
    assert main(["run", str(tmp_path / "m.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz")]) == 0
    with np.load(tmp_path / "o.npz") as data:
        assert data["y"].dtype == np.int8 and data["y"].tolist() == [0, 3, 7]


def test_dynamic_outputs_carry_their_parameters(tmp_path):
    model = typed_model("Relu", [T("x", (3,), QType("int8", 0.5, 0))], [T("y", (3,), QType("uint8"))])
    save(model, tmp_path / "m.onnx")
    inputs = _npz(tmp_path / "in.npz", x=np.array([-2, 2, 51], np.int8))
    assert main(["run", str(tmp_path / "m.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz")]) == 0
    with np.load(tmp_path / "o.npz") as data:
        # relu -> [0, 1, 25.5]; uint8 asymmetric: scale 25.5 / 255 = 0.1, zero point 0
        # the calling convention (semantics.md#dynamic-binding): a per-tensor type's parameters are scalars, the
        # scale of the expressed type, the zero point of the storage type
        assert data["y.scale"].shape == () and data["y.scale"].dtype == np.float32 and data["y.scale"] == np.float32(0.1)
        assert data["y.zero_point"].shape == () and data["y.zero_point"].dtype == np.uint8 and data["y.zero_point"] == 0
        assert data["y"].tolist() == [0, 10, 255]


def _error(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    ("arrays", "fragments"),
    [
        ({"a": GOOD["a"]}, ["missing input 'b'", "int8 storage of int8:float32<0.25:4>", "shape [2, 2]"]),
        ({"a": GOOD["a"], "b": np.zeros((2, 3), np.int8)}, ["input 'b'", "expected", "shape [2, 2]", "got shape [2, 3]"]),
        ({"a": GOOD["a"], "b": np.zeros((2, 2), np.float32)}, ["input 'b'", "got float32 values"]),
        ({"a": np.full((2, 2), 300), "b": GOOD["b"]}, ["input 'a'", "value 300 at index [0, 0] is outside the int8 storage range [-128, 127]"]),
        ({**GOOD, "c": np.zeros(1)}, ["entry 'c' is not a graph input", "['a', 'b']"]),
    ],
    ids=["missing", "misshaped", "float-for-quantized", "out-of-range", "unknown-entry"],
)
def test_bad_inputs_exit_2_naming_the_input(add_model, tmp_path, capsys, arrays, fragments):
    inputs = _npz(tmp_path / "in.npz", **arrays)
    out = tmp_path / "out.npz"
    line = _error(capsys, "run", str(add_model), "--inputs", inputs, "--outputs", str(out))
    for fragment in fragments:
        assert fragment in line, line
    assert not out.exists()  # never a half-written output


def test_float_input_with_wrong_kind_names_the_expected_type(tmp_path, capsys, example_model):
    save(example_model, tmp_path / "cnn.onnx")
    inputs = _npz(tmp_path / "in.npz", x=np.zeros((1, 3, 8, 8), np.int64))
    line = _error(capsys, "run", str(tmp_path / "cnn.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz"))
    assert "input 'x'" in line and "float32, shape [1, 3, 8, 8]" in line and "got int64 values" in line


def test_unreadable_inputs_file_exits_2(add_model, tmp_path, capsys):
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    line = _error(capsys, "run", str(add_model), "--inputs", str(tmp_path / "junk.npz"), "--outputs", str(tmp_path / "o.npz"))
    assert "junk.npz" in line and "cannot read as .npz: not a zip archive" in line
    line = _error(capsys, "run", str(add_model), "--inputs", str(tmp_path / "none.npz"), "--outputs", str(tmp_path / "o.npz"))
    assert "none.npz: no such file" in line


def test_missing_output_folder_exits_2(add_model, tmp_path, capsys):
    inputs = _npz(tmp_path / "in.npz", **GOOD)
    line = _error(capsys, "run", str(add_model), "--inputs", inputs, "--outputs", str(tmp_path / "nope" / "o.npz"))
    assert "does not exist" in line


def test_usage_errors_exit_2():
    result = run_cli("run", "m.onnx", "--inputs", "in.npz", "--outputs", "o.npz", "--kernels", "fast")
    assert result.returncode == 2 and "invalid choice" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = run_cli("run", "m.onnx")
    assert result.returncode == 2 and "--outputs" in result.stderr


def test_inputs_may_be_left_out_only_when_the_model_has_none(add_model, tmp_path, capsys):
    line = _error(capsys, "run", str(add_model), "--outputs", str(tmp_path / "o.npz"))
    assert "graph input(s) 'a', 'b'" in line and "--inputs" in line and not (tmp_path / "o.npz").exists()


# --- the outputs file may not be the model or the inputs file --------------------------------------


def test_outputs_may_not_overwrite_the_model_or_the_inputs(add_model, tmp_path, capsys):
    inputs = _npz(tmp_path / "in.npz", **GOOD)
    before = {p: p.read_bytes() for p in (add_model, tmp_path / "in.npz")}
    for target, role in [(str(add_model), "model"), (str(tmp_path / "." / "add.onnx"), "model"), (inputs, "inputs file")]:
        line = _error(capsys, "run", str(add_model), "--inputs", inputs, "--outputs", target)
        assert line == f"onnx-qtypes: error: {target}: is the {role} being read; write the output to another file"
    assert {p: p.read_bytes() for p in before} == before


# --- inputs files that are not .npz archives of arrays ----------------------------------------------


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)
    return buf.getvalue()


def _zip(path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def _huge_header(descr: str = "|i1") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": (10**12,)})
    return buf.getvalue() + bytes(16)


B_NPY = _npy_bytes(GOOD["b"])


@pytest.mark.parametrize(
    ("make", "fragments"),
    [
        (lambda p: (np.save(p.with_suffix(".npy"), GOOD["a"]), os.replace(p.with_suffix(".npy"), p), str(p))[-1],
         ["is a single .npy array, not an .npz archive", "expected an .npz (numpy.savez)", "['a', 'b']"]),
        (lambda p: _zip(p, {"a.npy": b"garbage", "b.npy": B_NPY}),
         ["entry 'a' (member a.npy) is not a .npy array", "expected an array written by numpy.savez"]),
        (lambda p: (p.write_bytes(b"\x00\x01 plain bytes, no zip"), str(p))[-1],
         ["cannot read as .npz: not a zip archive", "expected an .npz (numpy.savez) with one array per graph input"]),
        (lambda p: _zip(p, {"a.npy": _npy_bytes(GOOD["a"])[:-2], "b.npy": B_NPY}),
         ["entry 'a' (member a.npy)", "shape [2, 2] of int8 (4 bytes), but it holds 2 bytes", "truncated or corrupt"]),
        (lambda p: _zip(p, {"a.npy": _npy_bytes(np.array([{"x": 1}] * 4).reshape(2, 2)), "b.npy": B_NPY}),
         ["input 'a': quantized type int8:float32<0.5:0> takes its storage integers (int8), got object values"]),
        (lambda p: _zip(p, {"a.npy": B_NPY, "a": B_NPY, "b.npy": B_NPY}), ["holds two arrays named 'a'"]),
    ],
    ids=["npy-named-npz", "garbage-member", "plain-bytes", "truncated-member", "object-array", "same-name-twice"],
)
def test_inputs_files_that_are_not_npz_archives_of_arrays(add_model, tmp_path, capsys, make, fragments):
    path = make(tmp_path / "in.npz")
    line = _error(capsys, "run", str(add_model), "--inputs", path, "--outputs", str(tmp_path / "o.npz"))
    assert line.startswith(f"onnx-qtypes: error: {path}: "), line
    for fragment in fragments:
        assert fragment in line, line
    assert "internal error" not in line and "pickled" not in line and "Error" not in line
    assert not (tmp_path / "o.npz").exists()


# --- messages that name the file and the input once, in the user's terms ------------------------------


def test_storage_out_of_range_names_file_input_storage_type_and_range(tmp_path, capsys):
    model = typed_model("Relu", [T("a", (2, 3), QType("int4", 0.5, 0))], [T("b", (2, 3), QType("int4", 0.5, 0))])
    save(model, tmp_path / "int4.onnx")
    inputs = _npz(tmp_path / "in.npz", a=np.array([[-8, -1, 0], [1, 7, -9]], np.int8))
    line = _error(capsys, "run", str(tmp_path / "int4.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz"))
    assert line == (f"onnx-qtypes: error: {inputs}: input 'a': value -9 at index [1, 2] is outside the int4 storage "
                    "range [-8, 7] of its type int4:float32<0.5:0>")


def test_a_huge_array_header_is_refused_before_its_data_is_read(add_model, tmp_path, capsys):
    path = _zip(tmp_path / "in.npz", {"a.npy": _huge_header(), "b.npy": B_NPY})
    line = _error(capsys, "run", str(add_model), "--inputs", path, "--outputs", str(tmp_path / "o.npz"))
    assert line == (f"onnx-qtypes: error: {path}: input 'a': expected int8 storage of int8:float32<0.5:0>, "
                    "shape [2, 2], got shape [1000000000000]")
    # a symbolic dimension takes any size: the header's size is checked against the data actually there
    model = _model_n()
    save(model, tmp_path / "n.onnx")
    path = _zip(tmp_path / "n.npz", {"x.npy": _huge_header("<f4")})
    line = _error(capsys, "run", str(tmp_path / "n.onnx"), "--inputs", path, "--outputs", str(tmp_path / "o.npz"))
    assert "entry 'x' (member x.npy): its header says shape [1000000000000] of float32 (4000000000000 bytes), " \
           "but it holds 16 bytes of data; the file is truncated or corrupt" in line
    assert "MemoryError" not in line


def _model_n():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, "y", QType("int8", 0.5, 0))
    return model


def test_the_cli_and_the_evaluator_say_the_same_thing_about_a_feed(add_model, tmp_path, capsys):
    from onnx_qtypes.reference_ops import ReferenceEvaluator
    from onnx_qtypes.reference_ops.errors import FeedError

    bad = {"a": GOOD["a"], "b": np.zeros((3, 2), np.int8)}
    with pytest.raises(FeedError) as err:
        ReferenceEvaluator(str(add_model)).run(None, bad)
    inputs = _npz(tmp_path / "in.npz", **bad)
    line = _error(capsys, "run", str(add_model), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz"))
    assert line == f"onnx-qtypes: error: {inputs}: {err.value}"


# --- dtype leniency: exact conversions only ------------------------------------------------------------


def test_float64_inputs_run_when_float32_exact_and_are_refused_otherwise(tmp_path, capsys, example_model):
    save(example_model, tmp_path / "cnn.onnx")
    x = np.random.default_rng(5).normal(0, 1, (1, 3, 8, 8)).astype(np.float32)
    outputs = {}
    for dtype in (np.float32, np.float64):
        inputs = _npz(tmp_path / f"{dtype.__name__}.npz", x=x.astype(dtype))
        assert main(["run", str(tmp_path / "cnn.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / f"o_{dtype.__name__}.npz")]) == 0
        with np.load(tmp_path / f"o_{dtype.__name__}.npz") as data:
            outputs[dtype] = {k: data[k] for k in data.files}
    for key, value in outputs[np.float32].items():
        assert outputs[np.float64][key].dtype == value.dtype
        np.testing.assert_array_equal(outputs[np.float64][key], value)
    lossy = x.astype(np.float64)
    lossy[0, 0, 0, 1] = 0.1
    inputs = _npz(tmp_path / "lossy.npz", x=lossy)
    capsys.readouterr()
    line = _error(capsys, "run", str(tmp_path / "cnn.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz"))
    assert line.startswith(f"onnx-qtypes: error: {inputs}: input 'x': expected float32, shape [1, 3, 8, 8], got float64 values")
    assert "0.1 at index [0, 0, 0, 1] is not exactly a float32 value" in line
    assert not (tmp_path / "o.npz").exists()


def test_help_states_the_conversion_rule():
    result = run_cli("run", "--help")
    text = " ".join(result.stdout.split())
    assert result.returncode == 0
    assert "converted only when every value is exactly representable in the declared type" in text
    assert "nothing is rounded silently" in text


# --- models that are not single static assignment -------------------------------------------------------


def test_models_that_assign_a_name_twice_are_refused(tmp_path, capsys):
    nodes = [helper.make_node("Relu", ["a"], ["b"], name="n1"), helper.make_node("Neg", ["a"], ["b"], name="n2")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), tmp_path / "dup.onnx")
    inputs = _npz(tmp_path / "in.npz", a=np.array([-1, 1], np.float32))
    line = _error(capsys, "run", str(tmp_path / "dup.onnx"), "--inputs", inputs, "--outputs", str(tmp_path / "o.npz"))
    assert line.startswith(f"onnx-qtypes: error: {tmp_path / 'dup.onnx'}: /graph/node/1 (Neg 'n2'): writes 'b' as "
                           "/graph/node/0 (Relu 'n1') does; a graph defines each name once (single static assignment")
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize(("outputs", "words"), [
    ((["b"], ["b"]), "/graph/node/1 (Neg 'n2'): writes 'b' as /graph/node/0 (Relu 'n1') does"),
    ((["b", "b"], ["c"]), "/graph/node/0 (Split 'n1'): writes 'b' twice"),  # (a fuzz mutant: KeyError in the lift)
    ((["b"], ["a"]), "/graph/node/1 (Neg 'n2'): writes 'a', which is the graph's input"),
    ((["b"], ["w"]), "/graph/node/1 (Neg 'n2'): writes 'w', which is the graph's initializer"),
])
def test_every_command_refuses_a_name_written_twice_alike(tmp_path, capsys, outputs, words):
    """check, show, lift and lower read a file as run does: a name a graph defines twice (two nodes, one node twice,
    a node and the graph's input or initializer) is one located line with exit 2 from each, not an internal error
    in the lift (a KeyError) nor 'no findings' from check."""
    first = (helper.make_node("Split", ["a"], outputs[0], name="n1", axis=0, num_outputs=2)
             if len(outputs[0]) == 2 else helper.make_node("Relu", ["a"], outputs[0], name="n1"))
    nodes = [first, helper.make_node("Neg", ["a"], outputs[1], name="n2")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])],
                              [helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0])])
    path = tmp_path / "dup.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)],
                                       ir_version=10).SerializeToString())
    inputs = _npz(tmp_path / "in.npz", a=np.array([-1, 1], np.float32))
    for command in (["check"], ["show"], ["lift", str(tmp_path / "l.onnx")], ["lower", str(tmp_path / "w.onnx")],
                    ["run", "--inputs", inputs, "--outputs", str(tmp_path / "o.npz")]):
        line = _error(capsys, command[0], str(path), *command[1:])
        assert line.startswith(f"onnx-qtypes: error: {path}: {words}"), (command, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.onnx", "in.npz"]


def _sparse_initializer_written() -> onnx.GraphProto:
    sparse = helper.make_sparse_tensor(helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0]),
                                       helper.make_tensor("w_at", TensorProto.INT64, [1], [0]), [2])
    nodes = [helper.make_node("Relu", ["a"], ["b"], name="n1"), helper.make_node("Neg", ["a"], ["w"], name="n2")]
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])], sparse_initializer=[sparse])


def _outer_name_written_in_a_branch() -> onnx.GraphProto:
    def branch(op: str, out: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["a"], [out], name=f"inner_{op}")], op, [],
                                 [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2])])
    nodes = [helper.make_node("Relu", ["a"], ["r"], name="n1"),
             helper.make_node("If", ["c"], ["b"], name="n2", then_branch=branch("Neg", "t"),
                              else_branch=branch("Abs", "r"))]
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
                                          helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])


def _name_nothing_defines() -> onnx.GraphProto:
    nodes = [helper.make_node("Relu", ["a"], ["r"], name="n1"), helper.make_node("Add", ["r", "ghost"], ["b"], name="n2")]
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])


def _output_nothing_writes() -> onnx.GraphProto:
    graph = _name_nothing_defines()
    graph.node[1].input[1] = "a"
    graph.output.append(helper.make_tensor_value_info("ghost", TensorProto.FLOAT, [2]))
    return graph


def _input_declared_twice() -> onnx.GraphProto:
    graph = _name_nothing_defines()
    graph.node[1].input[1] = "a"
    graph.input.append(helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]))
    return graph


def _branch_reading_a_name_nothing_defines() -> onnx.GraphProto:
    graph = _outer_name_written_in_a_branch()
    branch = graph.node[1].attribute[0].g
    branch.node[0].input[0] = "ghost"
    return graph


@pytest.mark.parametrize(("make", "words"), [
    (_name_nothing_defines, "/graph/node/1 (Add 'n2'): reads 'ghost', which no input, initializer or node of the graph "
                            "defines"),
    (_input_declared_twice, "/graph/input/1: input 'a' is declared twice, as /graph/input/0 is"),
    (_output_nothing_writes, "/graph/output/1: output 'ghost' is written by no input, initializer or node of the graph"),
    (_branch_reading_a_name_nothing_defines, "/graph/node/1/attribute/0/g/node/0 (Abs 'inner_Abs'): reads 'ghost', "
                                             "which no input, initializer or node of this graph or an enclosing one"),
    (_sparse_initializer_written, "/graph/node/1 (Neg 'n2'): writes 'w', which is the graph's sparse initializer"),
    (_outer_name_written_in_a_branch, "/graph/node/1/attribute/0/g/node/0 (Abs 'inner_Abs'): writes 'r', which an "
                                      "enclosing graph defines before this subgraph (/graph/node/0/output/0)"),
])
def test_every_command_refuses_a_name_nothing_defines_or_that_two_scopes_define(tmp_path, capsys, make, words):
    """A name read (or a graph output) that nothing defines, a node writing a sparse initializer's name, or a
    subgraph's node writing a name its enclosing graph defined before it, as onnx.checker refuses them: refused
    alike by every command, where check said nothing, lift wrote the file, and run and lower refused what lift
    wrote."""
    model = helper.make_model(make(), opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model)
    path = tmp_path / "dup.onnx"
    path.write_bytes(model.SerializeToString())
    inputs = _npz(tmp_path / "in.npz", a=np.array([-1, 1], np.float32), c=np.array(False))
    for command in (["check"], ["show"], ["lift", str(tmp_path / "l.onnx")], ["lower", str(tmp_path / "w.onnx")],
                    ["run", "--inputs", inputs, "--outputs", str(tmp_path / "o.npz")]):
        line = _error(capsys, command[0], str(path), *command[1:])
        assert line.startswith(f"onnx-qtypes: error: {path}: {words}"), (command, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.onnx", "in.npz"]


def test_a_failure_in_a_float_node_names_the_node(tmp_path, capsys):
    """Not only typed nodes: a Reshape that cannot run on the fed shape is the user's error, located."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor("shape", TensorProto.INT64, [2], [4, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    path, inputs, outputs = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    save(model, path)
    np.savez(inputs, x=np.zeros((2, 3), np.float32))
    assert main(["run", str(path), "--inputs", str(inputs), "--outputs", str(outputs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error" not in err[0], err
    assert "node 'reshape' (Reshape)" in err[0] and "cannot reshape" in err[0]
    assert not outputs.exists()


def _relu_model(**change):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    if "node_input" in change:
        model.graph.node[0].input[0] = change["node_input"]
    if "output" in change:
        model.graph.output[0].name = change["output"]
    if "untyped_attribute" in change:
        model.graph.node[0].attribute.add(name="alpha")  # type left UNDEFINED
    if "short_node" in change:
        model.graph.node.append(helper.make_node("DequantizeLinear", ["y"], ["z"], name="short"))
    if "function_untyped_attribute" in change:  # a model-local function whose body node has an untyped attribute
        body = helper.make_node("Relu", ["fx"], ["fy"], name="inner")
        body.attribute.add(name="alpha")
        model.functions.append(helper.make_function("local", "F", ["fx"], ["fy"], [body],
                                                    [helper.make_opsetid("", 21)]))
        model.opset_import.append(helper.make_opsetid("local", 1))
        model.graph.node[0].CopyFrom(helper.make_node("F", ["x"], ["y"], name="call", domain="local"))
    if "function_if_untyped_attribute" in change:  # ... inside an If's branch in the function's body
        inner = helper.make_node("Relu", ["fx"], ["t"], name="inner")
        inner.attribute.add(name="alpha")
        branch = helper.make_graph([inner], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
        other = helper.make_graph([helper.make_node("Identity", ["fx"], ["e"])], "else", [],
                                  [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
        body = [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", TensorProto.BOOL, [], [True])),
                helper.make_node("If", ["c"], ["fy"], name="choose", then_branch=branch, else_branch=other)]
        model.functions.append(helper.make_function("local", "F", ["fx"], ["fy"], body, [helper.make_opsetid("", 21)]))
        model.opset_import.append(helper.make_opsetid("local", 1))
        model.graph.node[0].CopyFrom(helper.make_node("F", ["x"], ["y"], name="call", domain="local"))
    return model


@pytest.mark.parametrize(("change", "fragment"), [
    ({"node_input": "typo"}, "/graph/node/0 (Relu 'relu'): reads 'typo', which no input, initializer or node of the "
                             "graph defines"),
    ({"output": "z"}, "/graph/output/0: output 'z' is written by no input, initializer or node of the graph"),
    ({"untyped_attribute": True}, "node 'relu' (Relu): attribute 'alpha' has no type"),
    ({"short_node": True}, "node 'short' (DequantizeLinear): Node(short) with schema(::DequantizeLinear:21) has input "
                           "size 1 not in range"),
    ({"function_untyped_attribute": True}, "in function local.F: node 'inner' (Relu): attribute 'alpha' has no type"),
    ({"function_if_untyped_attribute": True}, "in function local.F: node 'choose' (If) then_branch: node 'inner' "
                                              "(Relu): attribute 'alpha' has no type"),
], ids=["dangling-input", "dangling-output", "untyped-attribute", "input-count", "untyped-attribute-in-function",
        "untyped-attribute-in-a-function-s-if"])
def test_graphs_onnx_reference_cannot_run_are_refused_before_running(tmp_path, capsys, change, fragment):
    path, inputs, outputs = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    path.write_bytes(_relu_model(**change).SerializeToString())
    np.savez(inputs, x=np.zeros(2, np.float32))
    assert main(["run", str(path), "--inputs", str(inputs), "--outputs", str(outputs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error" not in err[0] and fragment in err[0], err
    assert not outputs.exists()


def test_a_dynamic_float8_input_fed_as_storage_from_an_npz(tmp_path):
    """An .npz keeps float8 values as raw bytes (|V1): beside x.scale they are the input's storage, as the evaluator
    takes ml_dtypes values (0.5 * [-4, 1.5, 6], relu, steps of 0.25)."""
    model = typed_model("Relu", [T("x", (3,), QType("float8e4m3fn", schema="symmetric"))],
                        [T("y", (3,), QType("int8", 0.25, 0))])
    path, inputs, outputs = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    save(model, path)
    np.savez(inputs, x=np.array([-4, 1.5, 6], ml_dtypes.float8_e4m3fn), **{"x.scale": np.float32(0.5)})
    assert main(["run", str(path), "--inputs", str(inputs), "--outputs", str(outputs)]) == 0
    assert np.load(outputs)["y"].tolist() == [0, 3, 12]
