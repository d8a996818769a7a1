"""proposal/rules.md is generated from the registry and must not drift; links point at real anchors."""

from __future__ import annotations

import re

from builders import ROOT, load_script

from onnx_qtypes.checker import all_rules


def test_rules_md_matches_its_generator(tmp_path):
    docs = load_script("checker/docs.py")
    fresh = docs.main(tmp_path / "rules.md")
    committed = ROOT / "proposal" / "rules.md"
    assert committed.read_text() == fresh.read_text(), "proposal/rules.md is stale: run python checker/docs.py"


def test_rules_md_links_resolve():
    text = (ROOT / "proposal" / "rules.md").read_text()
    validity = (ROOT / "proposal" / "spec" / "validity.md").read_text()
    for anchor in set(re.findall(r"spec/validity\.md#(qt[0-9]{3})", text)):
        assert f'<a id="{anchor}"></a>' in validity
    for r in all_rules():
        assert f"## {r.id} `{r.name}`" in text
        assert (ROOT / "checker" / "rules" / f"{r.module.rsplit('.', 1)[1]}.py").is_file()


def test_spec_anchor_points_into_the_proposal():
    for r in all_rules():
        path, anchor = r.spec.split("#")
        assert (ROOT / path).is_file() and anchor == r.id.lower()


def test_help_field_is_a_command_that_prints_the_rule(capsys):
    from onnx_qtypes.cli import main

    for r in all_rules():
        program, command, rule_id = r.help.split()
        assert (program, command, rule_id) == ("onnx-qtypes", "rule", r.id)
        assert main([command, rule_id]) == 0
        assert r.doc in capsys.readouterr().out


def test_the_spec_names_exactly_the_rules_quiet_on_quantizer_files():
    text = (ROOT / "proposal/spec/validity.md").read_text(encoding="utf-8")
    section = text.split('<a id="quantizer-files"></a>', 1)[1].split("<a id=", 1)[0]
    listed = set(re.findall(r"QT\d{3}", section.split("typed files only", 1)[1]))
    assert listed == {r.id for r in all_rules() if r.typed_only}
