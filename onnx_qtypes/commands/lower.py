"""Lower a typed model to standard ONNX that runtimes without the extension run.

--form qdq writes QuantizeLinear / DequantizeLinear around every
operator; --form qoperator writes the standard QLinearConv / QLinearMatMul
where they apply, ConvInteger / MatMulInteger where quantize_dynamic wrote
them, and runs data-movement operators (Reshape, Transpose, MaxPool, ...)
directly on int8 / uint8 values, QDQ elsewhere; --form
matmulnbits writes QDQ with every MatMul weight blocked along K (2, 4 or
8 bits, blocks of 16 or more) as onnxruntime's com.microsoft.MatMulNBits. Without
--form, a model lift read from a QOperator or quantize_dynamic file is
written in the qoperator form, one read from a MatMulNBits file in the
matmulnbits form (lift records which, in the model's metadata_props), any
other in the qdq form: lower(lift(m)) then runs m's own kernels. The output has
no extension fields (schema, narrowed ranges and statistics are kept in
ValueInfo metadata_props, so `onnx-qtypes lift` restores the typed model)
and is written at IR 10 / opset 21, which onnxruntime 1.31 loads. A type
expressed in bfloat16 is lowered with a warning: onnxruntime (1.31, 1.32) has no
QuantizeLinear / DequantizeLinear kernel for bfloat16 scales. An invalid type
is refused (exit 2); `onnx-qtypes check` lists every problem. The output may
not be the input file. When IN has no quantized types there is nothing to
lower: an existing OUT is left unchanged and the command exits 2 (IN and OUT
were probably given the wrong way round); a new OUT is written (the model as
it was, at IR 10 / opset 21) with a warning. A graph input of a dynamic type
arrives by the calling convention: its storage with graph inputs <x>.scale and
<x>.zero_point, the zero point optional (an all-zero initializer of its name,
which OpenVINO and IREE read as a constant: --dynamic-inputs storage-required
makes it required), or reals quantized by its schema (--dynamic-inputs reals).
"""

from __future__ import annotations

import argparse
import os
import sys

from onnx_qtypes.interop.lower import DYNAMIC_INPUTS, FORMS, lower_model
from onnx_qtypes.proto import save
from onnx_qtypes.proto.default_domain import default_opset
from onnx_qtypes.proto.external import spill_folder
from onnx_qtypes.proto.files import keep_when_idle, refuse_overwrite, standard_output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN", help="typed .onnx model")
    parser.add_argument("output", metavar="OUT", help="where to write the standard ONNX model")
    parser.add_argument("--form", choices=FORMS, default=None,
                        help="QDQ everywhere, or QOperator / MatMulNBits where it applies (default: the form of the file "
                             "lift read the model from, else qdq)")
    parser.add_argument("--dynamic-inputs", choices=DYNAMIC_INPUTS, default="storage",
                        help="a graph input of a dynamic type: its storage with graph inputs <x>.scale and "
                             "<x>.zero_point, the zero point optional (default; an all-zero initializer of its name) "
                             "or required (storage-required: for runtimes that read that initializer as a constant, "
                             "OpenVINO 2026.4, IREE 3.13); or reals quantized by its schema")


def run(args: argparse.Namespace) -> int:
    refuse_overwrite(args.output, model=args.input)
    # the weights stay in their files (proto.external) and go to OUT a chunk at a time, and those lower computes
    # (MatMulNBits' packed weights) wait in a folder beside OUT until then: never all in memory
    with spill_folder(os.path.dirname(os.path.abspath(args.output))):
        result = lower_model(args.input, args.form, args.dynamic_inputs, external_data="lazy")
        idle = None
        if not result.typed_tensors:
            idle = keep_when_idle(args.output, args.input, "the model has no quantized types; nothing to lower")
        save(result.model, args.output, as_loaded=True)  # the file it was when the weights were read in
    if idle:
        print(f"onnx-qtypes: warning: {idle}", file=sys.stderr)
    for message in result.warnings:
        print(f"onnx-qtypes: warning: {message}", file=sys.stderr)
    opset = default_opset(result.model.opset_import)
    with standard_output() as out:
        for message in result.notes:
            print(f"note: {message}", file=out)
        print(f"{args.output}: standard ONNX ({result.form}), IR {result.model.ir_version}, opset {opset}", file=out)
    return 0
