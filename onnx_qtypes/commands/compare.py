"""Find the first tensor where a backend departs from the reference.

Runs the reference (the definition, on the typed model) and a backend (the same names `conformance` takes:
reference-integer, onnxruntime, onnxruntime-unoptimized, openvino, MODULE:CLASS) on the same inputs, with
every intermediate tensor exposed, and lists each tensor both hold in the model's node order: how far the
backend's values are from the reference's, how many elements are beyond the tolerance and what the tolerance
is. A quantized tensor is compared in storage steps (a dynamic one by the real values the parameters each side
bound give, in steps of the reference's scale); a float tensor (a DequantizeLinear output, a float output of an
operator, a graph output) in reals. The tolerance is the conformance suite's rule (proposal/spec/semantics.md
§8): the operator's own step, what the deviations its inputs measured may grow into (#chains), and for a float
value its expressed type's rounding (#float-values). The first tensor beyond its tolerance is where the backend
departs; its node and which of that node's inputs still agreed are named. A tensor that deviates where the rule
gives no bound is listed as not judged. Works on typed models and on QDQ / QOperator files as quantizers write
them (through the in-memory lift `check` uses), naming tensors as the file does.

Without --inputs, inputs are drawn with numpy.random.default_rng(SEED) (--seed, default 0): a float input a
QuantizeLinear reads, uniformly over the reals its type represents; other float inputs standard normal;
quantized inputs uniformly over their storage range.

Exit codes: 0 no tensor beyond its tolerance; 1 a tensor is; 2 the model, the inputs or the backend cannot be
used, or the backend runs standard ONNX and `lower` cannot write the model as standard ONNX (one line on stderr).
"""

from __future__ import annotations

import argparse

from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.files import refuse_overwrite, write_report


class CompareUsageError(QTypesError):
    """The compare command was misused."""


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seed takes a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--seed must be 0 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="path to an .onnx model: typed, QDQ or QOperator")
    parser.add_argument("--backend", required=True, metavar="BACKEND",
                        help="reference | reference-integer | onnxruntime | onnxruntime-unoptimized | openvino | "
                             "MODULE:CLASS (as `conformance` takes them)")
    parser.add_argument("--inputs", metavar="IN.npz",
                        help=".npz (numpy.savez) with one array per graph input, named after it (default: drawn, "
                             "see --seed)")
    parser.add_argument("--seed", type=_seed, default=0, metavar="N",
                        help="seed of the drawn inputs when --inputs is not given (default 0)")
    parser.add_argument("--format", choices=("text", "json", "html"), default="text",
                        help="text (default), json, or html: one self-contained page")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the report to FILE (atomically) instead of stdout")


def run(args: argparse.Namespace) -> int:
    from onnx_qtypes.compare import compare
    from onnx_qtypes.compare.page import render_html
    from onnx_qtypes.compare.render import render_json, render_text

    if args.backend.startswith("results:"):
        raise CompareUsageError("compare runs the backend on the model; results:DIR holds outputs of the "
                                "conformance cases only")
    if args.output:
        refuse_overwrite(args.output, model=args.model, inputs_file=args.inputs)
    result = compare(args.model, args.backend, args.inputs, seed=args.seed)
    render = {"text": render_text, "json": render_json, "html": render_html}[args.format]
    text = render(result)
    write_report(args.output, [text])
    return result.exit_code
