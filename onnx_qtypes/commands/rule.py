"""Print a checker rule's documentation; without RULE_ID, list every rule."""

from __future__ import annotations

import argparse
import sys

from onnx_qtypes.checker import all_rules, get_rule


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rule", metavar="RULE_ID", nargs="?", help="a rule id (QT101) or slug (scale-not-positive)")


def run(args: argparse.Namespace) -> int:
    if args.rule is None:
        for r in all_rules():
            sys.stdout.write(f"{r.id}  {r.severity.value:<7}  {r.name:<36}  {r.summary}\n")
        return 0
    r = get_rule(args.rule)
    sys.stdout.write(f"{r.id} {r.name} ({r.severity.value}; {r.area})\nspec: {r.spec}\n\n{r.doc}\n")
    return 0
