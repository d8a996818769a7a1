"""The ``onnx-qtypes`` command line.

Exit codes, everywhere: 0 success / model clean; 1 the model violates rules
or cases failed; 2 the input could not be read or the command was misused,
always with one line on stderr and never a Python traceback (set
ONNX_QTYPES_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from onnx_qtypes import __version__
from onnx_qtypes.proto.errors import QTypesError

# Subcommand name -> module in onnx_qtypes.commands with add_arguments(parser) and run(args) -> int.
COMMANDS = {
    "show": "print every quantized tensor with its parameters and statistics (table, JSON or an HTML page)",
    "run": "run a typed model on .npz inputs (definitional or integer kernels)",
    "lift": "QDQ or QOperator ONNX model -> typed model",
    "lower": "typed model -> standard ONNX (QDQ, or QOperator where it applies)",
    "check": "check a model against the validity rules and a hardware profile",
    "rule": "print a checker rule's documentation (or list every rule)",
    "conformance": "run the conformance suite's execution cases on a backend",
    "compare": "the first tensor where a backend departs from the reference",
    "calibrate": "float model + sample inputs -> statistics and a typed model",
}

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(QTypesError):
    """The command line itself is wrong."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="onnx-qtypes", description="Quantized element types for ONNX: inspect, check, run, convert.")
    parser.add_argument("--version", action="version", version=f"onnx-qtypes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"onnx_qtypes.commands.{name}")
        command = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip())
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    debug = bool(os.environ.get("ONNX_QTYPES_DEBUG"))
    try:
        args = build_parser().parse_args(argv)
        return int(args._run(args))
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print("onnx-qtypes: interrupted", file=sys.stderr)
        return 130
    except QTypesError as exc:
        if debug:
            raise
        print(f"onnx-qtypes: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, MemoryError, RecursionError) as exc:
        if debug:
            raise
        print(f"onnx-qtypes: error: {_one_line(type(exc).__name__ + ': ' + str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line, but say so
        if debug:
            raise
        print(
            f"onnx-qtypes: internal error ({type(exc).__name__}: {_one_line(str(exc))}); "
            "rerun with ONNX_QTYPES_DEBUG=1 and report it",
            file=sys.stderr,
        )
        return EXIT_USAGE


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
