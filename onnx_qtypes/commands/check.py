"""Check a typed model against the validity rules and, optionally, a hardware profile.

Reports every finding (not only the first), as text (one line each), JSON or
SARIF 2.1.0. Exit code 0 when no error was found (warnings allowed), 1 when
the model breaks at least one error rule, 2 when the model or the profile
cannot be read.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

from onnx_qtypes.checker import builtin_names, iter_diagnostics, load_profile
from onnx_qtypes.checker.emit import FORMAT_NAMES, Report, render
from onnx_qtypes.proto.errors import QTypesError


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


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file: never a half-written report."""
    target = pathlib.Path(path)
    folder = target.parent if str(target.parent) else pathlib.Path(".")
    if not folder.is_dir():
        raise QTypesError(f"{target}: folder {folder} does not exist")
    if target.is_dir():
        raise QTypesError(f"{target}: is a directory, expected a file name for the report")
    fd, tmp = tempfile.mkstemp(prefix=".qtypes-", suffix=".report.tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        raise QTypesError(f"{target}: cannot write the report ({exc.strerror or exc})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def run(args: argparse.Namespace) -> int:
    if args.output and pathlib.Path(args.output).resolve() == pathlib.Path(args.model).resolve():
        raise QTypesError(f"{args.output}: is the model being checked; write the report to another file")
    profile = load_profile(args.profile)
    report = Report(args.model, profile.name, tuple(iter_diagnostics(args.model, profile)))
    text = render(report, args.format)
    if args.output:
        write_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    return 1 if report.errors else 0
