"""The JSON report of DESIGN.md: model, profile, diagnostics, summary."""

from __future__ import annotations

import json
from typing import Any

from onnx_qtypes.checker.emit import Report


def document(report: Report) -> dict[str, Any]:
    return {
        "model": report.model,
        "profile": report.profile,
        "diagnostics": [d.to_dict() for d in report.diagnostics],
        "summary": {"errors": report.errors, "warnings": report.warnings},
    }


def render(report: Report) -> str:
    return json.dumps(document(report), indent=2) + "\n"
