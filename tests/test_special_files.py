"""Devices, FIFOs, sockets, symlinks and hard links as inputs and outputs.

Reading a FIFO blocks and reading a device may never end, so every file we read must be a regular file
(exit 2, one line). Writing renames a temporary file over the target, which must not replace a device,
FIFO or /dev/fd/N, nor a symlink (written through). Anything that could hang before the fix runs in a
fresh process with a timeout, or with a reader thread.
"""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_qtypes import load, save
from onnx_qtypes.cli import main

NOT_REGULAR = "not a regular file (a device, FIFO or socket)"


def _model(initializers=()) -> onnx.ModelProto:
    """y = x + w, float, IR 10 / opset 21."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        list(initializers) or [helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


@pytest.fixture()
def model_path(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(_model().SerializeToString())
    return path


def _cli(*args: str) -> tuple[int, str]:
    """The real entry point in a fresh process, killed after 60 s (a hang fails the test, never the run)."""
    env = {k: v for k, v in os.environ.items() if k != "ONNX_QTYPES_DEBUG"}
    result = subprocess.run([sys.executable, "-m", "onnx_qtypes", *args], capture_output=True, text=True,
                            env=env, timeout=60, check=False)
    return result.returncode, result.stderr


def _main(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def _one_line(code: int, err: str, expected: str) -> None:
    assert code == 2, err
    assert err.strip().splitlines() == [f"onnx-qtypes: error: {expected}"], err


# --- reading ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["show", "{x}"], ["check", "{x}"], ["lower", "{x}", "{out}"], ["lift", "{x}", "{out}"],
    ["run", "{x}", "--inputs", "{out}", "--outputs", "{out}.npz"],
])
def test_a_fifo_model_exits_2_without_blocking(tmp_path, command):
    fifo = tmp_path / "f.onnx"
    os.mkfifo(fifo)
    args = [a.format(x=fifo, out=tmp_path / "out") for a in command]
    _one_line(*_cli(*args), f"{fifo}: {NOT_REGULAR}; give a model file")


def test_a_socket_model_exits_2(tmp_path, capsys):
    path = tmp_path / "s.onnx"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        _one_line(*_main(capsys, "show", str(path)), f"{path}: {NOT_REGULAR}; give a model file")


def test_a_fifo_profile_exits_2_without_blocking(tmp_path, model_path):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    _one_line(*_cli("check", str(model_path), "--profile", str(fifo)), f"{fifo}: {NOT_REGULAR}; give a profile .json file")


def test_fifo_run_inputs_exit_2_without_blocking(tmp_path, model_path):
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    code, err = _cli("run", str(model_path), "--inputs", str(fifo), "--outputs", str(tmp_path / "o.npz"))
    _one_line(code, err, f"{fifo}: {NOT_REGULAR}; give an .npz file")
    assert not (tmp_path / "o.npz").exists()


def test_fifo_lift_statistics_exit_2_without_blocking(tmp_path, model_path):
    fifo = tmp_path / "cal.json"
    os.mkfifo(fifo)
    code, err = _cli("lift", str(model_path), str(tmp_path / "o.onnx"), "--statistics", str(fifo))
    _one_line(code, err, f"{fifo}: {NOT_REGULAR}; give a calibration .json file")


def _external(tmp_path, location: str):
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    tensor.external_data.add(key="location", value=location)
    path = tmp_path / "ext.onnx"
    path.write_bytes(_model([tensor]).SerializeToString())
    return path


def test_external_data_in_a_fifo_exits_2(tmp_path, capsys):
    path = _external(tmp_path, "w.bin")
    os.mkfifo(tmp_path / "w.bin")
    code, err = _main(capsys, "show", str(path))
    _one_line(code, err, f"{path}: tensor 'w': external data location 'w.bin': {tmp_path.resolve() / 'w.bin'}: "
                         f"{NOT_REGULAR}; give a data file")


def test_external_data_location_with_a_nul_byte_exits_2(tmp_path, capsys):
    path = _external(tmp_path, "w\0.bin")
    code, err = _main(capsys, "check", str(path))
    _one_line(code, err, f"{path}: tensor 'w': external data location 'w\\x00.bin' contains a NUL byte; "
                         "it must be a file name")


# --- writing ---------------------------------------------------------------------------------------


def _reader(fifo) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:  # blocks until the writer opens the FIFO
            got.append(fh.read())

    thread = threading.Thread(target=read, daemon=True)  # daemon: a bug that never opens the FIFO can't hang pytest
    thread.start()
    return thread, got


def test_report_to_a_fifo_is_written_into_it(tmp_path, model_path, capsys):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    thread, got = _reader(fifo)
    assert main(["check", str(model_path), "-o", str(fifo)]) == 0
    thread.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    assert got == [f"{model_path}: no findings (profile generic)\n".encode()]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "report.fifo"]  # no temporary file left


def test_save_to_a_fifo_streams_the_model(tmp_path):
    fifo = tmp_path / "m.fifo"
    os.mkfifo(fifo)
    thread, got = _reader(fifo)
    save(_model(), fifo)
    thread.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [_model().SerializeToString()]


def test_report_to_a_descriptor_appends_to_it(tmp_path, model_path, capsys):
    target = tmp_path / "shell.txt"
    with open(target, "a") as fh:  # like `onnx-qtypes check M -o /dev/stdout >> shell.txt`
        fh.write("before\n")
        fh.flush()
        assert main(["check", str(model_path), "-o", f"/dev/fd/{fh.fileno()}"]) == 0, capsys.readouterr().err
    assert target.read_text() == f"before\n{model_path}: no findings (profile generic)\n"


def test_report_to_a_pipe_descriptor(model_path, capsys):
    read_end, write_end = os.pipe()
    try:
        assert main(["check", str(model_path), "-o", f"/dev/fd/{write_end}"]) == 0, capsys.readouterr().err
        os.close(write_end)
        with os.fdopen(read_end, "rb") as fh:
            assert fh.read() == f"{model_path}: no findings (profile generic)\n".encode()
    finally:
        for fd in (read_end, write_end):
            try:
                os.close(fd)
            except OSError:
                pass


def test_report_to_a_device_node_keeps_the_node(tmp_path, model_path, capsys):
    node = tmp_path / "null"  # our own node for the null device, never the system's /dev/null
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        open(node, "wb").close()
    except OSError as exc:  # not root, or a nodev mount
        pytest.skip(f"cannot make a device node here: {exc}")
    assert main(["check", str(model_path), "-o", str(node)]) == 0, capsys.readouterr().err
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_symlink_targets_are_written_through(tmp_path, model_path, capsys):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    assert main(["check", str(model_path), "-o", str(tmp_path / "link.txt")]) == 0
    assert (tmp_path / "link.txt").is_symlink() and os.readlink(tmp_path / "link.txt") == "real.txt"
    assert (tmp_path / "real.txt").read_text() == f"{model_path}: no findings (profile generic)\n"
    (tmp_path / "link.onnx").symlink_to("real.onnx")  # dangling: the link's target is created
    save(_model(), tmp_path / "link.onnx")
    assert (tmp_path / "link.onnx").is_symlink()
    assert load(tmp_path / "real.onnx").graph.node[0].op_type == "Add"


def test_report_to_a_hard_link_of_the_model_is_refused(tmp_path, model_path, capsys):
    before = model_path.read_bytes()
    (tmp_path / "hard.onnx").hardlink_to(model_path)
    code, err = _main(capsys, "check", str(model_path), "-o", str(tmp_path / "hard.onnx"))
    _one_line(code, err, f"{tmp_path / 'hard.onnx'}: is the model being checked; write the report to another file")
    assert model_path.read_bytes() == before and (tmp_path / "hard.onnx").read_bytes() == before


# --- profile values out of range -------------------------------------------------------------------


_HEAD = '"name": "p", "description": "d", "sources": []'
_FIXED = '"fixed_output": {"Softmax": [{"storage": "%s", "scale": %s, "zero_point": %s}]}'


@pytest.mark.parametrize(("body", "expected"), [
    (_FIXED % ("int8", "0.5", "500"),
     "$.fixed_output.Softmax[0].zero_point: zero point 500 is outside the storage range [-128, 127]"),
    (_FIXED % ("int8", "1e400", "0"), "$.fixed_output.Softmax[0].scale: scale inf must be finite and non-zero"),
    (_FIXED % ("int8", "0.5", "99999999999999999999999"), ("$.fixed_output.Softmax[0].zero_point: zero point "
     "99999999999999999999999 is outside the storage range [-128, 127]")),
    (_FIXED % ("uint4", "0.5", "16"),
     "$.fixed_output.Softmax[0].zero_point: zero point 16 is outside the storage range [0, 15]"),
    ('"roles": {"weight": {"storage": [{"type": "int8", "min": -200}]}}',
     ("$.roles.weight.storage[0].min: storage range [-200, 127] must satisfy -128 <= storage_min < "
      "storage_max <= 127 for int8")),
    ('"roles": {"bias": {"storage": ["int8"], "zero_points": [0, 128]}}',
     "$.roles.bias.zero_points[1]: zero point 128 is outside the storage range [-128, 127]"),
    ('"accumulator_bits": 16.0', "$.accumulator_bits: 16.0 is not of type 'integer'"),  # not "a 16.0-bit" later
    ('"roles": {"activation": {"zero_points": [3.0]}}', "$.roles.activation.zero_points[0]: 3.0 is not of type 'integer'"),
])
def test_out_of_range_profile_values_exit_2(tmp_path, model_path, capsys, body, expected):
    profile = tmp_path / "p.json"
    profile.write_text(f"{{{_HEAD}, {body}}}")  # text, not json.dumps: 1e400 and huge integers as written
    _one_line(*_main(capsys, "check", str(model_path), "--profile", str(profile)),
              f"{profile}: invalid profile at {expected}")


def test_built_in_profiles_still_load():
    from onnx_qtypes.checker import builtin_names, load_profile

    assert all(load_profile(name).name == name for name in builtin_names())
    assert np.isclose(load_profile("tflite-int8").fixed_output["Softmax"][0].scale, 1 / 256)


def test_run_writes_its_npz_into_a_fifo(tmp_path, model_path):
    """zipfile seeks while writing; a stream target gets the archive built in memory."""
    import io

    inputs, fifo = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, x=np.arange(4, dtype=np.float32))
    os.mkfifo(fifo)
    thread, got = _reader(fifo)
    code, err = _cli("run", str(model_path), "--inputs", str(inputs), "--outputs", str(fifo))
    thread.join(timeout=60)
    assert code == 0, err
    with np.load(io.BytesIO(b"".join(got))) as archive:
        np.testing.assert_array_equal(archive["y"], np.arange(4, dtype=np.float32) + [1, 2, 3, 4])


def test_lift_api_refuses_a_fifo_or_binary_statistics_file(tmp_path, model_path):
    from onnx_qtypes import lift
    from onnx_qtypes.interop import StatisticsImportError

    fifo, binary, deep = tmp_path / "cal.json", tmp_path / "bin.json", tmp_path / "deep.json"
    os.mkfifo(fifo)
    binary.write_bytes(b"\xff\xfe\x00\x9c")
    deep.write_text("[" * 100_000)
    with pytest.raises(StatisticsImportError, match=re.escape(f"{fifo}: {NOT_REGULAR}")):
        lift(str(model_path), statistics=fifo)  # before: blocked opening the FIFO
    with pytest.raises(StatisticsImportError, match="bin.json: not JSON .not UTF-8 text."):
        lift(str(model_path), statistics=binary)
    with pytest.raises(StatisticsImportError, match="deep.json: not"):
        lift(str(model_path), statistics=deep)
