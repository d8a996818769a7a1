"""The reference evaluator and `onnx-qtypes run` on hostile files: every failure is one located line (a QTypesError,
exit 2 from `run`), sizes the data asks for are checked before anything is allocated, and what an integer kernel
cannot represent falls back to the definition instead of wrapping around."""

from __future__ import annotations

import contextlib
import io
import os
import resource
import subprocess
import sys
import zipfile

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from reference_models import T, typed_model

from onnx_qtypes import QType
from onnx_qtypes.cli import main
from onnx_qtypes.interop import lift_model
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator, fixed_point, fixed_point_parameters

F = TensorProto.FLOAT


def model_of(nodes, inputs, outputs, initializers=(), opset: int = 21) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def vi(name: str, elem: int = F, shape=None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def run_cli(tmp_path, model: onnx.ModelProto, feeds: dict | bytes, *, limit_gb: float | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """`onnx-qtypes run` in a subprocess, optionally under an address-space limit (a climb would fail there)."""
    model_path, inputs, outputs = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    model_path.write_bytes(model.SerializeToString())
    if isinstance(feeds, bytes):
        inputs.write_bytes(feeds)
    else:
        np.savez(inputs, **feeds)

    argv = ["run", str(model_path), "--inputs", str(inputs), "--outputs", str(outputs)]
    if limit_gb is None:  # in this process (quicker)
        saved = dict(os.environ)
        os.environ.update(env or {})
        os.environ.pop("ONNX_QTYPES_DEBUG", None)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(argv)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return subprocess.CompletedProcess(argv, code, "", err.getvalue())

    def limit() -> None:
        size = int(limit_gb * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    environment = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"} | (env or {})
    return subprocess.run([sys.executable, "-m", "onnx_qtypes", *argv], capture_output=True, text=True,
                          env=environment, timeout=300, preexec_fn=limit)


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0] and "internal error" not in lines[0], result.stderr[-2000:]
    assert len(lines[0]) < 600, lines[0]
    return lines[0]


# --- fixed point ------------------------------------------------------------------------------------


def test_a_multiplier_with_no_fixed_point_form_is_a_project_error():
    for bad in (np.inf, np.nan, -1.0):
        with pytest.raises(fixed_point.MultiplierError, match="finite and >= 0") as caught:
            fixed_point.quantize_multiplier(bad)
        assert isinstance(caught.value, QTypesError) and isinstance(caught.value, ValueError)


@pytest.mark.parametrize("x_scale, y_scale", [(3e38, 1e-38), (3e38, 1e-45), (1e-45, 3e38)])
def test_integer_kernels_give_the_definition_for_extreme_scale_ratios(x_scale, y_scale):
    """A ratio of 3e76 is a left shift of 224 bits: int64 wrapped it to 0 (Relu gave 0 for 127)."""
    model = typed_model("Relu", [T("x", (3,), QType("int8", x_scale, 0))], [T("y", (3,), QType("int8", y_scale, 0))])
    x = np.array([1, -1, 0], np.int8)
    definition = ReferenceEvaluator(model).run(None, {"x": x})[0]
    integer = ReferenceEvaluator(model, kernels="integer")
    assert integer.run(None, {"x": x})[0].tolist() == definition.tolist() == ([127, 0, 0] if x_scale > 1 else [0, 0, 0])
    assert integer.kernel_log == {"node": "integer"}


def test_a_ratio_beyond_float64_falls_back_to_the_definition_and_is_reported():
    model = typed_model("Relu", [T("x", (3,), QType("int8", 1e308, 0))], [T("y", (3,), QType("int8", 1e-30, 0))])
    integer = ReferenceEvaluator(model, kernels="integer")
    assert integer.run(None, {"x": np.array([1, -1, 0], np.int8)})[0].tolist() == [127, 0, 0]
    assert integer.kernel_log["node"].startswith("definitional: a fixed-point multiplier must be finite")
    assert fixed_point_parameters(model)["node"]["kernel"].startswith("definitional: a fixed-point multiplier")


# --- malformed models -------------------------------------------------------------------------------


def test_an_input_of_an_undefined_element_type_is_refused_naming_it(tmp_path):
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [vi("x", 99, [2])], [vi("y")])
    with pytest.raises(EvaluationError, match=r"graph input 'x' declares element type 99, which ONNX does not define"):
        ReferenceEvaluator(model)
    assert "element type 99" in one_line(run_cli(tmp_path, model, {"x": np.zeros(2, np.float32)}))


def test_a_node_that_computes_fewer_outputs_than_it_declares_is_named():
    from onnx.reference.op_run import OpRun

    class Dropout(OpRun):  # an implementation that forgets an output, as onnx.reference's BatchNormalization-9 did
        op_domain = ""

        def _run(self, x, *_, **__):
            return (x,)

    model = model_of([helper.make_node("Dropout", ["x"], ["y", "mask"], name="short")], [vi("x", F, [2])],
                     [vi("y"), vi("mask", TensorProto.BOOL)])
    with pytest.raises(EvaluationError, match=r"^node 'short' \(Dropout\): onnx.reference computes 1 of its 2 outputs"):
        ReferenceEvaluator(model, new_ops=[Dropout]).run(None, {"x": np.zeros(2, np.float32)})


# --- sizes the data asks for ------------------------------------------------------------------------


def scan_model(num_scan_inputs: int) -> onnx.ModelProto:
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                              helper.make_node("Identity", ["s_out"], ["y_t"])], "body",
                             [vi("s_in", F, [2]), vi("x_t", F, [2])], [vi("s_out", F, [2]), vi("y_t", F, [2])])
    scan = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=num_scan_inputs, name="scan")
    return model_of([scan], [vi("s0", F, [2]), vi("xs", F, [3, 2])], [vi("s", F, [2]), vi("ys", F, [3, 2])], opset=16)


def test_scan_with_2_to_the_62_scan_inputs_is_refused_before_anything_is_built(tmp_path):
    """onnx.reference's Scan built lists of num_scan_inputs entries while the model was prepared (17 GB)."""
    feeds = {"s0": np.zeros(2, np.float32), "xs": np.ones((3, 2), np.float32)}
    assert ReferenceEvaluator(scan_model(1)).run(None, feeds)[1].tolist() == [[1, 1], [2, 2], [3, 3]]
    with pytest.raises(EvaluationError, match=r"^node 'scan' \(Scan\): num_scan_inputs = 4611686018427387904, but the node has 2"):
        ReferenceEvaluator(scan_model(2**62))
    line = one_line(run_cli(tmp_path, scan_model(2**62), feeds, limit_gb=3))
    assert "num_scan_inputs = 4611686018427387904" in line and "m.onnx" in line


def loop_model(trip_count: int) -> onnx.ModelProto:
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["v_in", "one"], ["v_out"])], "body",
                             [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", F, [1])],
                             [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [1])],
                             [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    loop = helper.make_node("Loop", ["n", "", "v"], ["v_final"], body=body, name="loop")
    return model_of([loop], [vi("v", F, [1])], [vi("v_final", F, [1])],
                    [numpy_helper.from_array(np.array(trip_count, np.int64), "n")])


def test_a_loop_of_2_to_the_62_iterations_is_refused_at_the_iteration_limit(tmp_path):
    feeds = {"v": np.zeros(1, np.float32)}
    assert ReferenceEvaluator(loop_model(3)).run(None, feeds)[0].tolist() == [3]  # no cond: M iterations
    line = one_line(run_cli(tmp_path, loop_model(2**62), feeds, env={"ONNX_QTYPES_RUN_MAX_ITERATIONS": "50"}))
    assert "node 'loop' (Loop): Loop: more than 50 iterations (ONNX_QTYPES_RUN_MAX_ITERATIONS)" in line


@pytest.mark.parametrize("op, inputs", [
    ("ConstantOfShape", {"s": np.array([2**20, 2**20], np.int64)}),
    ("Expand", {"x": np.zeros((1, 1), np.float32), "s": np.array([2**20, 2**20], np.int64)}),
    ("Tile", {"x": np.zeros((2, 2), np.float32), "s": np.array([2**20, 2**20], np.int64)}),
    ("Range", {"a": np.array(0, np.int64), "b": np.array(2**40, np.int64), "c": np.array(1, np.int64)}),
    ("Pad", {"x": np.zeros((2, 2), np.float32), "s": np.array([0, 0, 2**20, 2**20], np.int64)}),
])
def test_a_tensor_the_data_makes_absurdly_large_is_refused_before_it_is_allocated(tmp_path, op, inputs):
    names = list(inputs)
    model = model_of([helper.make_node(op, names, ["y"], name="big")], [], [vi("y", F if op != "Range" else TensorProto.INT64)],
                     [numpy_helper.from_array(v, n) for n, v in inputs.items()])
    line = one_line(run_cli(tmp_path, model, {}, limit_gb=3))
    assert f"node 'big' ({op}): {op}: its output would take" in line and "ONNX_QTYPES_RUN_MAX_BYTES" in line


# --- malformed inputs files -------------------------------------------------------------------------


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def pickled_npz() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        member = io.BytesIO()
        np.save(member, np.array([None, {"a": 1}], dtype=object), allow_pickle=True)
        archive.writestr("x.npy", member.getvalue())
    return buf.getvalue()


FLOAT_RELU = model_of([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, ["batch", 3])], [vi("y")])


@pytest.mark.parametrize("feeds, fragment", [
    ({"x": np.zeros((2, 3), ml_dtypes.bfloat16)}, "input 'x': expected float32"),  # saved as raw V2 bytes
    ({"x": np.zeros((2, 3), np.int32)}, "got int32 values"),
    ({"x": np.zeros((2, 3, 1), np.float32)}, "got shape [2, 3, 1]"),
    ({"x": np.zeros((2, 4), np.float32)}, "got shape [2, 4]"),
    ({"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)}, "entry 'z' is not a graph input"),
    ({}, "missing input 'x'"),
    ({"x": np.zeros((2, 3), np.complex64)}, "got complex64 values"),
    ({"x": np.array([["a", "b", "c"]])}, "got <U1 values"),
    (pickled_npz(), "input 'x': expected float32, shape [batch, 3], got object values"),
], ids=["bfloat16-void", "int32", "rank", "fixed-dim", "extra", "missing", "complex", "strings", "pickled-objects"])
def test_inputs_that_do_not_fit_exit_2_with_one_line(tmp_path, feeds, fragment):
    line = one_line(run_cli(tmp_path, FLOAT_RELU, feeds))
    assert fragment in line and "in.npz" in line, line


def test_nan_inputs_run_and_come_back_nan(tmp_path):
    result = run_cli(tmp_path, FLOAT_RELU, {"x": np.full((1, 3), np.nan, np.float32)})
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert np.isnan(out["y"]).all()


def test_a_bare_assert_in_onnx_reference_says_what_the_node_was_given(tmp_path, capsys):
    """NNCF's INT8_ASYM per channel writes a [C, 1, 1] scale with no block_size (QT107; onnxruntime refuses it
    too). The lift leaves the DequantizeLinear, onnx.reference asserts with no message, and run said only
    'AssertionError:'; now the one line names the inputs' shapes, where the fault shows."""
    w = np.arange(8 * 3, dtype=np.uint8).reshape(8, 3)
    inits = [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(np.full((8, 1, 1), 0.5, np.float32), "w_s"),
             numpy_helper.from_array(np.full((8, 1, 1), 3, np.uint8), "w_z")]
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"], name="dq"),
             helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)
    np.savez(tmp_path / "in.npz", x=np.ones((2, 8), np.float32))
    assert main(["run", str(path), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "o.npz")]) == 2
    line = capsys.readouterr().err.strip()
    assert line.count("\n") == 0 and "internal error" not in line, line
    assert line.endswith("node 'dq' (DequantizeLinear): onnx.reference failed (AssertionError, no message) on inputs "
                         "'w_q' [8, 3] uint8, 'w_s' [8, 1, 1] float32, 'w_z' [8, 1, 1] uint8"), line
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, 0.0, -0.5, 1e-30, 1e30])
def test_qoperator_files_with_a_scale_no_type_holds_run_or_refuse_in_one_line(value):
    """onnxruntime's QOperator files with one scale set to a value no type holds (the lift keeps the nodes reading
    it as written, and run computes those com.microsoft nodes as their schemas describe them): every third scale of
    the corpus's QOperator files in turn, lifted and run, ends in results or in the project's own one-line error,
    never another exception (the values are compared with onnxruntime in test_reference_onnxruntime_qlinear.py).
    A scale of inf must run (onnxruntime's BERT masks have one)."""
    from corpus import corpus_feeds, corpus_models

    ran = 0
    for name, model in sorted((n, m) for n, m in corpus_models().items() if "qop" in n):
        feeds = corpus_feeds(name)
        scales = [t.name for t in model.graph.initializer if t.name.endswith("_scale") and t.data_type == F]
        for scale in scales[::3]:  # every third: each operator kind of the three files, in CI's time
            mutated = onnx.ModelProto()
            mutated.CopyFrom(model)
            tensor = next(t for t in mutated.graph.initializer if t.name == scale)
            array = numpy_helper.to_array(tensor).copy()
            array.flat[0] = value
            tensor.CopyFrom(numpy_helper.from_array(array.astype(np.float32), scale))
            try:
                ReferenceEvaluator(lift_model(mutated).model).run(None, feeds)
                ran += 1
            except QTypesError as exc:
                assert str(exc).strip() and "\n" not in str(exc).strip(), str(exc)
    if value == np.inf:
        assert ran > 0
