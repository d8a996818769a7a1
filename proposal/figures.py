"""Write the figures the proposal quotes from the repository itself (run: python proposal/figures.py [--check]).

A figure in a text is a span ``<!-- figure NAME -->VALUE<!-- /figure -->`` (a table spans lines the same way).
This script recomputes every VALUE from the tree — the case folders under conformance_tests/cases/, the
checker's rule registry, the recorded conformance results under conformance_tests/results/, the recorded vendor
deviations under conformance_tests/vendor_results/ and the committed run of
proposal/experiments/encodings_vs_tools.py (its .json) — and rewrites the
spans in place, so a count in the text changes when the tree does. tests/test_spec_figures.py fails when a
committed text differs from what this script writes, and when a count of cases or rules appears in a text
outside a span. ``--check`` writes nothing and exits 1 when a text would change.
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
from collections.abc import Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
CASES = ROOT / "conformance_tests" / "cases"
RESULTS = ROOT / "conformance_tests" / "results"
TEXTS = [ROOT / "proposal" / name for name in ("0001-quantized-element-types.md", "alternatives.md", "README.md")] + \
    sorted((ROOT / "proposal" / "spec").glob("*.md")) + [ROOT / "README.md", ROOT / "conformance_tests" / "BACKENDS.md"]
VENDOR_RESULTS = ROOT / "conformance_tests" / "vendor_results"
ENCODINGS = ROOT / "proposal" / "experiments" / "encodings_vs_tools.json"
SPAN = re.compile(r"<!-- figure ([a-z0-9:._+-]+) -->(.*?)<!-- /figure -->", re.S)
# backend -> how the RFC's table names it, in the table's order; backends recorded later are appended by name
BACKEND_LABELS = {
    "reference": "reference (definition)",
    "reference-integer": "reference-integer",
    "onnxruntime": "onnxruntime, default optimizations",
    "onnxruntime-unoptimized": "onnxruntime, `ORT_DISABLE_ALL`",
    "openvino": "OpenVINO",
}
OUTCOMES = ("pass", "fail", "unsupported", "error")


def _case_documents(kind: str) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((CASES / kind).glob("*/case.json"))]


def _number(n: int) -> str:
    return f"{n:,}"


def _short(version: str) -> str:
    """A release as status.md shows it: 2026.4.1 for OpenVINO's 2026.4.1-22982-e213a147257-releases/2026/4."""
    return version.split("-", 1)[0]


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.+-]", version))


def all_records() -> list[dict]:
    """Every recorded run: conformance_tests/results/<backend>-<version>.json (one per backend and version)."""
    found = []
    for path in sorted(RESULTS.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(record, dict) and "backend" in record and "summary" in record:  # not deviations.json
            found.append(record)
    return found


def records() -> dict[str, dict]:
    """backend -> its record of the newest version recorded."""
    newest: dict[str, dict] = {}
    for record in all_records():
        held = newest.get(record["backend"])
        if held is None or _version_key(str(record["version"])) > _version_key(str(held["version"])):
            newest[record["backend"]] = record
    return newest


def _results_table() -> str:
    """Every recorded backend and version, as status.md's summary has them (older versions stay recorded)."""
    found = all_records()
    rank = {b: i for i, b in enumerate(BACKEND_LABELS)}
    found.sort(key=lambda r: (rank.get(r["backend"], len(rank)), r["backend"], _version_key(str(r["version"]))))
    extra = sorted({k for r in found for k in r["summary"]} - set(OUTCOMES))
    columns = [*OUTCOMES, *extra]
    lines = ["| backend | version | " + " | ".join(columns) + " |", "|---|---|" + "---:|" * len(columns)]
    for record in found:
        cells = [str(int(record["summary"].get(c, 0))) for c in columns]  # as status.md prints them
        lines.append(f"| {BACKEND_LABELS.get(record['backend'], record['backend'])} | {_short(str(record['version']))} | "
                     + " | ".join(cells) + " |")
    return "\n\n" + "\n".join(lines) + "\n\n"  # a table block of its own, between the markers


def _result(name: str) -> str:
    """result:<backend>:<outcome> (a count) or result:<backend>:version."""
    _, backend, field = name.split(":")
    record = records().get(backend)
    if record is None:
        raise KeyError(f"no recorded results for backend {backend!r} in {RESULTS.relative_to(ROOT)}")
    return _short(str(record["version"])) if field == "version" else _number(int(record["summary"].get(field, 0)))


def _operators() -> set[str]:
    """The ONNX operators the execution cases test (a case's `operator` may be a model-local function's name)."""
    import onnx.defs  # noqa: PLC0415

    return {c["operator"] for c in _case_documents("execution") if onnx.defs.has(c["operator"])}


def _vendor(name: str) -> str:
    """vendor:<record>:<deviation id>:<session>: the steps a recorded vendor deviation is off
    (conformance_tests/vendor_results/<record>.json, max_steps of that session: optimized or unoptimized)."""
    _, record, deviation, session = name.split(":")
    found = json.loads((VENDOR_RESULTS / f"{record}.json").read_text(encoding="utf-8"))
    for entry in found["deviations"]:
        if entry["id"] == deviation:
            return _number(int(entry["max_steps"][session]))
    raise KeyError(f"no deviation {deviation!r} in {VENDOR_RESULTS.relative_to(ROOT)}/{record}.json")


_LETTERS = {"O": "FAILS OPEN", "i": "kept intact", "l": "closed, lost", "r": "tool refused"}


def _encodings(name: str) -> str:
    """From the committed run of proposal/experiments/encodings_vs_tools.py (its .json record):
    encodings:models, encodings:tools (stock tools, not the 'none' control: the model as written),
    encodings:pairs (models x columns, the control included, as the experiment's table counts them),
    encodings:<encoding> (its fail-open pairs), encodings:<encoding>:<tool>:<i|l|r|O> (models with that verdict)."""
    run = json.loads(ENCODINGS.read_text(encoding="utf-8"))
    tools = [t for t in run["tools"] if t != "none"]
    parts = name.split(":")[1:]
    if parts == ["models"]:
        return _number(len(run["models"]))
    if parts == ["tools"]:
        return _number(len(tools))
    if parts == ["pairs"]:
        return _number(len(run["models"]) * len(run["tools"]))
    if len(parts) == 1 and parts[0] in run["encodings"]:
        return _number(sum(r["encoding"] == parts[0] and r["verdict"] == "FAILS OPEN" for r in run["records"]))
    if len(parts) == 3 and parts[0] in run["encodings"] and parts[1] in run["tools"] and parts[2] in _LETTERS:
        return _number(sum(r["encoding"] == parts[0] and r["tool"] == parts[1] and r["verdict"] == _LETTERS[parts[2]]
                           for r in run["records"]))
    raise KeyError(f"unknown figure {name!r}: encodings:models|tools|pairs|<encoding>|<encoding>:<tool>:<i|l|r|O>")


def _rules() -> str:
    from onnx_qtypes.checker import all_rules  # noqa: PLC0415

    return _number(len(all_rules()))


FIGURES: dict[str, Callable[[], str]] = {
    "execution-cases": lambda: _number(len(_case_documents("execution"))),
    "checker-cases": lambda: _number(len(_case_documents("checker"))),
    "reject-cases": lambda: _number(len(_case_documents("reject"))),
    "typed-only-cases": lambda: _number(sum(1 for c in _case_documents("execution") if c.get("qdq_model", "") is None)),
    "operators": lambda: _number(len(_operators())),
    "function-operators": lambda: _number(len({c["operator"] for c in _case_documents("execution")} - _operators())),
    "rules": _rules,
    "results-table": _results_table,
}


def value(name: str) -> str:
    if name.startswith("result:"):
        return _result(name)
    if name.startswith("vendor:"):
        return _vendor(name)
    if name.startswith("encodings:"):
        return _encodings(name)
    if name not in FIGURES:
        raise KeyError(f"unknown figure {name!r}; known: {', '.join(sorted(FIGURES))}, result:<backend>:<outcome>, "
                       "vendor:<record>:<deviation>:<session>, encodings:...")
    return FIGURES[name]()


def render(text: str) -> str:
    """``text`` with every figure span's value recomputed."""
    cache: dict[str, str] = {}

    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name not in cache:
            cache[name] = value(name)
        return f"<!-- figure {name} -->{cache[name]}<!-- /figure -->"

    return SPAN.sub(fill, text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path in TEXTS:
        text = path.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(f"{path}: {'figures differ from the tree' if check else 'figures rewritten'}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
