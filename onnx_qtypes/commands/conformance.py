"""Run the conformance suite (execution and must-reject cases) on a backend and judge every output.

Backends: reference (the definition), reference-integer (integer kernels),
onnxruntime (default graph optimizations, what users run),
onnxruntime-unoptimized (ORT_DISABLE_ALL, each node as written), openvino,
tract, iree (llvm-cpu; each an optional extra: pip install 'onnx-qtypes[tract]'),
MODULE:CLASS (a Backend class of your own; MODULE is found in the current
directory too, or give a path: my_backend.py:MyBackend) or results:DIR (what a
runtime outside Python wrote: DIR/<case id>/test_data_set_0/output_k.pb, or
DIR/<case id>/error.txt). The contract: conformance_tests/BACKENDS.md.

Exit 1 when a case fails or errors, when no execution case ran (every one
unsupported; refusing must-reject cases computes nothing) or when fewer than
--min-pass execution cases passed; 130 when Ctrl-C stopped the run (the
finished cases are reported). With --known, failures and errors a
known-deviations file explains for this backend and version are still
reported, marked known, but do not set the exit status: --known alone reads
the project's own measurement (conformance_tests/results/deviations.json,
published in proposal/status.md), --known FILE a file of your own (repeat for
several), which --draft-known REPORT.json -o FILE drafts from a run's --report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from onnx_qtypes.proto.errors import QTypesError

PACKAGE_LIST = ""  # --known without FILE
EXIT_INTERRUPTED = 130  # the user's Ctrl-C, as the shell reports a process SIGINT ended (and cli.main does)


class ConformanceUsageError(QTypesError):
    """The conformance command was misused."""


def _positive_int(flag: str, least: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, not {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{flag} must be at least {least}, got {value}")
        return value
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout takes seconds, not {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"--timeout must be a positive number of seconds, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", default="reference", metavar="BACKEND",
                        help="reference | reference-integer | onnxruntime | onnxruntime-unoptimized | openvino | "
                             "tract | iree | MODULE:CLASS | results:DIR (default: reference)")
    parser.add_argument("-k", dest="filter", action="append", metavar="TEXT",
                        help="only cases whose id, operator or a tag value contains TEXT, a substring (repeat: all "
                             "must match); for exact matches use --tags")
    parser.add_argument("--id", dest="ids", action="append", metavar="CASE_ID",
                        help="only the case with this id, exactly (repeat for several)")
    parser.add_argument("--tags", action="append", metavar="KEY=VALUE,...",
                        help="only cases carrying every tag exactly, e.g. storage=uint8,expressed=float32,"
                             "granularity=per-axis (repeat: all must match)")
    parser.add_argument("-j", dest="jobs", type=_positive_int("-j", 1), default=1, metavar="N",
                        help="run N cases at a time (the backend is called from N threads)")
    parser.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                        help="per case: a case still running after SECONDS is an error and the run moves on")
    parser.add_argument("--cases", metavar="DIR", help="folder of cases (default: the installed suite)")
    parser.add_argument("--report", metavar="FILE.json", help="write every case's outcome, tags, time and deviations")
    parser.add_argument("--junit", metavar="FILE.xml", help="write JUnit XML, one testcase per case, with its time")
    parser.add_argument("--save-repro", metavar="DIR",
                        help="write a folder per failing or erroring case: model, inputs, expected and actual "
                             "outputs, worst elements, versions and a script that reproduces it")
    parser.add_argument("--min-pass", type=_positive_int("--min-pass", 0), default=None, metavar="N",
                        help="exit 1 when fewer than N execution cases pass (refusing a must-reject case computes "
                             "nothing and does not count; a run where no case ran fails anyway)")
    parser.add_argument("--known", nargs="?", const=PACKAGE_LIST, default=None, action="append", metavar="FILE",
                        help="failures a known-deviations FILE explains for this backend and version do not set the "
                             "exit status (reports mark them known); without FILE: the project's own measurement; "
                             "repeat for several files")
    parser.add_argument("--draft-known", metavar="REPORT.json",
                        help="draft a known-deviations file from a --report (one entry per failing group) into -o")
    parser.add_argument("-o", dest="output", metavar="FILE", help="where --draft-known writes (a new file)")
    parser.add_argument("--write-template", metavar="FILE.py",
                        help="write a backend template to fill in (conformance_tests/template_backend.py) and stop")
    parser.add_argument("--force", action="store_true",
                        help="let --draft-known -o FILE and --write-template FILE replace a file that exists")
    parser.add_argument("--by", default="operator", metavar="KEY", help="the console table's rows: operator, storage, "
                        "weight_storage, expressed, granularity or kind (default: operator)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print the summary line only")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every failing and erroring case")


def run(args: argparse.Namespace) -> int:
    if args.write_template:
        return _write_template(args.write_template, args.force)
    if args.draft_known is not None or args.output is not None:
        return _draft(args)
    from onnx_qtypes.conformance import backend_version_of, load_backend, load_suite, parse_tags, run_suite
    from onnx_qtypes.conformance.reports import (
        SUMMARY_KEYS,
        suite_info,
        summary_line,
        summary_table,
        write_junit,
        write_report,
    )
    from onnx_qtypes.conformance.backends import ResultsBackend, check_backend
    from onnx_qtypes.conformance.runner import Interrupted
    from onnx_qtypes.conformance.text import clean_text

    if args.by not in SUMMARY_KEYS:
        raise ConformanceUsageError(f"--by {args.by}: use one of {', '.join(SUMMARY_KEYS)}")
    if args.report and args.junit and Path(args.report).resolve() == Path(args.junit).resolve():
        raise ConformanceUsageError("--report and --junit name the same file")
    if args.quiet and args.verbose:
        raise ConformanceUsageError("-q and -v contradict each other; give one")
    known = _load_known(args.known)  # before running: a broken file is exit 2 now, not after an hour
    if args.save_repro:
        _check_writable_folder("--save-repro", args.save_repro)  # likewise: not after the run
    backend = load_backend(args.backend)  # unknown / unavailable backend: BackendError, exit 2
    check_backend(backend, args.backend)  # a member that breaks the contract: exit 2 naming it
    wanted = parse_tags(args.tags)
    suite = load_suite(args.cases)  # unreadable case folders: CaseError, exit 2
    unknown = sorted(set(args.ids or ()) - {c.id for c in suite})
    if unknown:
        raise ConformanceUsageError(f"--id {unknown[0]}: no such case in {args.cases or 'the installed suite'}")
    cases = [c for c in suite if c.matches(args.filter) and c.has_tags(wanted) and (not args.ids or c.id in args.ids)]
    if not cases:
        raise ConformanceUsageError(_nothing_matches(args, suite, wanted))
    name, version = clean_text(backend.name), backend_version_of(backend)
    info = suite_info(suite, args.cases or "")
    bar = _ProgressBar() if _draw_progress() and not args.quiet else None
    started = time.perf_counter()
    interrupted = None
    try:
        results = run_suite(backend, jobs=args.jobs, cases=cases, timeout=args.timeout,
                            progress=bar.update if bar else None)
    except Interrupted as stop:  # the user's Ctrl-C: report what finished, then exit 130
        results, interrupted = stop.results, stop
    finally:
        if bar:
            bar.close()
    seconds = time.perf_counter() - started
    notes = _mark_known(results, known, name, version, suite) if known is not None else []
    stray = backend.stray_folders(c.id for c in suite) if isinstance(backend, ResultsBackend) else []
    if stray:
        notes.insert(0, f"{len(stray)} folder(s) of {backend.folder} name no case of the suite and were not read: "
                        + ", ".join(stray[:5]) + (" ..." if len(stray) > 5 else ""))
    context = {"suite": info, "seconds": seconds, "interrupted": interrupted is not None}
    if args.report:
        write_report(args.report, results, name, version, **context)
    if args.junit:
        write_junit(args.junit, results, name, version, **context)
    if args.save_repro:
        _save_repro(args, results, cases, backend, info)
    if not args.quiet:
        sys.stdout.write(summary_table(results, name, version, by=args.by, suite=info, verbose=args.verbose) + "\n")
    line = summary_line(results, name, version, seconds)
    code, verdicts = _verdict(results, known, args, name, version)
    verdicts += [f"note: {n}" for n in notes[:10]] + ([f"note: ... and {len(notes) - 10} more"] if len(notes) > 10
                                                       else [])
    sys.stdout.write(line + "".join(f"\n{v}" for v in verdicts if not v.startswith("!")) + "\n")
    sys.stdout.flush()
    for v in verdicts:
        if v.startswith("!"):
            print(f"onnx-qtypes: conformance: {v[1:]}", file=sys.stderr)
    if interrupted is not None:
        print(f"onnx-qtypes: conformance: {interrupted} (Ctrl-C); the reports hold those", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code


def _verdict(results: list, known: tuple | None, args: argparse.Namespace, name: str, version: str
             ) -> tuple[int, list[str]]:
    """The exit status and the lines that explain it ("!" first: for stderr)."""
    from onnx_qtypes.conformance.deviations import TODO
    from onnx_qtypes.conformance.judging import ERROR, FAIL
    from onnx_qtypes.conformance.reports import totals

    t = totals(results)
    lines: list[str] = []
    code = 0
    execution = sum(1 for r in results if r.kind == "execution")
    if execution and t["execution_executed"] == 0:
        refused = f" (the {t['reject_refused']} must-reject case(s) it refused compute nothing)" \
            if t["reject_refused"] else ""
        lines.append(f"!no case ran: all {execution} selected execution case(s) were unsupported by {name}{refused}; "
                     "a run that tests nothing fails")
        code = 1
    elif t["executed"] == 0:
        lines.append(f"!no case ran: all {len(results)} selected case(s) were unsupported by {name}; a run that "
                     "tests nothing fails")
        code = 1
    if args.min_pass is not None and t["execution_pass"] < args.min_pass:
        lines.append(f"!{t['execution_pass']} execution case(s) passed, fewer than --min-pass {args.min_pass} "
                     "(must-reject cases do not count)")
        code = 1
    bad = [r for r in results if r.outcome in (FAIL, ERROR)]
    if known is None:
        return (1 if bad else code), lines
    _, source = known
    unknown = [r for r in bad if not r.known]
    label = f"{name} {version}".strip()
    if bad:
        line = (f"{len(bad) - len(unknown)} of {len(bad)} failing or erroring case(s) are known deviations of "
                f"{label} {source}")
        if unknown:
            more = " ..." if len(unknown) > 10 else ""
            line += f"; {len(unknown)} are not: " + ", ".join(r.id for r in unknown[:10]) + more
        lines.append(line)
    todo = len({r.known["entry"] for r in bad if r.known and r.known["reason"].startswith(TODO)})
    if todo:
        lines.append(f"{todo} matching entr{'y' if todo == 1 else 'ies'} still give a TODO reason")
    return (1 if unknown else code), lines


def _load_known(values: list[str] | None) -> tuple | None:
    """Every entry of the --known files (each given once), and how the output names where they come from."""
    from onnx_qtypes.conformance.deviations import load_deviations, load_known

    if not values:
        return None
    deviations, sources, seen = [], [], set()
    for value in values:
        key = value if value == PACKAGE_LIST else os.path.realpath(value)
        if key in seen:
            continue
        seen.add(key)
        if value == PACKAGE_LIST:
            deviations += load_deviations()
            sources.append("in the project's own measurement (conformance_tests/results/deviations.json, "
                           "published in proposal/status.md)")
        else:
            deviations += load_known(value)
            sources.append(f"listed in {value}")
    return deviations, " or ".join(sources)


def _mark_known(results: list, known: tuple, name: str, version: str, suite: list) -> list[str]:
    """Mark each failing or erroring result an entry explains (its first matching entry); notes on the entries
    for this backend and version that explain nothing."""
    from onnx_qtypes.conformance.deviations import stale_entries
    from onnx_qtypes.conformance.judging import ERROR, FAIL

    deviations, _ = known
    used = []
    for r in results:
        if r.outcome not in (FAIL, ERROR):
            continue
        hit = next((d for d in deviations if d.matches(name, version, r.id, r.outcome, r.message)), None)
        if hit is not None:
            r.known = {"entry": hit.where, "reason": hit.explanation}
            used.append(hit)
    return stale_entries(deviations, name, version, (c.id for c in suite), (r.id for r in results), used)


def _nothing_matches(args: argparse.Namespace, suite: list, wanted: dict) -> str:
    where = args.cases or "the installed suite"
    if not suite:
        return f"no execution or reject cases in {where}"
    missing = [k for k in wanted if not any(k in c.tags or k in ("operator", "kind") for c in suite)]
    if missing:
        known = sorted({k for c in suite for k in c.tags} | {"operator", "kind"})
        return f"--tags: no case in {where} has a tag {missing[0]!r} (tags: {', '.join(known)})"
    how = [f"-k {' '.join(args.filter)}"] if args.filter else []
    how += [f"--tags {','.join(f'{k}={v}' for k, v in wanted.items())}"] if wanted else []
    return f"no cases in {where} match {' and '.join(how)}"


def _check_writable_folder(flag: str, path: str) -> None:
    """ConformanceUsageError unless ``path`` is a folder, or can be made one, that this process may write into."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise ConformanceUsageError(f"{flag} {path}: exists and is not a folder")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConformanceUsageError(f"{flag} {path}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConformanceUsageError(f"{flag} {path}: cannot write into {existing}")


def _save_repro(args: argparse.Namespace, results: list, cases: list, backend: object, info: dict) -> None:
    from onnx_qtypes.conformance.judging import ERROR, FAIL
    from onnx_qtypes.conformance.repro import save_bundle

    by_id = {c.id: c for c in cases}
    root = os.path.abspath(args.cases) if args.cases else None
    for r in results:
        if r.outcome in (FAIL, ERROR):
            save_bundle(args.save_repro, r, by_id[r.id], backend, args.backend, suite=info, suite_root=root)


def _write_template(target: str, force: bool = False) -> int:
    from onnx_qtypes.conformance import template_backend
    from onnx_qtypes.proto.files import atomic_write

    if os.path.exists(target) and not force:
        raise ConformanceUsageError(f"--write-template {target}: exists already; give a new file name (or --force)")
    text = Path(template_backend.__file__).read_text(encoding="utf-8")
    with atomic_write(target, "w") as fh:
        fh.write(text)
    module = Path(target).stem
    print(f"{target}: fill in prepare() and run(), then: onnx-qtypes conformance --backend {module}:MyBackend "
          "--id relu-int8-float32-per-tensor")
    return 0


def _draft(args: argparse.Namespace) -> int:
    from onnx_qtypes.conformance.deviations import StatusError, draft_known
    from onnx_qtypes.proto.files import atomic_write

    if args.draft_known is None or not args.output:
        raise ConformanceUsageError("--draft-known REPORT.json and -o FILE go together")
    if os.path.exists(args.output) and not args.force:  # a hand-written known file is never replaced by a draft
        raise ConformanceUsageError(f"-o {args.output}: exists already; give a new file name, or --force to replace it")
    path = args.draft_known
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StatusError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise StatusError(f"{path}: not a readable JSON report ({exc})") from None
    cases = report.get("cases") if isinstance(report, dict) else None
    if (not isinstance(report, dict) or not isinstance(report.get("backend"), dict) or not isinstance(cases, list)
            or not all(isinstance(c, dict) and isinstance(c.get("id"), str) and "outcome" in c for c in cases)):
        raise StatusError(f"{path}: not a report of `onnx-qtypes conformance --report` (needs 'backend' and 'cases' "
                          "with 'id' and 'outcome')")
    draft = draft_known(report, os.path.basename(path))
    with atomic_write(args.output, "w") as fh:
        fh.write(json.dumps(draft, indent=2) + "\n")
    failing = sum(len(e["cases"]) for e in draft["deviations"])
    print(f"{args.output}: {len(draft['deviations'])} entr{'y' if len(draft['deviations']) == 1 else 'ies'} for "
          f"{failing} failing or erroring case(s); write each reason, then run with --known {args.output}")
    return 0


def _draw_progress() -> bool:
    """A progress bar only on a terminal: never into a CI log or a file."""
    return sys.stderr.isatty() and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"


class _ProgressBar:
    def __init__(self) -> None:
        self.counts = {"pass": 0, "fail": 0, "unsupported": 0, "error": 0}
        self.width = max(40, min(120, shutil.get_terminal_size((80, 20)).columns - 1))

    def update(self, done: int, total: int, result: object) -> None:
        outcome = getattr(result, "outcome", "")
        if outcome in self.counts:
            self.counts[outcome] += 1
        c = self.counts
        tail = f" {done}/{total} pass {c['pass']} fail {c['fail']} unsup {c['unsupported']} error {c['error']}"
        room = max(10, self.width - len(tail) - 2)
        filled = room * done // max(total, 1)
        sys.stderr.write("\r[" + "#" * filled + "." * (room - filled) + "]" + tail)
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\r" + " " * self.width + "\r")
        sys.stderr.flush()
