"""Calibrate a float model on sample inputs: statistics of every float tensor, and a typed model.

--data is an .npz keyed by graph input name, each array holding the samples
stacked on a new leading axis ([N, *input_shape]); it is read one sample at
a time. The model runs on onnxruntime when installed (optimizations off),
otherwise on onnx's reference evaluator. Every float tensor gets statistics
(min, max, mean, std, count and a histogram of at most 2048 bins from min to
max; per channel: axis 1 of activations, the output channel of weights).

Without --stats-only the output is a typed model: activations quantized per
tensor over the range --method picks (minmax, percentile, entropy, mse),
weights symmetric over their min / max (per output channel with
--per-channel), Conv / Gemm biases int32 with scale = input scale · weight
scale. --profile makes the choices the profile accepts (storage, zero
points, power-of-2 scales, shared and fixed output parameters), so that
`onnx-qtypes check --profile P` passes. With --stats-only the float model is
written with the statistics and nothing is quantized. A tensor that takes NaN
or an infinity (an attention mask's -inf fill) or a constant that holds one
gets neither statistics nor a type and stays float; a note names each.

Samples whose names, shapes or dtypes do not fit the model's inputs, a sample
input holding NaN or an infinity, an empty or unreadable .npz, or a model with
no float tensor are refused (exit 2) and nothing is written.
"""

from __future__ import annotations

import argparse

from onnx_qtypes.calibration.calibrate import ACTIVATION_STORAGE, WEIGHT_STORAGE, calibrate_model
from onnx_qtypes.calibration.collect import progress_bar
from onnx_qtypes.calibration.data import NpzSamples
from onnx_qtypes.calibration.errors import CalibrationError
from onnx_qtypes.calibration.ranges import DEFAULT_PERCENTILE, METHODS
from onnx_qtypes.proto import save
from onnx_qtypes.proto.files import refuse_overwrite, require_regular_file, standard_output
from onnx_qtypes.proto.schema import Schema

SCHEMAS = tuple(s.name.lower() for s in Schema)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="FLOAT_MODEL", help="float .onnx model")
    parser.add_argument("--data", required=True, metavar="CALIB.npz",
                        help=".npz with one array per graph input, samples stacked on a leading axis")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="where to write the model")
    parser.add_argument("--schema", choices=SCHEMAS, default="asymmetric", help="activation schema (default asymmetric)")
    parser.add_argument("--method", choices=METHODS, default="minmax", help="range choice (default minmax)")
    parser.add_argument("--percentile", type=float, default=DEFAULT_PERCENTILE,
                        help=f"with --method percentile: the share of values kept (default {DEFAULT_PERCENTILE})")
    parser.add_argument("--per-channel", action="store_true", help="weights per output channel")
    parser.add_argument("--activation-type", choices=ACTIVATION_STORAGE,
                        help="activation storage (default uint8, int8 for symmetric schemas)")
    parser.add_argument("--weight-type", choices=WEIGHT_STORAGE, help="weight storage (default int8)")
    parser.add_argument("--profile", metavar="NAME|FILE", help="make the choices this hardware profile accepts")
    parser.add_argument("--stats-only", action="store_true", help="annotate the float model; do not quantize")
    parser.add_argument("--engine", choices=("auto", "onnxruntime", "reference"), default="auto",
                        help="what runs the float model (default: onnxruntime when installed)")


def run(args: argparse.Namespace) -> int:
    refuse_overwrite(args.output, model=args.model, data=args.data)
    require_regular_file(args.model, "a float .onnx model")
    profile = None
    if args.profile:
        from onnx_qtypes.checker.profile import load_profile

        profile = load_profile(args.profile)
    samples = NpzSamples(args.data)
    try:
        result = calibrate_model(args.model, samples, method=args.method, schema=args.schema,
                                 activation=args.activation_type, weight=args.weight_type,
                                 per_channel=args.per_channel, percentile=args.percentile, profile=profile,
                                 stats_only=args.stats_only, engine=args.engine, progress=progress_bar(len(samples)))
    except CalibrationError as exc:  # name the files: the message names the sample, input or node
        raise CalibrationError(f"{args.model} with {args.data}: {exc}") from None
    save(result.model, args.output)
    model, notes, quantized, summary = result.model, result.notes, result.quantize, result.summary()
    del result  # the accumulators behind its statistics: the checker below needs the memory more
    with standard_output() as out:
        for note in notes:
            print(f"note: {note}", file=out)
        if quantized:
            print(f"note: {_findings(model, profile)}", file=out)
        print(f"{args.output}: {summary}", file=out)
    return 0


def _findings(model, profile) -> str:
    """The checker's verdict on the output, so a clipped bias or a profile limit is not found later by surprise."""
    from onnx_qtypes.diagnosis import diagnose

    found = diagnose(model, profile).diagnostics
    errors = sum(1 for d in found if d.severity.name == "ERROR")
    rules = sorted({d.rule for d in found})
    if not found:
        return f"check finds nothing (profile {getattr(profile, 'name', 'generic')})"
    return (f"check finds {errors} error(s), {len(found) - errors} warning(s) ({', '.join(rules)}); "
            "`onnx-qtypes check OUT` lists them")
