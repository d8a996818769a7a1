"""What a run prints and writes: the console summary, the JSON report and JUnit XML.

Both files describe themselves: the suite (package version and digest of the cases run from), the platform,
the runtime and its version; each case's tags, tolerance, time and worst deviating elements; and summaries by
operator, storage, weight storage, expressed type, granularity, case kind, why cases were unsupported
(the runtime declined / the suite has no model in the form it runs) and normalized error message.
"""

from __future__ import annotations

import json
import os
import platform
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from onnx_qtypes.proto.files import atomic_write

from .deviations import normalize_message
from .judging import ERROR, FAIL, OUTCOMES, PASS, UNSUPPORTED, steps_text
from .runner import DECLINED, NOT_EXPRESSIBLE, REFUSED, TIMEOUT, CaseResult
from .text import clean_text

REPORT_FORMAT = 2
SUMMARY_KEYS = ("operator", "storage", "weight_storage", "expressed", "granularity", "kind")
PROBLEM_LINES = 40  # failing / erroring cases listed on the console before "... and N more"


def suite_info(cases: Sequence[Any], root: str = "") -> dict[str, Any]:
    """The suite a run used: package version, digest of every case it loaded, how many cases, where from."""
    from onnx_qtypes import __version__

    from .status import suite_digest

    return {"package": "onnx-qtypes", "version": __version__, "digest": suite_digest(cases), "cases": len(cases),
            "root": str(root)}


def environment() -> dict[str, str]:
    return {"platform": platform.platform(), "python": platform.python_version(), "machine": platform.machine()}


def group_key(result: CaseResult, key: str) -> str:
    """The value a summary by ``key`` files a result under ("—" when the case has no such tag)."""
    if key == "operator":
        return result.operator or f"({result.kind})"
    if key == "kind":
        return result.kind
    value = result.tags.get(key)
    if value is None:
        return "—"
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def summary_by(results: Sequence[CaseResult], key: str) -> dict[str, dict[str, int]]:
    table: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        table[group_key(r, key)][r.outcome] += 1
    return {value: {o: counts[o] for o in OUTCOMES} for value, counts in sorted(table.items())}


def message_groups(results: Sequence[CaseResult], outcomes: Sequence[str] = (FAIL, ERROR)) -> list[dict[str, Any]]:
    """Failing / erroring cases grouped by outcome and normalized message, largest group first."""
    groups: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for r in results:
        if r.outcome in outcomes:
            groups[(r.outcome, normalize_message(r.message))].append(r)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [{"outcome": outcome, "message": pattern, "count": len(members),
             "operators": sorted({group_key(m, "operator") for m in members}), "example": members[0].id}
            for (outcome, pattern), members in ordered]


def totals(results: Sequence[CaseResult]) -> dict[str, Any]:
    counts = Counter(r.outcome for r in results)
    unsupported = Counter(r.reason_class for r in results if r.outcome == UNSUPPORTED)
    return {**{o: counts[o] for o in OUTCOMES},
            "unsupported_declined": unsupported[DECLINED],  # the runtime said no
            "unsupported_not_expressible": unsupported[NOT_EXPRESSIBLE],  # the suite has no model in its form
            "timed_out": sum(1 for r in results if r.reason_class == TIMEOUT),
            "reject_refused": sum(1 for r in results if r.kind == "reject" and r.reason_class == REFUSED),
            "reject_ran": sum(1 for r in results if r.kind == "reject" and r.outcome == FAIL),
            "known": sum(1 for r in results if r.known and r.outcome in (FAIL, ERROR)),  # explained by --known
            "executed": counts[PASS] + counts[FAIL] + counts[ERROR],
            # what computed something: a must-reject case passes by refusing, which a runtime refusing every typed
            # model does too, so --min-pass and "no case ran" count execution cases
            "execution_pass": sum(1 for r in results if r.kind == "execution" and r.outcome == PASS),
            "execution_executed": sum(1 for r in results if r.kind == "execution" and r.outcome != UNSUPPORTED)}


def summary_line(results: Sequence[CaseResult], backend_name: str, version: str, seconds: float | None = None) -> str:
    t = totals(results)
    parts = [f"{t[PASS]} pass", f"{t[FAIL]} fail"]
    unsupported = f"{t[UNSUPPORTED]} unsupported"
    if t[UNSUPPORTED]:
        unsupported += (f" ({t['unsupported_declined']} declined by the runtime, "
                        f"{t['unsupported_not_expressible']} without a model in the form it runs)")
    parts += [unsupported, f"{t[ERROR]} error" + (f" ({t['timed_out']} timed out)" if t["timed_out"] else "")]
    if t["known"]:
        parts[-1] += f"; {t['known']} of the failing and erroring are known deviations"
    label = f"{backend_name} {version}".strip()
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return f"{label}: {len(results)} case(s): " + ", ".join(parts) + took


def _table(header: Sequence[str], rows: list[Sequence[str]], total: Sequence[str]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows, total]) for i in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    rule = fmt(["-" * w for w in widths])
    return [fmt(header), rule, *map(fmt, rows), rule, fmt(total)]


def summary_table(results: Sequence[CaseResult], backend_name: str = "", version: str = "", *, by: str = "operator",
                  suite: Mapping[str, Any] | None = None, verbose: bool = False) -> str:
    """The console summary: a table by ``by`` (operator or a tag), the failing groups by message, the failing and
    erroring cases (the first PROBLEM_LINES unless ``verbose``)."""
    lines = []
    if backend_name:
        lines.append(f"backend: {backend_name}" + (f" {version}" if version else ""))
    if suite:
        lines.append(f"suite: onnx-qtypes {suite['version']}, {suite['cases']} case(s), digest {suite['digest'][:12]}")
    table = summary_by(results, by)
    rows = [(value, *(str(counts[o]) for o in OUTCOMES)) for value, counts in table.items()]
    counts = Counter(r.outcome for r in results)
    lines += _table((by, *OUTCOMES), rows, ("total", *(str(counts[o]) for o in OUTCOMES)))
    groups = message_groups(results)
    if len(groups) > 1 or (groups and groups[0]["count"] > 1):
        lines += ["", "failing and erroring cases by message (names and numbers taken out):"]
        for g in groups[:PROBLEM_LINES // 2]:
            lines.append(f"  {g['count']:>5} {g['outcome']:<5} {_short(g['message'], 160)}  (e.g. {g['example']})")
        if len(groups) > PROBLEM_LINES // 2:
            lines.append(f"  ... and {len(groups) - PROBLEM_LINES // 2} more group(s): see --report")
    problems = [r for r in results if r.outcome in (FAIL, ERROR)]
    if problems:
        lines.append("")
        shown = problems if verbose else problems[:PROBLEM_LINES]
        lines += [f"{r.outcome.upper()}{' (known)' if r.known else ''} {r.id}: {_short(r.message)}" for r in shown]
        if len(shown) < len(problems):
            lines.append(f"... and {len(problems) - len(shown)} more (-v lists them all; --report keeps every message)")
    return "\n".join(lines) + "\n"


def _short(message: str, limit: int = 300) -> str:
    """A runtime's message cut for the terminal (the JSON and JUnit reports keep all of it)."""
    return message if len(message) <= limit else message[:limit - 1] + "…"


def report_json(results: Sequence[CaseResult], backend_name: str, version: str, *,
                suite: Mapping[str, Any] | None = None, seconds: float | None = None,
                interrupted: bool = False) -> dict[str, Any]:
    return {"format": REPORT_FORMAT,
            "suite": dict(suite or {}), "environment": environment(),
            "backend": {"name": backend_name, "version": version},
            "seconds": None if seconds is None else round(seconds, 3),
            "interrupted": interrupted,  # the user stopped the run: ``cases`` holds those that finished
            "summary": totals(results),
            "by": {key: summary_by(results, key) for key in SUMMARY_KEYS},
            "by_message": message_groups(results, (FAIL, ERROR, UNSUPPORTED)),
            "cases": [r.to_json() for r in results]}


def write_report(path: str | os.PathLike, results: Sequence[CaseResult], backend_name: str, version: str,
                 **context: Any) -> None:
    text = json.dumps(report_json(results, backend_name, version, **context), indent=2, allow_nan=False,
                      default=_jsonable) + "\n"
    with atomic_write(path, "w") as fh:
        fh.write(text)


def _jsonable(value: Any) -> Any:
    return str(value)


def junit_xml(results: Sequence[CaseResult], backend_name: str, version: str, *,
              suite: Mapping[str, Any] | None = None, seconds: float | None = None,
              interrupted: bool = False) -> bytes:
    counts = Counter("known" if r.known and r.outcome in (FAIL, ERROR) else r.outcome for r in results)
    total_time = seconds if seconds is not None else sum(r.seconds for r in results)
    testsuite = _element(None, "testsuite", {
        "name": f"onnx-qtypes conformance ({backend_name})", "tests": len(results),
        "failures": counts[FAIL], "errors": counts[ERROR], "skipped": counts[UNSUPPORTED] + counts["known"],
        "time": f"{total_time:.3f}"})
    props = _element(testsuite, "properties")
    info = {"backend": backend_name, "backend_version": version, **environment()}
    for key in ("version", "digest", "cases", "root"):
        if suite and key in suite:
            info[f"suite_{key}"] = suite[key]
    if interrupted:
        info["interrupted"] = "true"
    for name, value in info.items():
        _element(props, "property", {"name": name, "value": value})
    for r in results:
        classname = f"conformance.{r.operator}" if r.operator else f"conformance.{r.kind}"
        case = _element(testsuite, "testcase", {"classname": classname, "name": r.id, "time": f"{r.seconds:.3f}"})
        case_props = _element(case, "properties")
        for key, value in sorted(r.tags.items()):
            _element(case_props, "property", {"name": f"tag.{key}", "value": _text(value)})
        for output, steps in sorted(r.tolerance.items()):
            _element(case_props, "property", {"name": f"tolerance.{output}", "value": steps})
        if r.reason_class:
            _element(case_props, "property", {"name": "reason_class", "value": r.reason_class})
        if r.known and r.outcome in (FAIL, ERROR):  # skipped: what CI systems show as neither red nor passed
            _element(case_props, "property", {"name": "outcome", "value": r.outcome})
            _element(case_props, "property", {"name": "known", "value": r.known.get("entry", "")})
            _element(case, "skipped", {"message": f"known deviation ({r.known.get('entry', '')}): "
                                                  f"{r.known.get('reason', '')}"})
            _element(case, "system-out", text=f"{r.outcome}: {_problem_text(r)}")
        elif r.outcome == FAIL:
            _element(case, "failure", {"message": r.message}, _problem_text(r))
        elif r.outcome == ERROR:
            _element(case, "error", {"message": r.message, "type": r.reason_class or "error"})
        elif r.outcome == UNSUPPORTED:
            _element(case, "skipped", {"message": f"{r.reason_class or 'unsupported'}: {r.message}"})
        elif r.outcome != PASS:  # pragma: no cover - OUTCOMES is closed
            raise AssertionError(r.outcome)
    root = ET.Element("testsuites")
    root.append(testsuite)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _element(parent: ET.Element | None, tag: str, attributes: Mapping[str, Any] | None = None,
             text: str | None = None) -> ET.Element:
    """An XML element whose every attribute value and text passed ``_clean``: nothing a backend says can make the
    file malformed."""
    attrs = {k: _clean(v) for k, v in (attributes or {}).items()}
    element = ET.Element(tag, attrs) if parent is None else ET.SubElement(parent, tag, attrs)
    if text is not None:
        element.text = _clean(text)
    return element


def _max_steps(steps: float | None) -> str:
    return "not measurable" if steps is None else steps_text(steps)


def _problem_text(r: CaseResult) -> str:
    if r.outcome != FAIL:
        return r.message
    return (f"max deviation {_max_steps(r.max_steps)} step(s), {r.elements} element(s) beyond tolerance: {r.message}"
            + "".join(f"\n{_deviation(d)}" for d in r.deviations))


def _text(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _deviation(d: Mapping[str, Any]) -> str:
    value = d.get("steps")  # a number, or "inf" / "nan" as the judge writes them
    steps = "" if value is None else f" ({steps_text(value) if isinstance(value, (int, float)) else value} step(s))"
    return f"{d.get('output')}{d.get('index')}: {d.get('actual')!r}, expected {d.get('expected')!r}{steps}"


def _clean(text: Any) -> str:
    """XML 1.0 cannot carry control characters or lone surrogates: U+FFFD in their place (text.clean_text)."""
    return clean_text(text)


def write_junit(path: str | os.PathLike, results: Sequence[CaseResult], backend_name: str, version: str,
                **context: Any) -> None:
    data = junit_xml(results, backend_name, version, **context)
    with atomic_write(path, "wb") as fh:
        fh.write(data)
