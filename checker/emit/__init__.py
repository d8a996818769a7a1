"""Report emitters: text (one line per finding), json (DESIGN.md) and sarif (SARIF 2.1.0)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from onnx_qtypes.checker.diagnostics import Diagnostic, Severity


@dataclasses.dataclass(frozen=True)
class Report:
    """One checker run: the model as named by the user, the profile and every finding."""

    model: str
    profile: str
    diagnostics: tuple[Diagnostic, ...]
    notes: tuple[str, ...] = ()  # what the reader should know besides the findings (what was not checked)

    @property
    def errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity is Severity.WARNING for d in self.diagnostics)


def as_list(reports: Report | Sequence[Report]) -> list[Report]:
    return [reports] if isinstance(reports, Report) else list(reports)


def _formats() -> dict[str, Callable[[list[Report]], str]]:
    from onnx_qtypes.checker.emit import json, sarif, text

    return {"text": text.render, "json": json.render, "sarif": sarif.render}


FORMAT_NAMES = ("text", "json", "sarif")


def render(reports: Report | Sequence[Report], fmt: str) -> str:
    """One report, or several (one per model checked in one call), in format ``fmt`` (text, json or sarif),
    ending with a newline."""
    return _formats()[fmt](as_list(reports))
