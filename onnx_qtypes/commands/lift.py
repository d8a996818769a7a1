"""Lift an onnxruntime QDQ or QOperator model into typed form.

QuantizeLinear / DequantizeLinear pairs and QLinear* operators become
quantized types on the tensors between unmodified float operators; weights
become typed initializers. Float graph inputs and outputs stay float, with
QuantizeLinear / DequantizeLinear at the edges. Nodes the lift does not
understand stay as they were, with a warning naming them. With
--statistics, onnxruntime's calibration results (the JSON written by
quantize_static(calibration_cache_path=...) or write_calibration_table) are
recorded as the tensors' statistics; any other JSON file is refused (exit 2).

When there is nothing to lift (IN is already typed, or has no quantization
and no statistics were attached), an existing OUT is left unchanged and the
command exits 2: IN and OUT were probably given the wrong way round. A new
OUT is written (the model as it was) with a warning.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from onnx_qtypes.interop.left import summary as summary_of_left
from onnx_qtypes.commands import lift_gguf
from onnx_qtypes.interop.gguf import is_gguf
from onnx_qtypes.interop.lift import lift_model
from onnx_qtypes.interop.ort_statistics import load_calibration_cache
from onnx_qtypes.proto import save
from onnx_qtypes.proto.external import spill_folder
from onnx_qtypes.proto.reader import read_model
from onnx_qtypes.proto.files import keep_when_idle, refuse_overwrite, require_regular_file, standard_output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN", help="QDQ or QOperator .onnx model, or a .gguf file")
    parser.add_argument("output", metavar="OUT", help="where to write the typed model")
    parser.add_argument(
        "--statistics", metavar="CALIBRATION.json", help="onnxruntime calibration results to record as statistics"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default text)")


def run(args: argparse.Namespace) -> int:
    refuse_overwrite(args.output, model=args.input, statistics=args.statistics)
    if is_gguf(args.input):  # llama.cpp's weights container: its own lift (lift_gguf.py)
        return lift_gguf.run(args)
    statistics = None
    if args.statistics:  # read first: its errors name that file alone, and come before the model's
        require_regular_file(args.statistics, "a calibration .json file")  # before opening: a FIFO blocks
        statistics = load_calibration_cache(args.statistics)
    # the weights stay in their files (proto.external) and those the lift computes (MatMulNBits repacked) wait in a
    # folder beside OUT, until save copies them into OUT's data file: never all of them in memory
    with spill_folder(os.path.dirname(os.path.abspath(args.output))):
        result = lift_model(read_model(args.input, "lift", external_data="lazy"), statistics=statistics)
        idle = None
        if not result.typed_tensors and not result.statistics:
            idle = keep_when_idle(args.output, args.input, "; ".join(result.notes) or (
                summary_of_left(result.left) if result.left else "no quantization to lift"))
        save(result.model, args.output)
    if idle:
        print(f"onnx-qtypes: warning: {idle}", file=sys.stderr)
    if args.format == "json":
        doc = {
            "input": args.input,
            "output": args.output,
            "typed_tensors": result.typed_tensors,
            "folded": {"QuantizeLinear": result.removed_quantize, "DequantizeLinear": result.removed_dequantize},
            "qoperator_nodes": result.qoperator_nodes,
            "statistics": result.statistics,
            "notes": result.notes,
            "warnings": result.warnings,
            "left": [{"node": n.index, "name": n.name, "op_type": n.op_type, "domain": n.domain, "reason": n.reason}
                     for n in result.left],
        }
        with standard_output() as out:
            out.write(json.dumps(doc, indent=2) + "\n")
        return 0
    for message in result.warnings:
        print(f"onnx-qtypes: warning: {message}", file=sys.stderr)
    with standard_output() as out:
        for message in result.notes:
            print(f"note: {message}", file=out)
        for node in result.left:
            print(f"  {node.line()}", file=out)
        print(f"{args.output}: {result.summary()}", file=out)
    return 0
