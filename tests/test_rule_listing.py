"""`onnx-qtypes rule` without an id: one aligned row per rule, whatever the longest slug."""

from __future__ import annotations

from onnx_qtypes.checker import all_rules
from onnx_qtypes.cli import main


def test_every_row_of_the_listing_is_aligned(capsys):
    assert main(["rule"]) == 0
    rows = capsys.readouterr().out.splitlines()
    rules = list(all_rules())
    assert len(rows) == len(rules)
    longest = max(rules, key=lambda r: len(r.name))
    assert len(longest.name) > 36  # the width the listing once had fixed; the case this test is about
    starts = set()
    for row, rule in zip(rows, rules):
        assert row.startswith(f"{rule.id}  {rule.severity.value}") and row.endswith(f"  {rule.summary}")
        name_at, summary_at = row.index(f"  {rule.name}") + 2, len(row) - len(rule.summary)
        assert row[name_at + len(rule.name):summary_at].strip() == ""  # only padding between slug and summary
        starts.add((name_at, summary_at))
    assert len(starts) == 1, starts  # slugs start in one column, summaries in one column
