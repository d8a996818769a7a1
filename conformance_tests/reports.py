"""What a run prints and writes: the summary table by operator, the JSON report and JUnit XML."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from onnx_qtypes.proto.files import atomic_write

from .judging import ERROR, FAIL, OUTCOMES, PASS, UNSUPPORTED
from .runner import CaseResult


def summary_table(results: Sequence[CaseResult], backend_name: str = "", version: str = "") -> str:
    by_op: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        by_op[r.operator][r.outcome] += 1
    header = ("operator", *OUTCOMES)
    rows = [(op, *(str(by_op[op][o]) for o in OUTCOMES)) for op in sorted(by_op)]
    totals = Counter(r.outcome for r in results)
    rows.append(("total", *(str(totals[o]) for o in OUTCOMES)))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def fmt(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    lines = []
    if backend_name:
        lines.append(f"backend: {backend_name}" + (f" {version}" if version else ""))
    lines += [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows[:-1]), fmt(["-" * w for w in widths]), fmt(rows[-1])]
    problems = [r for r in results if r.outcome in (FAIL, ERROR)]
    if problems:
        lines.append("")
        lines += [f"{r.outcome.upper()} {r.id}: {_short(r.message)}" for r in problems]
    return "\n".join(lines) + "\n"


def _short(message: str, limit: int = 300) -> str:
    """A runtime's message cut for the terminal (the JSON and JUnit reports keep all of it)."""
    return message if len(message) <= limit else message[:limit - 1] + "…"


def report_json(results: Sequence[CaseResult], backend_name: str, version: str) -> dict[str, Any]:
    totals = Counter(r.outcome for r in results)
    return {"backend": {"name": backend_name, "version": version},
            "summary": {o: totals[o] for o in OUTCOMES},
            "cases": [r.to_json() for r in results]}


def write_report(path: str | os.PathLike, results: Sequence[CaseResult], backend_name: str, version: str) -> None:
    text = json.dumps(report_json(results, backend_name, version), indent=2, allow_nan=False, default=_jsonable) + "\n"
    with atomic_write(path, "w") as fh:
        fh.write(text)


def _jsonable(value: Any) -> Any:
    return str(value)


def junit_xml(results: Sequence[CaseResult], backend_name: str, version: str) -> bytes:
    totals = Counter(r.outcome for r in results)
    suite = ET.Element("testsuite", {
        "name": f"onnx-qtypes conformance ({backend_name})", "tests": str(len(results)),
        "failures": str(totals[FAIL]), "errors": str(totals[ERROR]), "skipped": str(totals[UNSUPPORTED])})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "backend", "value": backend_name})
    ET.SubElement(props, "property", {"name": "backend_version", "value": version})
    for r in results:
        case = ET.SubElement(suite, "testcase", {"classname": f"conformance.{r.operator}", "name": r.id})
        if r.outcome == FAIL:
            ET.SubElement(case, "failure", {"message": _clean(r.message)}).text = _clean(
                f"max deviation {r.max_steps} step(s), {r.elements} element(s) beyond tolerance: {r.message}")
        elif r.outcome == ERROR:
            ET.SubElement(case, "error", {"message": _clean(r.message)})
        elif r.outcome == UNSUPPORTED:
            ET.SubElement(case, "skipped", {"message": _clean(r.message)})
        elif r.outcome != PASS:  # pragma: no cover - OUTCOMES is closed
            raise AssertionError(r.outcome)
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _clean(text: str) -> str:
    """XML 1.0 cannot carry most control characters: drop them."""
    return "".join(ch for ch in str(text) if ch in "\t\n\r" or ord(ch) >= 0x20)


def write_junit(path: str | os.PathLike, results: Sequence[CaseResult], backend_name: str, version: str) -> None:
    data = junit_xml(results, backend_name, version)
    with atomic_write(path, "wb") as fh:
        fh.write(data)
