"""``onnx-qtypes lift MODEL.gguf OUT``: the GGUF branch of the lift command (interop/gguf.py does the work).

Every GGUF tensor becomes a typed initializer and a float graph output of the same name; the metadata goes to
metadata_props; a tensor of a format no quantized type expresses is refused by name (exit 2, nothing written).
Large files write their tensors to OUT.data (external data), tensor by tensor.
"""

from __future__ import annotations

import argparse
import json

from onnx_qtypes.interop.gguf import GGUFError, lift_gguf
from onnx_qtypes.proto.files import standard_output


def run(args: argparse.Namespace) -> int:
    if args.statistics:
        raise GGUFError(f"{args.input}: --statistics applies to QDQ / QOperator models; a GGUF file's weights "
                        "carry no calibration statistics")
    result = lift_gguf(args.input, args.output)
    with standard_output() as out:
        if args.format == "json":
            doc = {"input": args.input, "output": args.output, "tensors": result.tensors,
                   "formats": dict(sorted(result.formats.items())), "external_data": result.external,
                   "bytes_read": result.bytes_read, "bytes_written": result.bytes_written}
            out.write(json.dumps(doc, indent=2) + "\n")
        else:
            print(f"{args.output}: {result.summary()}", file=out)
    return 0
