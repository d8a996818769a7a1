"""One line per finding, like a linter: ``MODEL:POINTER: SEVERITY RULE slug: message``."""

from __future__ import annotations

from onnx_qtypes.checker.emit import Report, as_list


def one_line(text: str) -> str:
    """``text`` with control characters escaped: a tensor name holding a newline or a terminal escape must
    not split a finding over two lines or reach the terminal raw."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def render(reports: Report | list[Report]) -> str:
    reports = as_list(reports)
    return "".join(_render(r) for r in reports)


def _render(report: Report) -> str:
    lines = []
    for d in report.diagnostics:
        where = d.location.describe()
        subject = f"{where}: " if where else ""
        lines.append(one_line(f"{report.model}:{d.location.pointer}: {d.severity.value} {d.rule} {d.name}: "
                              f"{subject}{d.message}"))
    lines.extend(one_line(f"{report.model}: note: {note}") for note in report.notes)
    if report.diagnostics:
        noun = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"  # noqa: E731
        lines.append(
            f"{report.model}: {noun(report.errors, 'error')}, {noun(report.warnings, 'warning')} "
            f"(profile {report.profile}; `onnx-qtypes rule QTnnn` explains a rule)"
        )
    else:
        lines.append(f"{report.model}: no findings (profile {report.profile})")
    return "\n".join(lines) + "\n"
