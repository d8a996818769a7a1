"""The rule registry: every rule's id, slug, severity, doc and check function.

A rule is a module ``rules/qtNNN_<slug>.py`` whose docstring is the rule's
documentation and whose ``check(ctx)`` generator is registered with
``@rule``. Ids are ``QT`` + three digits grouped by area and are never
renumbered or reused: a removed rule's id moves to ``RETIRED``.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from onnx_qtypes.checker.diagnostics import Finding, Severity
from onnx_qtypes.proto.errors import QTypesError

if TYPE_CHECKING:
    from onnx_qtypes.checker.context import Context

SPEC_DOC = "proposal/spec/validity.md"
AREAS = {
    "1": "one quantized type",
    "2": "statistics",
    "3": "across the graph",
    "4": "per operator",
    "5": "hardware profile",
}
# Sections every rule doc carries, in this order (the contract test enforces it).
DOC_SECTIONS = ("What it checks", "Why", "Invalid example", "Valid example", "Fix")
# Ids that once existed and must never be reused: id -> why it went away.
RETIRED: dict[str, str] = {
    "QT114": "elem-type-not-undefined checked the version-1 marker (elem_type UNDEFINED), which onnx.shape_inference "
             "overwrites; QT119 elem-type-not-marker checks the marker that replaced it",
}

ID_PATTERN = re.compile(r"^QT[1-9][0-9]{2}$")
SLUG_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

CheckFunction = Callable[["Context"], Iterable[Finding]]


class UnknownRuleError(QTypesError):
    """A rule id or slug that the registry does not know."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """One registered rule."""

    id: str
    name: str
    severity: Severity
    check: CheckFunction
    module: str
    typed_only: bool = False  # only a typed model can break it: quiet when check reads a QDQ / QOperator file

    @property
    def doc(self) -> str:
        return (sys.modules[self.module].__doc__ or "").strip()

    @property
    def summary(self) -> str:
        return self.doc.splitlines()[0].strip() if self.doc else ""

    @property
    def area(self) -> str:
        return AREAS[self.id[2]]

    @property
    def anchor(self) -> str:
        return self.id.lower()

    @property
    def spec(self) -> str:
        """The rule's normative anchor in the proposal (a repository path)."""
        return f"{SPEC_DOC}#{self.anchor}"

    @property
    def help(self) -> str:
        """Where a finding's reader learns more, in any install: the command that prints the rule's doc."""
        return f"onnx-qtypes rule {self.id}"

    @property
    def is_profile_rule(self) -> bool:
        return self.id[2] == "5"

    def sections(self) -> dict[str, str]:
        """The doc's ``## Heading`` sections, heading -> body."""
        out: dict[str, str] = {}
        current = None
        for line in self.doc.splitlines():
            if line.startswith("## "):
                current = line[3:].strip()
                out[current] = ""
            elif current is not None:
                out[current] += line + "\n"
        return {k: v.strip() for k, v in out.items()}


RULES: dict[str, Rule] = {}


def rule(
    rule_id: str, name: str, severity: Severity | str, *, typed_only: bool = False
) -> Callable[[CheckFunction], CheckFunction]:
    """Register ``check`` as rule ``rule_id`` (decorator).

    ``typed_only``: the rule is about how the extension itself is written (declarations, markers, fields),
    which a QDQ / QOperator file has none of: ``check`` keeps it quiet on such a file's lifted form.
    """
    if not ID_PATTERN.match(rule_id) or rule_id[2] not in AREAS:
        raise ValueError(f"rule id {rule_id!r} must be QT + 3 digits with a known area digit")
    if not SLUG_PATTERN.match(name):
        raise ValueError(f"rule {rule_id}: slug {name!r} must be kebab-case")
    if rule_id in RETIRED:
        raise ValueError(f"rule id {rule_id} is retired ({RETIRED[rule_id]}); ids are never reused")

    def register(check: CheckFunction) -> CheckFunction:
        if rule_id in RULES and RULES[rule_id].module != check.__module__:
            raise ValueError(f"rule id {rule_id} registered twice ({RULES[rule_id].module}, {check.__module__})")
        RULES[rule_id] = Rule(rule_id, name, Severity.parse(severity), check, check.__module__, typed_only)
        return check

    return register


def all_rules() -> list[Rule]:
    """Every registered rule, by id."""
    import onnx_qtypes.checker.rules  # noqa: F401  (importing registers them)

    return [RULES[k] for k in sorted(RULES)]


def get_rule(key: str) -> Rule:
    """A rule by id (any case) or slug."""
    rules = all_rules()
    wanted = key.strip()
    for r in rules:
        if wanted.upper() == r.id or wanted.lower() == r.name:
            return r
    if wanted.upper() in RETIRED:
        raise UnknownRuleError(f"rule {wanted.upper()} was retired: {RETIRED[wanted.upper()]}")
    raise UnknownRuleError(
        f"unknown rule {key!r}; rule ids run {rules[0].id}..{rules[-1].id} (list them with `onnx-qtypes rule`)"
    )


def select_rules(select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Rule]:
    """The rules ``select`` names (all when empty) less those ``ignore`` names.

    Each entry is a rule id (``QT101``), a slug (``scale-not-positive``) or an id prefix naming an area or a
    group (``QT1``, ``QT20``), as linters select rules; an entry that names no rule is an UnknownRuleError.
    """
    rules = all_rules()

    def named(entries: Iterable[str]) -> set[str]:
        ids: set[str] = set()
        for entry in entries:
            key = entry.strip()
            if not key:
                continue
            prefix = key.upper()
            matched = {r.id for r in rules if r.id.startswith(prefix) or r.name == key.lower()}
            if not matched:
                get_rule(key)  # raises, naming the range of ids
            ids |= matched
        return ids

    chosen = named(select) if any(s.strip() for s in select) else {r.id for r in rules}
    chosen -= named(ignore)
    return [r for r in rules if r.id in chosen]
