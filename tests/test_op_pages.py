"""The per-operator pages (proposal/spec/ops/) cover every kernel, cite rules, cases and example models that exist,
and match their generator; the example models check clean and run."""

from __future__ import annotations

import collections
import json
import re

import numpy as np
import onnx
import pytest
from builders import ROOT, load_script

from onnx_qtypes import get_qtype, load
from onnx_qtypes.checker import Severity, get_rule, iter_diagnostics
from onnx_qtypes.proto.data_movement import DATA_MOVEMENT
from onnx_qtypes.reference_ops import ReferenceEvaluator
from onnx_qtypes.reference_ops.ops import KERNELS

OPS_DIR = ROOT / "proposal" / "spec" / "ops"
PAGES = sorted(p for p in OPS_DIR.glob("*.md") if p.name != "README.md")
SECTIONS = ("## Semantics", "## Inputs", "## Outputs", "## Constraints", "## Tolerance", "## Examples")
EXAMPLE = re.compile(r"\(\.\./\.\./\.\./examples/ops/([\w]+\.onnx)\)")
CASE = re.compile(r"\(\.\./\.\./\.\./conformance_tests/cases/execution/([^/)]+)/case\.json\)")
RULE = re.compile(r"\bQT\d{3}\b")


def _generator():
    return load_script("proposal/spec/ops/make_op_pages.py")


def _covered() -> dict[str, str]:
    """operator -> page file, as the committed index table says."""
    rows = re.findall(r"^\| (\w+) \| \[(\w+\.md)\]", (OPS_DIR / "README.md").read_text(), re.M)
    return dict(rows)


def _cases() -> dict[str, list[dict]]:
    found = collections.defaultdict(list)
    for path in (ROOT / "conformance_tests" / "cases" / "execution").glob("*/case.json"):
        case = json.loads(path.read_text())
        found[case["operator"]].append(case)
    return found


def test_pages_match_their_generator():
    files = _generator().outputs()
    for path, text in files.items():
        assert path.read_text() == text, (
            f"{path.relative_to(ROOT)} is stale: run python proposal/spec/ops/make_op_pages.py")
    assert set(OPS_DIR.glob("*.md")) == set(files), "a page in proposal/spec/ops/ that the generator does not write"


def test_example_models_match_their_generator(tmp_path):
    make = load_script("examples/make_op_examples.py")
    make.main(tmp_path)
    committed = {p.name for p in (ROOT / "examples" / "ops").glob("*.onnx")}
    assert committed == {f"{name}.onnx" for name in make.EXAMPLES}
    for name in committed:
        assert (ROOT / "examples" / "ops" / name).read_bytes() == (tmp_path / name).read_bytes(), (
            f"examples/ops/{name} is stale: run python examples/make_op_examples.py")


def test_every_kernel_and_data_movement_operator_has_a_page():
    covered = _covered()
    assert set(KERNELS) <= set(covered), set(KERNELS) - set(covered)
    assert set(DATA_MOVEMENT) <= set(covered), set(DATA_MOVEMENT) - set(covered)
    for op, page in covered.items():
        assert f"`{op}`" in (OPS_DIR / page).read_text() or (OPS_DIR / page).read_text().startswith(f"# {op}"), op
    assert (OPS_DIR / "default.md").exists() and "(default.md)" in (OPS_DIR / "README.md").read_text()


def test_index_names_each_kernel_that_exists():
    for op, module in KERNELS.items():
        row = next(line for line in (OPS_DIR / "README.md").read_text().splitlines() if line.startswith(f"| {op} |"))
        assert f"`{module}.py`" in row and (ROOT / "reference_ops" / "ops" / f"{module}.py").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_structure_and_rule_citations(page):
    text = page.read_text()
    positions = [text.find(s) for s in SECTIONS]
    assert -1 not in positions and positions == sorted(positions), f"sections missing or out of order in {page.name}"
    constraints = text[text.find("## Constraints"):text.find("## Tolerance")]
    labels = re.findall(r"^- \(C(\d+)\) .* — (checked by .*|no rule checks this)\.$", constraints, re.M)
    assert [int(n) for n, _ in labels] == list(range(1, len(labels) + 1)) and labels
    for rule_id in set(RULE.findall(text)):
        rule = get_rule(rule_id)  # raises for an id that does not exist
        assert f"[{rule_id}](../validity.md#{rule_id.lower()}) `{rule.name}`" in text
    assert re.search(r"^\*\*(exact|one step|exact / one step|one step on near ties|exact / near ties / one step)\*\*", text, re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_cited_cases_exist_and_counts_are_right(page):
    text = page.read_text()
    cases = _cases()
    cited = CASE.findall(text)
    ops = re.findall(r"- Conformance, cases of operator (\w+): (\d+) ", text)
    assert len(cited) == len(ops)
    for case_id, (op, count) in zip(cited, ops, strict=True):
        case = json.loads((ROOT / "conformance_tests" / "cases" / "execution" / case_id / "case.json").read_text())
        assert case["operator"] == op
        assert int(count) == len(cases[op])
    # semantics.md#tolerance-table: an exact operator is exact in every expressed type, a one-step one is never
    # allowed more than one step alone (a chain case adds its inputs' tolerances by semantics.md#chains)
    limit = 0 if "**exact**" in text else 1 if "**one step**" in text else None
    for op in ops if limit is not None else ():
        for case in cases[op[0]]:
            # chains are tagged feature=chain (the untagged matmul-add-* cases are two-operator chains too)
            alone = "chain" not in str(case["tags"].get("feature", "")) and "-add-" not in case["id"]
            if alone:
                assert max(case["tolerance"].values(), default=0) <= limit, case["id"]


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        q = get_qtype(model, vi.name)
        if q is not None:
            feeds[vi.name] = rng.integers(q.storage_min, q.storage_max + 1, size=shape).astype(q.storage_type.np_dtype)
        elif vi.type.tensor_type.elem_type == onnx.TensorProto.BOOL:
            feeds[vi.name] = np.array(False)
        else:
            feeds[vi.name] = rng.normal(0, 2, shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_example_model_checks_clean_and_runs(page):
    text = page.read_text()
    names = EXAMPLE.findall(text)
    assert len(names) == 1, f"{page.name} names {names}"
    path = ROOT / "examples" / "ops" / names[0]
    assert path.exists()
    errors = [d for d in iter_diagnostics(str(path)) if d.severity == Severity.ERROR]
    assert errors == []
    model = load(path)
    feeds = _feeds(model)
    exact = ReferenceEvaluator(model).run(None, feeds)
    for out, vi in zip(exact, model.graph.output, strict=True):
        assert list(out.shape) == [d.dim_value for d in vi.type.tensor_type.shape.dim]
    page_ops = {op for op, p in _covered().items() if p == page.name}
    used = {n.op_type for n in model.graph.node}
    if page.name == "default.md":
        assert used - set(_covered()), "the default page's example uses only operators that have pages"
    else:
        assert used & page_ops, f"{names[0]} runs none of {sorted(page_ops)}"
    kernel_ops = used & page_ops & set(KERNELS)
    if not kernel_ops:
        return
    # the page's integer kernel runs on its example and stays within the page's tolerance class
    evaluator = ReferenceEvaluator(model, kernels="integer")
    integer = evaluator.run(None, feeds)
    ran = {node.op_type for node in model.graph.node if evaluator.kernel_log.get(node.name) == "integer"}
    assert kernel_ops <= ran, evaluator.kernel_log
    steps = 0 if "**exact**" in text else 1
    for a, b, vi in zip(exact, integer, model.graph.output, strict=True):
        if get_qtype(model, vi.name) is not None:
            assert np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)), initial=0) <= steps
