"""Run the conformance suite's execution cases on a backend and judge every output.

Backends: reference (the definition), reference-integer (integer kernels),
onnxruntime (default graph optimizations, what users run),
onnxruntime-unoptimized (ORT_DISABLE_ALL, each node as written), openvino,
MODULE:CLASS (a Backend class of your own) or results:DIR (outputs a runtime
outside Python wrote to DIR/<case id>/test_data_set_0/output_k.pb).
Prints a summary by operator; exit 1 when any case fails or errors. With
--known, failures and errors that conformance_tests/results/deviations.json
explains for this backend and version (published in proposal/status.md) are
still reported but do not set the exit status: a new vendor release, or a
regression, is what fails.
"""

from __future__ import annotations

import argparse
import sys

from onnx_qtypes.proto.errors import QTypesError


class ConformanceUsageError(QTypesError):
    """The conformance command was misused."""


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"-j takes a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"-j must be at least 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", default="reference", metavar="BACKEND",
                        help="reference | reference-integer | onnxruntime | onnxruntime-unoptimized | openvino | "
                             "MODULE:CLASS | results:DIR (default: reference)")
    parser.add_argument("-k", dest="filter", action="append", metavar="FILTER",
                        help="run only cases whose id, operator or a tag contains FILTER (repeat: all must match)")
    parser.add_argument("-j", dest="jobs", type=_jobs, default=1, metavar="N", help="run N cases at a time")
    parser.add_argument("--cases", metavar="DIR", help="folder of execution cases (default: the installed suite)")
    parser.add_argument("--report", metavar="FILE.json", help="write every case's outcome as JSON")
    parser.add_argument("--junit", metavar="FILE.xml", help="write JUnit XML, one testcase per case")
    parser.add_argument("--known", action="store_true",
                        help="failures the published deviations explain for this backend and version do not set the "
                             "exit status (they are still reported)")


def run(args: argparse.Namespace) -> int:
    from onnx_qtypes.conformance import backend_version_of, load_backend, load_cases, run_suite
    from onnx_qtypes.conformance.reports import summary_table, write_junit, write_report
    from onnx_qtypes.conformance.runner import failed

    if args.report and args.junit and args.report == args.junit:
        raise ConformanceUsageError("--report and --junit name the same file")
    backend = load_backend(args.backend)  # unknown / unavailable backend: BackendError, exit 2
    cases = load_cases(args.cases, args.filter)  # unreadable case folders: CaseError, exit 2
    if not cases:
        where = args.cases or "the installed suite"
        raise ConformanceUsageError(f"no execution cases in {where}" + (f" match -k {' '.join(args.filter)}" if args.filter else ""))
    name, version = str(getattr(backend, "name", args.backend)), backend_version_of(backend)
    tty = sys.stdout.isatty()

    def progress(done: int, total: int, result: object) -> None:
        sys.stdout.write(f"\r[{done}/{total}] {getattr(result, 'id', '')}"[:100].ljust(100))
        if done == total:
            sys.stdout.write("\r" + " " * 100 + "\r")
        sys.stdout.flush()

    results = run_suite(backend, jobs=args.jobs, cases=cases, progress=progress if tty else None)
    if args.report:
        write_report(args.report, results, name, version)
    if args.junit:
        write_junit(args.junit, results, name, version)
    sys.stdout.write(summary_table(results, name, version))
    if not args.known:
        return 1 if failed(results) else 0
    return _known_outcome(results, name, version)


def _known_outcome(results: list, name: str, version: str) -> int:
    from onnx_qtypes.conformance.judging import ERROR, FAIL
    from onnx_qtypes.conformance.status import load_deviations

    deviations = load_deviations()
    bad = [r for r in results if r.outcome in (FAIL, ERROR)]
    unknown = [r for r in bad if not any(d.matches(name, version, r.id) for d in deviations)]
    label = f"{name} {version}".strip()
    if bad:
        sys.stdout.write(f"\n{len(bad) - len(unknown)} of {len(bad)} failing or erroring case(s) are known deviations "
                         f"of {label} (explained in proposal/status.md)")
        sys.stdout.write(f"; {len(unknown)} are not: " + ", ".join(r.id for r in unknown[:10])
                         + (" ..." if len(unknown) > 10 else "") + "\n" if unknown else "\n")
    return 1 if unknown else 0
