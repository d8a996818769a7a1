"""Regenerate the committed Python bindings of ``onnx_qtypes.proto``.

Run ``python proto/generate.py`` after editing the .proto. The bindings are
committed so that installing the package needs no protobuf compiler;
``tests/test_proto_bindings.py`` regenerates them into a temporary folder
and fails when the committed files drift. The compiler is the one bundled
with ``grpcio-tools`` (pinned in the ``test`` extra), so everybody
regenerates byte-identical files.
"""

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
PROTO = "onnx_qtypes.proto"
OUTPUTS = ("onnx_qtypes_pb2.py", "onnx_qtypes_pb2.pyi")


def generate(out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Compile the .proto into ``out_dir``; return the written files."""
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    argv = ["protoc", f"-I{HERE}", f"--python_out={out_dir}", f"--pyi_out={out_dir}", str(HERE / PROTO)]
    if protoc.main(argv) != 0:
        raise RuntimeError(f"protoc failed on {HERE / PROTO}")
    return [out_dir / name for name in OUTPUTS]


if __name__ == "__main__":
    for path in generate(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)
