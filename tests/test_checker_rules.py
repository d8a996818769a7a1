"""Every rule fires at the right location on its cases, and stays silent on its near misses, as ``onnx-qtypes check``
reads them (``diagnose``: the rules, and the quantization nodes no type covers)."""

from __future__ import annotations

import pytest
from checker_models import Case, cases

from onnx_qtypes import diagnose
from onnx_qtypes.checker import get_rule

CASES = cases()


def _show(diagnostics) -> str:  # noqa: ANN001
    return "\n".join(str(d) for d in diagnostics) or "(nothing)"


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule}-{'fires' if c.fires else 'near-miss'}-{c.id}")
def test_rule_case(case: Case):
    diagnostics = list(diagnose(case.build(), case.profile).diagnostics)
    mine = [d for d in diagnostics if d.rule == case.rule]
    if not case.fires:
        assert not mine, f"{case.rule} fired on its near miss:\n{_show(mine)}"
        if case.clean:
            others = [d for d in diagnostics if d.is_error or case.quiet]
            assert not others, f"the near miss should be a clean model, but:\n{_show(others)}"
        return
    at = [d for d in mine if d.location.pointer == case.pointer]
    assert at, f"{case.rule} did not fire at {case.pointer}; findings:\n{_show(diagnostics)}"
    found = at[0]
    rule = get_rule(case.rule)
    assert found.name == rule.name
    assert found.help == f"onnx-qtypes rule {case.rule}"
    if case.profile is None:
        assert found.severity is rule.severity
    if case.tensor is not None:
        assert found.location.tensor == case.tensor
    if case.node is not None:
        assert found.location.node == case.node
    if case.message is not None:
        assert case.message in found.message, found.message
