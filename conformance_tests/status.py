"""Published conformance results: one record per backend and version, and the page that shows them.

A *record* (``conformance_tests/results/<backend>-<version>.json``) is what one run of the whole suite on one
backend gave: every case's outcome, and for the others than pass its deviation in steps and message, with the
suite's digest (so a record of an older suite shows as stale) and the command that produced it. *Known
deviations* (``conformance_tests/results/deviations.json``) explain failures and errors as data keyed by vendor,
backend and version: case-id patterns, a kind (rounding mode, fused-kernel arithmetic, ...), an explanation,
the evidence and a minimal reproduction case. ``render`` turns records, deviations and the fused-kernel records
of ``vendor_results/`` into ``proposal/status.md``; a new vendor release shows up there as a changed table and
as failures no deviation explains yet.

Run ``python conformance_tests/publish_status.py`` to record every installed backend and regenerate the page.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .deviations import (  # noqa: F401 (re-exported)
    DEVIATIONS,
    KINDS,
    Deviation,
    StatusError,
    explain,
    load_deviations,
    normalize_message,
)
from .execution_cases import (
    CASES_ROOT,
    DATA_SET,
    EXECUTION,
    REJECT,
    REJECT_ROOT,
    Case,
    ExecutionCase,
    RejectCase,
    iter_cases,
    load_cases,
)
from .judging import ERROR, FAIL, OUTCOMES, PASS, UNSUPPORTED, steps_text
from .runner import CaseResult, _rank

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
VENDOR_RESULTS = HERE / "vendor_results"
PAGE = HERE.parent / "proposal" / "status.md"
COMMAND = "python conformance_tests/publish_status.py"
FORMAT = 1



def _steps(value: object) -> float:
    """A record's max_steps as a number (the runner's reading: "inf" is how JSON keeps NaN against a number);
    none recorded (an error, a shape mismatch) counts 0 here, where only the worst measured distance is shown."""
    return 0.0 if value is None else _rank(value)


def suite_digest(cases: Sequence[ExecutionCase]) -> str:
    """sha256 over every case's case.json, models and test data: a record of another suite is stale."""
    h = hashlib.sha256()
    for case in sorted(cases, key=lambda c: c.id):
        h.update(case.id.encode() + b"\0")
        files = [case.folder / "case.json", case.model_path, *sorted((case.folder / DATA_SET).glob("*.pb"))]
        if case.qdq_model_path is not None:
            files.append(case.qdq_model_path)
        for path in files:
            h.update(path.name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    return h.hexdigest()


def record(results: Sequence[CaseResult], backend: str, version: str, cases: Sequence[Case],
           command: str = COMMAND) -> dict[str, Any]:
    """The record of one run of the whole suite (``results``) on one backend: the execution cases' outcomes, and
    apart under ``reject`` the must-reject cases' (so the execution summary stays what it was)."""
    execution = [c for c in cases if c.kind == EXECUTION]
    reject = [c for c in cases if c.kind == REJECT]
    kind = {c.id: c.kind for c in cases}
    mine = [r for r in results if kind.get(r.id, r.kind) == EXECUTION]
    return {
        "format": FORMAT, "backend": backend, "version": version,
        "command": f"{command} --backend {backend}",
        "environment": {"python": platform.python_version(), "machine": platform.machine(), "system": platform.system(),
                        "cpu_flags": cpu_flags()},
        "suite": {"cases": len(execution), "digest": suite_digest(execution)},
        **_outcomes(mine),
        "reject": {"cases": len(reject), "digest": suite_digest(reject),
                   **_outcomes([r for r in results if kind.get(r.id, r.kind) == REJECT])},
    }


def _outcomes(results: Sequence[CaseResult]) -> dict[str, Any]:
    outcomes = {r.id: r.outcome for r in sorted(results, key=lambda r: r.id)}
    details = {r.id: {"max_steps": r.to_json()["max_steps"], "elements": r.elements, "message": r.message}
               for r in sorted(results, key=lambda r: r.id) if r.outcome != PASS}
    totals = Counter(outcomes.values())
    return {"summary": {o: totals[o] for o in OUTCOMES}, "outcomes": outcomes, "details": details}


# instruction-set extensions vendors' CPU kernels dispatch on (OpenVINO defaults to bf16 inference on AMX / AVX512-BF16)
_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_int8", "amx_fp16",
          "f16c", "fma", "sse4_1")


def cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    match = re.search(r"^flags\s*:(.*)$", text, re.M)
    return sorted(set(match.group(1).split()) & set(_FLAGS)) if match else []


def record_path(folder: Path, backend: str, version: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", version.split("-")[0] if backend == "openvino" else version)
    return folder / f"{backend}-{safe}.json"


def load_records(folder: Path = RESULTS) -> list[dict[str, Any]]:
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name == DEVIATIONS.name:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StatusError(f"{path}: not a readable record ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("outcomes"), dict):
            raise StatusError(f"{path}: not a format-{FORMAT} results record")
        data["_path"] = path.name
        out.append(data)
    return out


_BACKEND_ORDER = ("reference", "reference-integer", "onnxruntime", "onnxruntime-unoptimized", "openvino", "tract",
                  "iree")


def _order(rec: dict[str, Any]) -> tuple:
    name = rec["backend"]
    return (_BACKEND_ORDER.index(name) if name in _BACKEND_ORDER else len(_BACKEND_ORDER), name,
            [int(p) if p.isdigit() else p for p in re.split(r"[.-]", rec["version"])])


def _label(rec: dict[str, Any]) -> str:
    version = rec["version"].split("-")[0] if rec["backend"] == "openvino" else rec["version"]
    return f"{rec['backend']} {version}".strip()


def _cell(counts: Counter) -> str:
    parts = [f"{counts[PASS]}"]
    if counts[FAIL]:
        parts.append(f"**{counts[FAIL]} fail**")
    if counts[ERROR]:
        parts.append(f"{counts[ERROR]} error")
    if counts[UNSUPPORTED]:
        parts.append(f"{counts[UNSUPPORTED]} unsup.")
    return " · ".join(parts)


def _ids(ids: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def render(cases: Sequence[ExecutionCase], records: Sequence[dict[str, Any]], deviations: Sequence[Deviation],
           vendor_records: Sequence[dict[str, Any]] = (), reject_cases: Sequence[RejectCase] = ()) -> str:
    """proposal/status.md from the suite, the records, the known deviations and the fused-kernel records."""
    digest = suite_digest(cases)
    records = sorted(records, key=_order)
    operator = {c.id: c.operator for c in cases}
    typed_only = sum(1 for c in cases if c.qdq_model_path is None)
    out = [
        "# Conformance status",
        "",
        f"<!-- generated by `{COMMAND}` from conformance_tests/results/; do not edit -->",
        "",
        f"The suite: {len(cases)} execution cases in `conformance_tests/cases/execution/` ({typed_only} of them "
        "typed-only: standard ONNX cannot express them, see the `qdq_unavailable` reasons below), run on each "
        "backend by `onnx-qtypes conformance --backend NAME`. A case passes when every output is within its "
        "tolerance in storage steps, its class in the table of proposal/spec/semantics.md §8: 0 where the "
        "operator's class is exact, 1 where it computes a new value or quantizes a float input (there for the "
        "near ties of semantics.md §2), and along a chain what the chain rule carries "
        "(`conformance_tests/tolerance.py`; `tolerance_reason` in each `case.json` says why); a value the "
        "definition leaves open (the scale DynamicQuantizeLinear picks for an all-zero input) passes as any "
        "positive finite value (`judge` in `case.json`). Vendor runtimes run `model.qdq.onnx`, the standard-ONNX form; the reference "
        "backends run the typed `model.onnx`.",
        "",
        "## Summary",
        "",
        "| backend | version | pass | fail | unsupported | error | recorded with |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for rec in records:
        s = rec["summary"]
        stale = "" if rec["suite"]["digest"] == digest else " (stale: recorded on another version of the suite)"
        version = rec["version"].split("-")[0] if rec["backend"] == "openvino" else rec["version"]
        out.append(f"| {rec['backend']} | {version}{stale} | {s[PASS]} | {s[FAIL]} | {s[UNSUPPORTED]} | {s[ERROR]} "
                   f"| `{rec['command']}` |")
    from onnx_qtypes.reference_ops.ops import KERNELS

    out += ["", "## By operator", "",
            "Every operator's definition is the dequantize → operator → quantize path (`reference`, "
            "proposal/spec/semantics.md); *integer kernel* names the integer-only kernel in `reference_ops/ops/` "
            "(`reference-integer`), where there is one. Cells: cases passed · failed · erroring · unsupported.", "",
            "| operator | integer kernel | cases | " + " | ".join(_label(r) for r in records) + " |",
            "|---|---|---:|" + "---|" * len(records)]
    by_op: dict[str, list[str]] = defaultdict(list)
    for c in cases:
        by_op[c.operator].append(c.id)
    for op in sorted(by_op):
        cells = []
        for rec in records:
            cells.append(_cell(Counter(rec["outcomes"].get(i, "missing") for i in by_op[op])))
        kernel = f"`{KERNELS[op]}.py`" if op in KERNELS else "—"
        out.append(f"| {op} | {kernel} | {len(by_op[op])} | " + " | ".join(cells) + " |")
    out += ["", "## Deviations, per vendor and version", "",
            "Every failing or erroring case of a vendor backend, grouped by cause. The causes are data "
            "(`conformance_tests/results/deviations.json`, keyed by backend and version); each names the smallest "
            "case that shows it — rerun it with the command given.", ""]
    for rec in records:
        explained, unexplained = explain(rec, deviations)
        if not explained and not unexplained:
            continue
        out += [f"### {_label(rec)}", ""]
        for dev, ids in sorted(explained.items(), key=lambda kv: (-len(kv[1]), kv[0].kind)):
            details = rec["details"].get(dev.reproduction, {})
            worst = max((_steps(rec["details"].get(i, {}).get("max_steps")) for i in ids), default=0)
            reach = "" if not worst else ", some infinitely far (NaN or ±inf)" if worst == math.inf \
                else f", up to {steps_text(worst)} step(s)"
            out += [f"- **{dev.kind}** — {len(ids)} case(s)" + reach + ". "
                    + dev.explanation,
                    f"  - Reproduce: `onnx-qtypes conformance --backend {rec['backend']} -k {dev.reproduction}`"
                    + (f" → {details['message']}" if details.get("message") else ""),
                    *([f"  - Without the suite: `python {dev.script}` (exits 1 while the deviation is there)"]
                      if dev.script else []),
                    f"  - Evidence: {dev.evidence}",
                    f"  - Cases: {_ids(sorted(ids))}"]
        if unexplained:
            out += [f"- **not yet explained** — {len(unexplained)} case(s): {_ids(sorted(unexplained))}"]
        out.append("")
    out += reject_section(reject_cases, records)
    out += coverage_section(cases)
    out += ["## Why cases are unsupported", ""]
    reasons: dict[tuple[str, str], list[str]] = defaultdict(list)
    for rec in records:
        for case_id, outcome in rec["outcomes"].items():
            if outcome == UNSUPPORTED:
                message = rec["details"].get(case_id, {}).get("message", "")
                reasons[(_label(rec), normalize_message(message))].append(case_id)
    if not reasons:
        out.append("No backend called a case unsupported.")
    for (label, key), ids in sorted(reasons.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        out.append(f"- {label}, {len(ids)} case(s): {key}")
    out.append("")
    if vendor_records:
        out += ["## Fused kernels on whole models", "",
                "Beyond single cases, `conformance_tests/vendor_results/` records what onnxruntime's optimized "
                "sessions compute on small models where they fuse Q/DQ pairs into integer kernels (`python "
                "conformance_tests/vendor_results/record_onnxruntime.py`). Maximum deviation from the definition "
                "in output steps, optimized / unoptimized session:", "",
                "| reproduction | " + " | ".join(f"{v['vendor']} {v['version']}" for v in vendor_records) + " |",
                "|---|" + "---:|" * len(vendor_records)]
        ids = sorted({d["id"] for v in vendor_records for d in v.get("deviations", [])})
        for dev_id in ids:
            cells = []
            for v in vendor_records:
                entry = next((d for d in v.get("deviations", []) if d["id"] == dev_id), None)
                cells.append("—" if entry is None else str(_max_steps(entry)))
            out.append(f"| `{dev_id}` | " + " | ".join(cells) + " |")
        out.append("")
    missing = [c for rec in records for c in rec["outcomes"] if c not in operator]
    if missing:
        out += [f"Records name {len(missing)} case(s) the suite no longer has; rerun `{COMMAND}`.", ""]
    return "\n".join(out).rstrip() + "\n"


_REJECT_CELL = {PASS: "refused", FAIL: "**ran it**", UNSUPPORTED: "unsup.", ERROR: "error"}


def reject_section(cases: Sequence[RejectCase], records: Sequence[dict[str, Any]]) -> list[str]:
    """The must-reject cases: per backend how many it refused, and per case what each backend did."""
    if not cases:
        return []
    digest = suite_digest(cases)
    records = sorted(records, key=_order)
    out = ["## Must-reject cases", "",
           f"{len(cases)} typed models in `conformance_tests/cases/reject/` that a reader must refuse (each breaks "
           "the validity rule named beside it). A backend passes one only by refusing it: raising from `prepare` or "
           "`run`, or an `error.txt` in a results folder; running it and returning outputs fails it. A runtime "
           "without the extension refuses them all (the fail-closed markers), so these show what a reader of typed "
           "models checks, and count apart from the execution cases (`--min-pass` counts execution cases only).",
           "", "| backend | version | refused | ran it | unsupported | error |", "|---|---|---:|---:|---:|---:|"]
    for rec in records:
        part = rec.get("reject")
        if not part:
            out.append(f"| {rec['backend']} | {_label(rec).split(' ', 1)[-1]} | — | — | — | — |")
            continue
        s = part["summary"]
        stale = "" if part.get("digest") == digest else " (stale)"
        out.append(f"| {rec['backend']} | {_label(rec).split(' ', 1)[-1]}{stale} | {s[PASS]} | {s[FAIL]} | "
                   f"{s[UNSUPPORTED]} | {s[ERROR]} |")
    out += ["", "| case | rule | " + " | ".join(_label(r) for r in records) + " |",
            "|---|---|" + "---|" * len(records)]
    for case in sorted(cases, key=lambda c: c.id):
        cells = [_REJECT_CELL.get((rec.get("reject") or {}).get("outcomes", {}).get(case.id), "—") for rec in records]
        out.append(f"| `{case.id}` | {case.rule} | " + " | ".join(cells) + " |")
    return out + [""]


def coverage_section(cases: Sequence[ExecutionCase]) -> list[str]:
    """The coverage matrix: every value of every field of QuantizedType (coverage.REQUIRED) with the number of
    cases that hold it; a value no case holds is marked."""
    from onnx_qtypes.proto import load

    from .coverage import case_features, matrix, missing

    counts = matrix((c.id, case_features(load(str(c.model_path)), c.feeds())) for c in cases)
    out = ["## What the cases cover", "",
           "Every value of every field of `QuantizedType`, with the number of execution cases whose typed model "
           "(or inputs) holds it (`conformance_tests/coverage.py`; a test fails when a value has none). "
           "`tests/test_conformance_mutations.py` runs the definition with each feature broken and requires a "
           "case to fail.", "",
           "| field | values (cases) |", "|---|---|"]
    for field, values in counts.items():
        cells = " · ".join(f"{v} {n}" if n else f"{v} **0**" for v, n in values.items())
        out.append(f"| {field} | {cells} |")
    absent = missing(counts)
    out += ["", f"Values without a case: {', '.join(f'{f} = {v}' for f, v in absent)}." if absent
            else "Every value has a case.", ""]
    return out


def _max_steps(entry: dict[str, Any]) -> str:
    """'optimized / unoptimized' steps of one fused-kernel record ('0' where both agree)."""
    steps = entry.get("max_steps", {})
    opt, unopt = steps.get("optimized"), steps.get("unoptimized")
    fmt = (lambda v: "?" if v is None else f"{v:.0f}" if abs(v) < 1e6 else f"{v:.3g}")
    return f"{fmt(opt)} / {fmt(unopt)}"


def load_vendor_records(folder: Path = VENDOR_RESULTS) -> list[dict[str, Any]]:
    out = []
    for path in sorted(folder.glob("*.json")):
        out.append(json.loads(path.read_text(encoding="utf-8")))
    return sorted(out, key=lambda v: (v.get("vendor", ""), [int(p) if p.isdigit() else p
                                                            for p in str(v.get("version", "")).split(".")]))


def render_page(cases_root: Path | None = None, results: Path = RESULTS, deviations: Path = DEVIATIONS) -> str:
    cases = load_cases(cases_root if cases_root is not None else CASES_ROOT)
    reject = list(iter_cases(REJECT_ROOT, kinds=(REJECT,))) if cases_root is None else []
    return render(cases, load_records(results), load_deviations(deviations), load_vendor_records(), reject)
