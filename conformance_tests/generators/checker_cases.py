"""Write the checker conformance cases: for every validity rule, models that must fire it at a given place and
near misses that must not (run: python conformance_tests/generators/checker_cases.py [OUT_DIR]).

The models are the checker's own test cases (tests/checker_models.py), written byte for byte as built, so that
another validator can test itself against the same files: conformance_tests/cases/checker/<id>/ holds
case.json (case.schema.json) and model.onnx. tests/test_conformance_checker_cases.py regenerates them and fails
when the committed files drift.
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = ROOT / "conformance_tests" / "cases" / "checker"


def case_documents() -> dict[str, tuple[dict, bytes]]:
    """Case id -> (case.json document, model bytes)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import checker_models  # noqa: PLC0415 (the test builders)
    finally:
        sys.path.pop(0)
    from onnx_qtypes.checker import get_rule  # noqa: PLC0415

    out: dict[str, tuple[dict, bytes]] = {}
    for case in checker_models.cases():
        rule = get_rule(case.rule)
        case_id = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{case.rule}-{'fires' if case.fires else 'near-miss'}-{case.id}")
        expect: dict = {"fires": case.fires}
        if case.fires:
            expect["pointer"] = case.pointer
            for key, value in (("tensor", case.tensor), ("node", case.node), ("message_contains", case.message)):
                if value is not None:
                    expect[key] = value
        else:
            expect["other_findings"] = ("none" if case.quiet else "no_errors") if case.clean else "any"
        doc = {
            "id": case_id,
            "kind": "checker",
            "rule": case.rule,
            "description": f"{rule.name}: {rule.summary}",
            "spec": rule.spec,
            "model": "model.onnx",
            "expect": expect,
        }
        if case.profile is not None:
            doc["profile"] = case.profile
        if case_id in out:
            raise ValueError(f"two checker cases named {case_id}")
        out[case_id] = (doc, case.build().SerializeToString())
    return out


def write(folder: pathlib.Path = CASES) -> int:
    """Replace ``folder`` with every case; returns how many were written."""
    documents = case_documents()
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    try:
        from execution_gen.common import replacing  # noqa: PLC0415 (beside this file)
    finally:
        sys.path.pop(0)
    with replacing(folder) as new:
        for case_id, (doc, model) in documents.items():
            target = new / case_id
            target.mkdir(parents=True)
            (target / "case.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            (target / "model.onnx").write_bytes(model)
    return len(documents)


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from execution_gen.common import output_folder  # noqa: PLC0415 (beside this file)

    out = output_folder(__doc__, CASES, "checker")
    print(f"{write(out)} checker cases in {out}")
