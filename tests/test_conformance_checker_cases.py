"""The checker conformance cases (conformance_tests/cases/checker): valid per case.schema.json, regenerated
byte for byte by their generator, one firing case and one near miss per rule, and met by our checker."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
from builders import ROOT, load_script

from onnx_qtypes import diagnose
from onnx_qtypes.checker import all_rules

FOLDER = ROOT / "conformance_tests" / "cases" / "checker"
SCHEMA = json.loads((ROOT / "conformance_tests" / "case.schema.json").read_text())
CASES = sorted(p.name for p in FOLDER.iterdir() if p.is_dir())


def _case(case_id: str) -> dict:
    return json.loads((FOLDER / case_id / "case.json").read_text())


def test_committed_cases_are_what_the_generator_writes(tmp_path):
    written = load_script("conformance_tests/generators/checker_cases.py").write(tmp_path / "checker")
    assert written == len(CASES)
    for case_id in CASES:
        for name in ("case.json", "model.onnx"):
            assert (tmp_path / "checker" / case_id / name).read_bytes() == (FOLDER / case_id / name).read_bytes(), (
                f"{case_id}/{name} is stale: run python conformance_tests/generators/checker_cases.py")


def test_every_rule_has_a_firing_case_and_a_near_miss():
    kinds = {(c["rule"], c["expect"]["fires"]) for c in map(_case, CASES)}
    for rule in all_rules():
        assert (rule.id, True) in kinds and (rule.id, False) in kinds, rule.id


@pytest.mark.parametrize("case_id", CASES)
def test_case_meets_the_schema_and_our_checker_meets_the_case(case_id):
    case = _case(case_id)
    jsonschema.validate(case, SCHEMA)
    assert case["id"] == case_id
    expect = case["expect"]
    found = list(diagnose((FOLDER / case_id / "model.onnx").read_bytes(), case.get("profile")).diagnostics)
    mine = [d for d in found if d.rule == case["rule"]]
    if not expect["fires"]:
        assert mine == []
        others = {"none": found, "no_errors": [d for d in found if d.is_error], "any": []}[expect["other_findings"]]
        assert others == [], [str(d) for d in others]
        return
    at = [d for d in mine if d.location.pointer == expect["pointer"]]
    assert at, [str(d) for d in found]
    assert all(at[0].location.to_dict()[k] == expect[k] for k in ("tensor", "node") if k in expect)
    assert expect.get("message_contains", "") in at[0].message


@pytest.mark.parametrize("generator", ["checker_cases", "reject_cases", "execution_cases", "gguf_cases"])
def test_a_generator_takes_help_and_never_empties_a_folder_of_other_things(tmp_path, generator):
    """``--help`` prints the usage and writes nothing (it was once taken as the folder to write); a folder that
    holds anything but case folders is refused with exit 2 and left as it was (the generator replaces its
    folder)."""
    script = ROOT / "conformance_tests" / "generators" / f"{generator}.py"
    shown = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, check=False)
    assert shown.returncode == 0 and "usage:" in shown.stdout, shown.stderr
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "notes.txt").write_text("mine")
    refused = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
                             timeout=120, check=False)
    assert refused.returncode == 2 and "case folders (first: 'notes.txt')" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"] and (tmp_path / "notes.txt").read_text() == "mine"
    if generator != "checker_cases":  # a folder of another generator's cases is not this one's to replace
        other = tmp_path / "other"
        (other / "QT101-case").mkdir(parents=True)
        (other / "QT101-case" / "case.json").write_text('{"kind": "checker"}')
        refused = subprocess.run([sys.executable, str(script), str(other)], capture_output=True, text=True,
                                 timeout=120, check=False)
        kind = "reject" if generator == "reject_cases" else "execution"
        assert refused.returncode == 2 and f"not {kind} case folders" in refused.stderr, refused.stderr
        assert (other / "QT101-case" / "case.json").is_file()
    link = tmp_path / "link"
    link.symlink_to(tmp_path, target_is_directory=True)
    refused = subprocess.run([sys.executable, str(script), str(link)], capture_output=True, text=True, timeout=120,
                             check=False)
    assert refused.returncode == 2 and "is a symbolic link" in refused.stderr and "Traceback" not in refused.stderr


def test_a_generator_that_fails_part_way_leaves_the_cases_as_they_were(tmp_path, monkeypatch):
    """Every generator writes into a new folder that takes the old one's place only once all is written: a case
    that fails to build, or a write that fails, leaves the committed cases as they were, with nothing beside them."""
    module = load_script("conformance_tests/generators/checker_cases.py")
    folder = tmp_path / "checker"
    assert module.write(folder) > 0
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    written = []

    def fails_part_way(data: bytes) -> int:
        if len(written) == 5:
            raise OSError("No space left on device")
        written.append(data)
        return len(data)

    monkeypatch.setattr(module.pathlib.Path, "write_bytes", lambda self, data: fails_part_way(data))
    with pytest.raises(OSError, match="No space"):
        module.write(folder)
    monkeypatch.undo()
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["checker"]
    assert module.write(folder) == len(CASES)  # and a write that succeeds replaces it, leaving nothing beside it
    assert [p.name for p in tmp_path.iterdir()] == ["checker"]
    (tmp_path / "made").mkdir()
    assert folder.stat().st_mode & 0o777 == (tmp_path / "made").stat().st_mode & 0o777  # not private, as mkdir makes
