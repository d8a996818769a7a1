"""Check a typed model against the validity rules and, optionally, a hardware profile.

Reports every finding (not only the first), as text (one line each), JSON or
SARIF 2.1.0. Exit code 0 when no error was found (warnings allowed), 1 when
the model breaks at least one error rule, 2 when the model or the profile
cannot be read.
"""

from __future__ import annotations

import argparse
import sys

from onnx_qtypes.checker import builtin_names, iter_diagnostics, load_profile
from onnx_qtypes.checker.emit import FORMAT_NAMES, Report, render
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.files import atomic_write, refuse_overwrite


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="path to an .onnx model")
    parser.add_argument(
        "--profile",
        default="generic",
        metavar="NAME|FILE",
        help=f"hardware profile: a built-in name ({', '.join(builtin_names())}) or a profile .json file "
        "(default generic)",
    )
    parser.add_argument("--format", choices=FORMAT_NAMES, default="text", help="report format (default text)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")


def run(args: argparse.Namespace) -> int:
    if args.output:
        try:
            refuse_overwrite(args.output, model=args.model)  # the same path, a symlink or a hard link to it
        except QTypesError:
            raise QTypesError(f"{args.output}: is the model being checked; write the report to another file") from None
    profile = load_profile(args.profile)
    report = Report(args.model, profile.name, tuple(iter_diagnostics(args.model, profile)))
    text = render(report, args.format)
    if args.output:
        with atomic_write(args.output, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 1 if report.errors else 0
