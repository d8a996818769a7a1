"""Check models against the validity rules and, optionally, a hardware profile.

A typed model is checked as it is. A QDQ or QOperator model, as a quantizer
wrote it, is checked through its lifted form, in memory (the file is never
written): every problem is located at the node and tensor of the file given,
and a note says what could not be lifted and so was not checked.

Reports every finding (not only the first), as text (one line each), JSON or
SARIF 2.1.0, for every model given. Exit code 0 when no error was found
(warnings allowed), 1 when a model breaks at least one error rule, 2 when a
model or the profile cannot be read (the other models are still checked).
"""

from __future__ import annotations

import argparse
import sys

from onnx_qtypes.checker import builtin_names, load_profile, select_rules
from onnx_qtypes.checker.emit import FORMAT_NAMES, Report, render
from onnx_qtypes.diagnosis import diagnose
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.files import refuse_overwrite, standard_output, write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("models", metavar="MODEL", nargs="*", help="path to an .onnx model (typed, QDQ or QOperator)")
    parser.add_argument(
        "--profile",
        default="generic",
        metavar="NAME|FILE",
        help=f"hardware profile: a built-in name ({', '.join(builtin_names())}) or a profile .json file "
        "(default generic; --list-profiles describes them)",
    )
    parser.add_argument("--format", choices=FORMAT_NAMES, default="text", help="report format (default text)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--select", metavar="IDS", action="append", default=[],
                        help="run only these rules: comma-separated ids, id prefixes (QT1, QT40) or slugs")
    parser.add_argument("--ignore", metavar="IDS", action="append", default=[],
                        help="do not run these rules (same forms as --select)")
    parser.add_argument("--list-profiles", action="store_true", help="list the built-in profiles and exit")


def _ids(values: list[str]) -> list[str]:
    return [part for value in values for part in value.split(",")]


def run(args: argparse.Namespace) -> int:
    if args.list_profiles:
        width = max(map(len, builtin_names()))
        with standard_output() as out:
            for name in builtin_names():
                out.write(f"{name:<{width}}  {' '.join(load_profile(name).description.split())}\n")
        return 0
    if not args.models:
        raise QTypesError("check: give at least one MODEL (or --list-profiles)")
    if args.output:
        for model in args.models:
            try:
                refuse_overwrite(args.output, model=model)  # the same path, a symlink or a hard link to it
            except QTypesError:
                raise QTypesError(f"{args.output}: is the model being checked; write the report to another file") from None
    profile = load_profile(args.profile)
    rules = select_rules(_ids(args.select), _ids(args.ignore))
    reports, unreadable = [], 0
    for model in args.models:
        try:
            found = diagnose(model, profile, rules=rules)
        except QTypesError as exc:
            if len(args.models) == 1:
                raise
            print(f"onnx-qtypes: error: {' '.join(str(exc).split())}", file=sys.stderr)
            unreadable += 1
            continue
        reports.append(Report(model, profile.name, found.diagnostics, found.notes))
    text = render(reports, args.format)
    write_report(args.output, [text])
    if unreadable:
        return 2
    return 1 if any(r.errors for r in reports) else 0
