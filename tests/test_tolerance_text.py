"""semantics.md §8 lists exactly what conformance_tests/tolerance.py does: the classes' operators and the chain table.

The text is parsed (operator names are the capitalised ONNX names in a row) and compared with the code's own
tables, so a bound added to the code without its row, or a row the code does not implement, fails here.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from builders import ROOT

from onnx_qtypes.conformance import tolerance
from onnx_qtypes.proto.data_movement import DATA_MOVEMENT

TEXT = (ROOT / "proposal" / "spec" / "semantics.md").read_text(encoding="utf-8")
NAME = re.compile(r"\b(?:[A-Z][a-z]+[A-Za-z]*|ReLU)\b")
NOT_OPERATORS = {"Without", "The", "Lipschitz", "Resize"}  # words of the rows that are no operator names (Resize: below)


def _rows(anchor: str, header: str) -> list[list[str]]:
    section = TEXT[TEXT.index(f'<a id="{anchor}"></a>'):]
    table = section[section.index(header):]
    lines = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        lines.append([cell.strip() for cell in line.strip("|").split("|")])
    return lines


def _operators(cell: str) -> set[str]:
    return {n for n in NAME.findall(cell) if n not in NOT_OPERATORS} | ({"Resize"} if "Resize" in cell else set())


CHAIN_ROWS = _rows("chains", "| operator | `L` from input to output |")


def test_the_chain_table_names_exactly_the_operators_the_code_bounds():
    named = set().union(*(_operators(row[0]) for row in CHAIN_ROWS))
    coded = set(tolerance.LIPSCHITZ) | set(tolerance.COMPUTED)
    assert coded <= named, f"bounded in code, no row in semantics.md#chains: {sorted(coded - named)}"
    assert named <= coded | set(DATA_MOVEMENT), f"a row the code does not implement: {sorted(named - coded - set(DATA_MOVEMENT))}"


CONSTANT = {"1": Fraction(1), "1 for each input": Fraction(1), "1/4": Fraction(1, 4), "3/2": Fraction(3, 2),
            "1/2": Fraction(1, 2)}


@pytest.mark.parametrize("row", [r for r in CHAIN_ROWS if r[1] in CONSTANT or r[1].startswith("113/100")],
                         ids=lambda r: r[0][:30])
def test_a_constant_row_is_the_code_s_constant(row):
    value = Fraction(113, 100) if row[1].startswith("113/100") else CONSTANT[row[1]]
    for op in _operators(row[0]) - {"Resize"}:
        assert tolerance.LIPSCHITZ.get(op, Fraction(1) if op in DATA_MOVEMENT else None) == value, op


CLASS_ROWS = {row[0].strip("*"): row[2] for row in _rows("tolerance-table", "| class | tolerance | operators |")}


def test_the_exact_class_lists_what_the_code_makes_exact():
    exact = _operators(CLASS_ROWS["exact"])
    assert tolerance.EXACT_WHEN_EQUAL | tolerance.SHAPE_ONLY | {"DequantizeLinear", "If", "Loop", "Scan"} <= exact
    assert exact <= tolerance.EXACT_WHEN_EQUAL | tolerance.SHAPE_ONLY | set(DATA_MOVEMENT) | {
        "DequantizeLinear", "QuantizeLinear", "If", "Loop", "Scan", "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin"}


def test_the_near_tie_class_is_the_operators_that_quantize_a_float_input():
    assert {"QuantizeLinear", "DynamicQuantizeLinear"} <= _operators(CLASS_ROWS["one step on near ties"])
