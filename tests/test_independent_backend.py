"""An implementation written from the specification alone (proposal/experiments/independent_backend/) passes
the whole suite, and a deliberate mistake in any one feature of the type fails at least one case: the text
and the suite agree, and the suite sees each feature (issue 19)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from builders import ROOT

BACKEND = f"{ROOT / 'proposal/experiments/independent_backend/mybackend.py'}:MyBackend"


def _run(tmp_path, mutation: str = "", *select: str) -> dict:
    report = tmp_path / f"report-{mutation or 'none'}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")} | {"CLEANROOM_MUTATE": mutation}
    done = subprocess.run([sys.executable, "-m", "onnx_qtypes", "conformance", "--backend", BACKEND, "-q", "-j", "2",
                           "--report", str(report), *select], capture_output=True, text=True, env=env, timeout=600)
    assert report.is_file(), done.stderr
    data = json.loads(report.read_text())
    return {c["id"]: c["outcome"] for c in data["cases"]}


def test_the_independent_implementation_passes_every_case(tmp_path):
    outcomes = _run(tmp_path)
    assert len(outcomes) > 1300 and any(i.startswith("reject-") for i in outcomes)
    assert {i: o for i, o in outcomes.items() if o != "pass"} == {}


@pytest.mark.parametrize(("mutation", "select"), [
    ("no-per-axis", "per-axis"),
    ("no-narrow", "narrowed"),
    ("ignore-version", "reject-v"),
    ("ref-reversed", "by-reference"),
    ("round-scale", "int32-saturation"),
    ("companion-1d", "dynamic-graph-output"),
    ("companion-int64", "dynamic-graph-output"),
    ("strict-version-field", "version-1"),
])
def test_a_mistake_in_one_feature_fails_a_case(tmp_path, mutation, select):
    outcomes = _run(tmp_path, mutation, "-k", select)
    assert outcomes and any(o != "pass" for o in outcomes.values()), outcomes
