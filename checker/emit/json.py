"""The JSON report of DESIGN.md: model, profile, diagnostics, notes, summary (one object per call)."""

from __future__ import annotations

import json
from typing import Any

from onnx_qtypes.checker.emit import Report, as_list


def document(report: Report) -> dict[str, Any]:
    return {
        "model": report.model,
        "profile": report.profile,
        "diagnostics": [d.to_dict() for d in report.diagnostics],
        "notes": list(report.notes),
        "summary": {"errors": report.errors, "warnings": report.warnings},
    }


def render(reports: Report | list[Report]) -> str:
    reports = as_list(reports)
    """One model: its object. Several: ``{"reports": [...], "summary": {...}}``, the summary over all."""
    if len(reports) == 1:
        return json.dumps(document(reports[0]), indent=2) + "\n"
    summary = {"models": len(reports), "errors": sum(r.errors for r in reports),
               "warnings": sum(r.warnings for r in reports)}
    return json.dumps({"reports": [document(r) for r in reports], "summary": summary}, indent=2) + "\n"
