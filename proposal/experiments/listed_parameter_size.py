"""How large a blocked weight's type is with its scales listed and by reference.

Run: PYTHONPATH=. python proposal/experiments/listed_parameter_size.py

The weight of tests/test_parameters_by_reference.py: int4 [4096, 4096], float16
scales per block of 32 along axis 0 (524,288 scales), the QDQ form
onnxruntime's and NNCF's 4-bit weight quantizers write, lifted. Printed: the
serialized declaration (ValueInfoProto) with the parameters listed in the type
and by reference, the bytes per listed scale, what that is for every weight
of a 7B- and a 70B-parameter model quantized alike, and the size of the
.onnx file saved with external data (the referenced form).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import onnx

import onnx_qtypes as qt
from onnx_qtypes.proto.model import write_qtype

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from test_parameters_by_reference import BLOCK, K, N, _blocked_qdq  # noqa: E402

MIB, GIB = 2**20, 2**30


def main() -> int:
    print(f"onnx {onnx.__version__}")
    lifted = qt.lift(_blocked_qdq())
    w = qt.get_qtype(lifted, "w")
    scales = len(w.scale)
    referenced = len(next(vi for vi in lifted.graph.value_info if vi.name == "w").SerializeToString())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "typed.onnx"
        qt.save(lifted, path, external_data=True)
        file_bytes = path.stat().st_size
    listed_info = onnx.ValueInfoProto()  # the listed form written directly: set_qtype would pick references
    listed_info.CopyFrom(next(vi for vi in lifted.graph.value_info if vi.name == "w"))
    write_qtype(listed_info, w.replace(scale_tensor=None, zero_point_tensor=None))
    listed = len(listed_info.SerializeToString())
    per_scale = listed / scales
    print(f"weight int4 [{K}, {N}], blocks of {BLOCK} along axis 0: {scales:,} scales")
    print(f"declaration, parameters listed:       {listed:,} bytes ({listed / MIB:.2f} MiB, {per_scale:.2f} bytes per scale)")
    print(f"declaration, parameters by reference: {referenced:,} bytes")
    print(f".onnx file saved with external data (referenced form): {file_bytes:,} bytes")
    for billions in (7, 70):
        total = billions * 10**9 / BLOCK * per_scale
        print(f"{billions}B parameters quantized alike, listed: {total / GIB:.2f} GiB of declarations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
