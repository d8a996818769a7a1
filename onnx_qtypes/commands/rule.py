"""Print a checker rule's documentation; without RULE_ID, list every rule."""

from __future__ import annotations

import argparse

from onnx_qtypes.checker import all_rules, get_rule
from onnx_qtypes.proto.files import standard_output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rule", metavar="RULE_ID", nargs="?", help="a rule id (QT101) or slug (scale-not-positive)")


def run(args: argparse.Namespace) -> int:
    if args.rule is None:
        rows = [(r.id, r.severity.value, r.name, r.summary) for r in all_rules()]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]  # the last column is not padded
        text = "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + f"  {row[-1]}\n" for row in rows)
    else:
        r = get_rule(args.rule)
        text = f"{r.id} {r.name} ({r.severity.value}; {r.area})\nspec: {r.spec}\n\n{r.doc}\n"
    with standard_output() as out:
        out.write(text)
    return 0
