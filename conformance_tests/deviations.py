"""Known deviations: failures and errors explained as data, so that only new ones fail a run.

Two kinds of file hold them:

- the project's own measurement, ``conformance_tests/results/deviations.json`` (``load_deviations``): every
  failure of a published backend and version with its kind, explanation, evidence and a reproducing case,
  rendered into proposal/status.md; ``onnx-qtypes conformance --known`` reads it. Optional fields: ``message``, a
  regular expression the case's message must contain (so an entry follows a runtime's refusal, "Unknown DatumType
  Int4", to cases a regenerated suite adds); ``script``, a standalone reproduction without the suite
  (``conformance_tests/vendor_repros/<runtime>/<name>.py``: exit 1 while the deviation is there, 0 once it is
  gone), and ``fixed``, the versions (a ``version_matches`` specification) on which that script was seen to exit 0;
- a vendor's own file (``load_known``; ``onnx-qtypes conformance --known FILE``), the format below, drafted from
  a run's JSON report by ``draft_known`` (``onnx-qtypes conformance --draft-known REPORT.json -o FILE``)::

      {"format": "onnx-qtypes-known/1",
       "deviations": [{"backend": "tract", "version": ">=0.23,<0.24", "cases": ["softmax-*int8-float32-*"],
                       "outcomes": ["fail"], "reason": "softmax saturates: tract issue #1234"}]}

  ``cases`` (required) lists case ids or fnmatch patterns; ``reason`` (required) says why; ``backend`` (the name
  the report shows) and ``version`` (see ``version_matches``) default to any; ``outcomes`` (fail, error) to
  both; ``message`` (a regular expression the case's message must contain) to any message; ``group`` is
  informative (what the draft grouped by). The published file is accepted too.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from onnx_qtypes.proto.errors import QTypesError

from .judging import ERROR, FAIL

RESULTS = Path(__file__).resolve().parent / "results"
DEVIATIONS = RESULTS / "deviations.json"
KNOWN_FORMAT = "onnx-qtypes-known/1"
KINDS = ("rounding mode", "zero point handling", "fused-kernel arithmetic", "float arithmetic (precision)",
         "unsupported type", "unsupported granularity", "requantization dropped", "data movement error", "saturation",
         "unsupported operator", "runtime error", "dynamic parameters", "unexplained")
TODO = "TODO:"  # how a drafted reason starts until someone writes it


class StatusError(QTypesError):
    """A results record, the published deviations or a known-deviations file cannot be read."""


# --- versions ---------------------------------------------------------------------------------------------------

_COMPARE = re.compile(r"^(~=|==|!=|>=|<=|>|<)\s*(\S+)$")
_OPERATOR_START = "=<>!~"  # a clause starting with one of these is a comparison, or malformed


def _numbers(version: str) -> tuple[int, ...]:
    """A version's numeric parts, a suffix after '-' or '+' dropped: '2026.4.1-22982-e213a1' -> (2026, 4, 1)."""
    base = re.split(r"[-+]", version.strip(), maxsplit=1)[0]
    return tuple(int(p) for p in re.findall(r"\d+", base))


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)), b + (0,) * (width - len(b))


def version_problem(spec: object) -> str | None:
    """Why ``spec`` is not a version specification ``version_matches`` reads, or None."""
    if not isinstance(spec, str):
        return f"expected a string, got {type(spec).__name__}"
    if spec.strip() in ("", "*"):
        return None
    for clause in (c.strip() for c in spec.split(",")):
        if not clause:
            return f"{spec!r} has an empty clause"
        match = _COMPARE.match(clause)
        if match:
            op, known = match.groups()
            if known[0] in _OPERATOR_START:
                return f"{clause!r} is not a comparison (use ==, !=, >=, <=, >, < or ~= and a version)"
            if not re.fullmatch(r"\d+(\.\d+)*([-+]\S*)?", known):
                return f"{clause!r} compares with {known!r}, which is not a version such as 1.2.3"
            if op == "~=" and len(_numbers(known)) < 2:
                return f"{clause!r}: ~= needs at least two parts (~=1.2 means >=1.2,<2)"
        elif clause[0] in _OPERATOR_START:
            return f"{clause!r} is not a comparison (use ==, !=, >=, <=, >, < or ~= and a version)"
        elif not re.search(r"[\d*]", clause):
            return f"{clause!r} names no version (no digit, no '*')"
    return None


def version_matches(spec: str, version: str) -> bool:
    """Whether ``version`` satisfies ``spec``: '*' (or '') any version; '1.32.0' that version exactly (also with a
    build suffix after '-': '2026.4.1' matches '2026.4.1-22982-e213a1'); '1.32.*' a pattern; '>=0.23,<0.24'
    comparisons of the numeric parts (1.9 < 1.10), every comma-separated clause holding; '~=0.23' a compatible
    release as in pip (>=0.23 and <1; '~=0.23.1': >=0.23.1 and <0.24)."""
    spec = spec.strip()
    if spec in ("", "*"):
        return True
    for clause in (c.strip() for c in spec.split(",")):
        match = _COMPARE.match(clause)
        if match:
            op, known = match.groups()
            a, b = _padded(_numbers(version), _numbers(known))
            if op == "~=":
                prefix = _numbers(known)[:-1]  # ~=0.23.1: 0.23 stays, and at least 0.23.1
                ok = a >= b and a[:len(prefix)] == prefix
            else:
                ok = {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b}[op]
        else:
            ok = (version == clause or version.split("-")[0] == clause or fnmatch.fnmatchcase(version, clause)
                  or fnmatch.fnmatchcase(version.split("-")[0], clause))
        if not ok:
            return False
    return True


# --- the published list ------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Deviation:
    vendor: str
    backend: str
    version: str
    cases: tuple[str, ...]
    kind: str
    explanation: str
    evidence: str
    reproduction: str
    outcomes: tuple[str, ...] = (FAIL, ERROR)
    message: str = ""  # a regular expression the case's message must contain (re.search); "" any message
    script: str = ""  # a standalone reproduction, relative to the repository root
    fixed: str = ""  # versions on which ``script`` exits 0 (version_matches); "" none recorded
    where: str = dataclasses.field(default="", compare=False)  # "FILE#deviations[i]": reports name the entry by it

    def matches(self, backend: str, version: str, case_id: str, outcome: str | None = None,
                message: str | None = None) -> bool:
        """Whether this entry explains the case; ``message`` (the case's) is tested only when the entry has one
        and the caller gives one."""
        return ((not self.backend or self.backend == backend) and version_matches(self.version, version)
                and (outcome is None or outcome in self.outcomes)
                and any(fnmatch.fnmatchcase(case_id, p) for p in self.cases)
                and (not self.message or message is None or re.search(self.message, message) is not None))


def _read(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StatusError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise StatusError(f"{path}: is a directory, expected a JSON file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise StatusError(f"{path}: not readable JSON ({exc})") from None


def _entries(data: Any, path: Path) -> list:
    entries = data.get("deviations") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise StatusError(f"{path}: expected an object with a 'deviations' list")
    return entries


def load_deviations(path: Path = DEVIATIONS) -> list[Deviation]:
    """The published list (every field but outcomes, message, script and fixed required, ``kind`` one of KINDS)."""
    out = []
    for i, e in enumerate(_entries(_read(path), path)):
        where = f"{path}: deviations[{i}]"
        try:
            dev = Deviation(e["vendor"], e["backend"], e["version"], tuple(e["cases"]), e["kind"], e["explanation"],
                            e["evidence"], e["reproduction"], tuple(e.get("outcomes", (FAIL, ERROR))),
                            message=e.get("message", ""), script=e.get("script", ""), fixed=e.get("fixed", ""),
                            where=_entry_id(path, i))
        except (KeyError, TypeError, AttributeError):
            raise StatusError(f"{where}: needs vendor, backend, version, cases, kind, explanation, evidence, "
                              "reproduction") from None
        problem = version_problem(dev.version)
        if problem:
            raise StatusError(f"{where}.version: {problem}")
        problem = _optional_problem(dev)
        if problem:
            raise StatusError(f"{where}.{problem}")
        if dev.kind not in KINDS:
            raise StatusError(f"{where}: kind {dev.kind!r} is not one of {', '.join(KINDS)}")
        if not dev.cases or not all(isinstance(p, str) and p for p in dev.cases):
            raise StatusError(f"{where}: 'cases' must list case-id patterns")
        if not dev.outcomes or not set(dev.outcomes) <= {FAIL, ERROR}:
            raise StatusError(f"{where}.outcomes: a list of 'fail' and / or 'error'")
        out.append(dev)
    return out


def script_exit(dev: Deviation, version: str) -> int | None:
    """The exit status ``dev.script`` was recorded with on ``version``: 1 (it reproduces) on the entry's own versions,
    0 (it is gone) on those in ``fixed``; None for a version nothing was recorded on."""
    if version_matches(dev.version, version):
        return 1
    if dev.fixed and version_matches(dev.fixed, version):
        return 0
    return None


def _optional_problem(dev: Deviation) -> str | None:
    """What is wrong with a published entry's optional fields (message, script, fixed), or None."""
    for field in ("message", "script", "fixed"):
        if not isinstance(getattr(dev, field), str):
            return f"{field}: expected a string"
    try:
        re.compile(dev.message)
    except re.error as exc:
        return f"message: not a regular expression ({exc})"
    if dev.script and not (dev.script.endswith(".py") and not dev.script.startswith("/")):
        return f"script: {dev.script!r} is not a .py file relative to the repository root"
    if dev.fixed:
        problem = version_problem(dev.fixed)
        if problem:
            return f"fixed: {problem}"
    return None


def explain(rec: dict[str, Any], deviations: Iterable[Deviation]) -> tuple[dict[Deviation, list[str]], list[str]]:
    """(deviation -> the failing / erroring case ids of a record it explains, case ids nothing explains)."""
    deviations = list(deviations)
    explained: dict[Deviation, list[str]] = defaultdict(list)
    unexplained = []
    outcomes = {**rec["outcomes"], **(rec.get("reject") or {}).get("outcomes", {})}  # a must-reject case run: too
    for case_id, outcome in outcomes.items():
        if outcome not in (FAIL, ERROR):
            continue
        message = rec.get("details", {}).get(case_id, {}).get("message", "")
        hit = next((d for d in deviations if d.matches(rec["backend"], rec["version"], case_id, message=message)),
                   None)
        if hit is None:
            unexplained.append(case_id)
        else:
            explained[hit].append(case_id)
    return explained, unexplained


# --- a vendor's own file -----------------------------------------------------------------------------------------


def load_known(path: str | Path) -> list[Deviation]:
    """A known-deviations file in the format of this module's doc (or the published list); StatusError naming the
    file and the entry when it does not follow it."""
    path = Path(path)
    data = _read(path)
    if isinstance(data, dict) and "format" in data and data["format"] != KNOWN_FORMAT:
        raise StatusError(f"{path}: format {data['format']!r} is not {KNOWN_FORMAT!r}")
    out = []
    for i, e in enumerate(_entries(data, path)):
        where = f"{path}: deviations[{i}]"
        if not isinstance(e, dict):
            raise StatusError(f"{where}: expected an object")
        unknown = sorted(set(e) - {"backend", "version", "cases", "outcomes", "reason", "message", "group", "vendor",
                                   "kind", "explanation", "evidence", "reproduction", "script", "fixed"})
        if unknown:
            raise StatusError(f"{where}: unknown field {unknown[0]!r} (fields: backend, version, cases, outcomes, "
                              "reason, message, group)")
        cases = e.get("cases")
        if not isinstance(cases, list) or not cases or not all(isinstance(p, str) and p for p in cases):
            raise StatusError(f"{where}.cases: must list case ids or patterns (at least one)")
        reason = e.get("reason", e.get("explanation"))
        if not isinstance(reason, str) or not reason.strip():
            raise StatusError(f"{where}.reason: must say why the runtime deviates (a non-empty string)")
        backend, version = e.get("backend", ""), e.get("version", "*")
        if not isinstance(backend, str):
            raise StatusError(f"{where}.backend: expected the backend's name as the report shows it (a string)")
        problem = version_problem(version)
        if problem:
            raise StatusError(f"{where}.version: {problem} (use '1.2.3', '1.2.*', '>=1.2,<1.3' or '*')")
        outcomes = e.get("outcomes", [FAIL, ERROR])
        if not isinstance(outcomes, list) or not outcomes or not set(outcomes) <= {FAIL, ERROR}:
            raise StatusError(f"{where}.outcomes: a list of 'fail' and / or 'error'")
        dev = Deviation(str(e.get("vendor", "")), backend, version, tuple(cases), str(e.get("kind", "")),
                        reason.strip(), str(e.get("evidence", "")), str(e.get("reproduction", "")), tuple(outcomes),
                        message=e.get("message", ""), script=e.get("script", ""), fixed=e.get("fixed", ""),
                        where=_entry_id(path, i))
        problem = _optional_problem(dev)
        if problem:
            raise StatusError(f"{where}.{problem}")
        out.append(dev)
    return out


def _entry_id(path: Path, index: int) -> str:
    """How reports name one entry of a known-deviations file: the published list by its place in the repository."""
    shown = "conformance_tests/results/deviations.json" if Path(path).resolve() == DEVIATIONS else str(path)
    return f"{shown}#deviations[{index}]"


_GLOB = re.compile(r"[*?\[]")  # what makes a case pattern match more than one id (fnmatch)


def stale_entries(deviations: Iterable[Deviation], backend: str, version: str, suite_ids: Iterable[str],
                  selected_ids: Iterable[str], explained: Iterable[Deviation]) -> list[str]:
    """Notes on the entries for this backend and version that do nothing: a case pattern that names no case of the
    suite, or an entry that lists cases of this run but explained none of its failures (they pass now, or fail
    in another way than its ``outcomes``). In a run of part of the suite (``-k``, ``--tags``) a pattern counts only
    when the run holds every case it matches: '*' with a message is a kind of failure any case may show, and a
    part of the suite that shows none says nothing about it, while ``-k conv`` holds all of ``conv-*``."""
    suite_ids, selected_ids = sorted(set(suite_ids)), sorted(set(selected_ids))
    selected = set(selected_ids)
    used = {d.where for d in explained}
    notes = []
    for d in deviations:
        if (d.backend and d.backend != backend) or not version_matches(d.version, version):
            continue
        dead = [p for p in d.cases if not any(fnmatch.fnmatchcase(i, p) for i in suite_ids)]
        if dead:
            notes.append(f"{d.where}: {', '.join(map(repr, dead[:5]))}{' ...' if len(dead) > 5 else ''} "
                         "name(s) no case of the suite")
        patterns = [p for p in d.cases if not _GLOB.search(p)
                    or all(i in selected for i in suite_ids if fnmatch.fnmatchcase(i, p))]
        listed = [i for i in selected_ids if any(fnmatch.fnmatchcase(i, p) for p in patterns)]
        if listed and d.where not in used:
            notes.append(f"{d.where} lists {len(listed)} case(s) of this run (e.g. {listed[0]}) but explained no "
                         "failure: they pass now, or fail otherwise than its outcomes say")
    return notes


# what differs between alike messages, taken out by normalize_message: file paths (absolute, or relative with two
# folders or more: 'int4/uint4' is no path), quoted names ('x' or "x"; an apostrophe inside a word is no quote) and
# numbers standing alone (1, -3, 0.5, 9.05e+04; digits inside a word stay: QT120, int16, float8e4m3fn)
_PATH = re.compile(r"""(?:(?<![\w.])(?:[A-Za-z]:[\\/]|~?/|\.{1,2}/)[^\s'"():,;]+|(?<![\w/.])(?:[\w.~-]+/){2,}[\w.-]+)""")
_QUOTED = re.compile(r"(?<!\w)'[^'\n]*'(?!\w)|\"[^\"\n]*\"")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w|\.\d)")


def normalize_message(message: str, limit: int = 200) -> str:
    """A message with what differs between alike cases taken out (paths as <path>, quoted names as '…', numbers as
    N), so that alike messages group: the console's and the report's groups by message, --draft-known's entries and
    status.md's reasons for unsupported cases all use it."""
    text = _PATH.sub("<path>", str(message))
    text = _QUOTED.sub(lambda m: "'…'" if m.group(0).startswith("'") else '"…"', text)
    return _NUMBER.sub("N", text)[:limit]


def draft_known(report: dict[str, Any], source: str = "") -> dict[str, Any]:
    """A known-deviations document explaining exactly the failing and erroring cases of a JSON report
    (``reports.report_json``): one entry per group of alike failures (outcome, operator, normalized message),
    their exact ids, the tags they share, and a reason to fill in."""
    backend = report.get("backend") or {}
    name, version = str(backend.get("name", "")), str(backend.get("version", ""))
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for case in report.get("cases", []):
        if case.get("outcome") in (FAIL, ERROR):
            operator = case.get("operator") or f"({case.get('kind', 'execution')})"
            groups[(case["outcome"], operator, normalize_message(case.get("message", "")))].append(case)
    entries = []
    for (outcome, operator, pattern), members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        entries.append({
            "backend": name, "version": version or "*", "outcomes": [outcome],
            "cases": sorted(c["id"] for c in members),
            "reason": f"{TODO} why {name} {version} {'fails' if outcome == FAIL else 'errors on'} these "
                      f"{len(members)} {operator} case(s)",
            "group": {"operator": operator, "message": pattern, "tags": _common_tags(members),
                      "example": str(members[0].get("message", ""))[:500]},
        })
    return {"format": KNOWN_FORMAT,
            "about": f"known deviations of {name} {version}".strip() + (f", drafted from {source}" if source else "")
                     + ": fill in each reason; `onnx-qtypes conformance --known THIS_FILE` then fails only on "
                       "cases no entry lists",
            "deviations": entries}


def _common_tags(members: Sequence[dict]) -> dict[str, Any]:
    first = members[0].get("tags") or {}
    return {k: v for k, v in sorted(first.items()) if all((m.get("tags") or {}).get(k) == v for m in members[1:])}
