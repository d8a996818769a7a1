"""proposal/onnx.proto.diff is the change to the installed onnx's onnx.proto: current, applicable alone with `patch`
(it creates onnx/onnx_qtypes.proto), and compiling with protoc into a TypeProto.Tensor that has the quantization
(1000) and statistics (1001) fields."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from builders import ROOT, load_script
from google.protobuf import descriptor_pb2

DIFF = ROOT / "proposal" / "onnx.proto.diff"


def test_the_committed_diff_is_what_the_script_writes():
    assert DIFF.read_text(encoding="utf-8") == load_script("proposal/onnx_proto_diff.py").diff(), (
        "run python proposal/onnx_proto_diff.py")


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch program")
def test_the_diff_applies_and_compiles(tmp_path):
    script = load_script("proposal/onnx_proto_diff.py")
    source, _ = script.installed_onnx_proto()
    (tmp_path / "onnx").mkdir()
    shutil.copy(source, tmp_path / "onnx" / "onnx.proto")  # only the stock file: the diff brings the rest
    applied = subprocess.run(["patch", "-p1", "--no-backup-if-mismatch", "-i", str(DIFF)], cwd=tmp_path,
                             capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    created = tmp_path / "onnx" / "onnx_qtypes.proto"
    assert created.read_bytes() == (ROOT / "proto" / "onnx_qtypes.proto").read_bytes()
    out = tmp_path / "descriptors.pb"
    compiled = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", "--include_imports",
                               f"--descriptor_set_out={out}", "onnx/onnx.proto"], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    files = {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file}
    assert set(files) == {"onnx/onnx.proto", "onnx/onnx_qtypes.proto"}
    type_proto = next(m for m in files["onnx/onnx.proto"].message_type if m.name == "TypeProto")
    tensor = next(m for m in type_proto.nested_type if m.name == "Tensor")
    fields = {f.number: (f.name, f.type_name) for f in tensor.field}
    assert fields[1000] == ("quantization", ".onnx_qtypes.QuantizedType")
    assert fields[1001] == ("statistics", ".onnx_qtypes.TensorStatistics")
    assert {1, 2} <= set(fields)
