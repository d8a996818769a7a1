"""Every registered rule is complete: id, slug, file, doc sections, spec anchor, and cases both ways."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest
from builders import ROOT
from checker_models import cases

from onnx_qtypes.checker import all_rules
from onnx_qtypes.checker.registry import DOC_SECTIONS, RETIRED, RULES, rule

RULE_IDS = [r.id for r in all_rules()]
VALIDITY = (ROOT / "proposal" / "spec" / "validity.md").read_text()
CASES = cases()


def test_the_registry_holds_every_rule_module():
    files = sorted(p.stem for p in (ROOT / "checker" / "rules").glob("qt*.py"))
    registered = sorted(r.module.rsplit(".", 1)[1] for r in all_rules())
    assert files == registered
    assert len(RULE_IDS) == len(set(RULE_IDS)) >= 40


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_rule_is_complete(rule_id):
    r = RULES[rule_id]
    assert re.fullmatch(r"QT[1-5][0-9]{2}", r.id) and r.id not in RETIRED
    assert r.module.rsplit(".", 1)[1] == f"{r.id.lower()}_{r.name.replace('-', '_')}", "file name = qtNNN_<slug>"
    sections = r.sections()
    assert list(sections) == list(DOC_SECTIONS), f"{rule_id}: doc sections {list(sections)}"
    assert all(len(body) > 20 for body in sections.values()), f"{rule_id}: an empty doc section"
    assert r.summary and not r.summary.startswith("#")
    assert f'<a id="{r.anchor}"></a>' in VALIDITY, f"{rule_id}: no anchor in proposal/spec/validity.md"
    statement = VALIDITY.split(f'<a id="{r.anchor}"></a>', 1)[1].split("<a id=", 1)[0]
    assert f"**{r.id} `{r.name}` ({r.severity.value})" in statement, f"{rule_id}: validity.md names another slug"
    mine = [c for c in CASES if c.rule == rule_id]
    assert any(c.fires and c.pointer for c in mine), f"{rule_id}: no case that fires it at a location"
    assert any(not c.fires for c in mine), f"{rule_id}: no near-miss case"


def test_every_case_names_a_registered_rule():
    assert {c.rule for c in CASES} <= set(RULE_IDS)
    ids = [(c.rule, c.fires, c.id) for c in CASES]
    assert len(ids) == len(set(ids))


def test_every_anchor_in_validity_md_is_a_rule():
    anchors = set(re.findall(r'<a id="(qt[0-9]{3})"></a>', VALIDITY))
    assert anchors == {r.lower() for r in RULE_IDS}


def test_registration_refuses_bad_ids_and_reuse():
    with pytest.raises(ValueError, match="QT"):
        rule("QX101", "bad-id", "error")
    with pytest.raises(ValueError, match="kebab"):
        rule("QT199", "Bad_Slug", "error")
    with pytest.raises(ValueError, match="registered twice"):
        rule("QT101", "scale-not-positive", "error")(lambda ctx: iter(()))


def test_rule_modules_import_only_downwards():
    """Rules may use proto, reference_ops and the checker itself, never interop/calibration/conformance."""
    for r in all_rules():
        source = pathlib.Path(importlib.import_module(r.module).__file__).read_text()
        for forbidden in ("onnx_qtypes.interop", "onnx_qtypes.calibration", "onnx_qtypes.conformance"):
            assert forbidden not in source, f"{r.module} imports {forbidden}"
