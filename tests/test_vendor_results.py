"""The recorded vendor results (conformance_tests/vendor_results/*.json) are well formed, their
reproductions still build, and the reference column of every record is what our reference computes
today. The vendor's own columns are measured data, never asserted: a new onnxruntime release only
adds a record (``.ci/latest`` regenerates it), it cannot fail this file."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import sys

import numpy as np
import onnx
import pytest
from builders import ROOT

from onnx_qtypes import quantized_tensors

FOLDER = ROOT / "conformance_tests" / "vendor_results"
RECORDS = sorted(FOLDER.glob("onnxruntime-*.json"))


@functools.cache
def script():
    spec = importlib.util.spec_from_file_location("record_onnxruntime", FOLDER / "record_onnxruntime.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@functools.cache
def built(rid: str):
    return script().REPRODUCTIONS[rid]()


def _needs_vendor_tools(rid: str) -> None:
    if rid.startswith("qdq-16bit-fused-corpus"):
        pytest.importorskip("onnxruntime.quantization")  # the corpus is written by onnxruntime's quantizer


def _entries():
    for path in RECORDS:
        for entry in json.loads(path.read_text())["deviations"]:
            yield pytest.param(path, entry, id=f"{path.stem}:{entry['id']}")


def test_there_is_a_record():
    assert RECORDS, "no conformance_tests/vendor_results/onnxruntime-*.json"


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.name)
def test_record_is_well_formed(path):
    text = path.read_text()
    document = json.loads(text, parse_constant=lambda c: pytest.fail(f"{path.name}: {c} is not JSON"))
    module = script()
    assert set(module.REQUIRED_KEYS) <= set(document), set(module.REQUIRED_KEYS) - set(document)
    assert document["format"] == module.FORMAT
    assert document["vendor"] == "onnxruntime"
    assert path.name == f"onnxruntime-{document['version']}.json"
    assert isinstance(document["environment"], dict) and document["environment"]["provider"]
    ids = [e["id"] for e in document["deviations"]]
    assert len(ids) == len(set(ids)) and ids, ids
    for entry in document["deviations"]:
        missing = set(module.DEVIATION_KEYS) - set(entry)
        assert not missing, (entry["id"], missing)
        assert entry["id"] in module.REPRODUCTIONS, f"{entry['id']}: no reproduction in record_onnxruntime.py"
        assert entry["reproduction"]["function"].endswith(":" + module.REPRODUCTIONS[entry["id"]].__name__)
        step = entry["step"]
        assert isinstance(step, (int, float)) and step > 0
        for path_name in ("unoptimized", "optimized"):
            result, steps, verdict = entry[path_name], entry["max_steps"][path_name], entry["verdict"][path_name]
            assert verdict in ("agrees", "deviates", "fails")
            if isinstance(result, dict):  # the vendor refused the model
                assert set(result) == {"error"} and steps is None and verdict == "fails"
                continue
            # the record is consistent with itself (its own numbers, whatever the vendor computed)
            ours, theirs = np.asarray(entry["reference"], np.float64), np.asarray(result, np.float64)
            assert ours.shape == theirs.shape
            measured = float(np.abs(np.rint(ours / step) - np.rint(theirs / step)).max()) if ours.size else 0.0
            assert math.isclose(measured, steps), (entry["id"], path_name, measured, steps)
            assert verdict == ("agrees" if steps <= document["tolerance_steps"] else "deviates")


@pytest.mark.parametrize("rid", sorted(script().REPRODUCTIONS))
def test_reproduction_builds_as_plain_onnx(rid):
    _needs_vendor_tools(rid)
    repro = built(rid)
    onnx.checker.check_model(repro.vendor_model, full_check=True)
    assert not quantized_tensors(repro.vendor_model), "a vendor model carries no extension fields"
    assert repro.vendor_model.ir_version == 10
    inputs = {i.name: i.type.tensor_type.elem_type for i in repro.vendor_model.graph.input}
    assert set(repro.feeds) == set(inputs)
    for name, value in repro.feeds.items():
        assert onnx.helper.np_dtype_to_tensor_dtype(value.dtype) == inputs[name]
    assert repro.output in {o.name for o in repro.vendor_model.graph.output}


@pytest.mark.parametrize(("path", "entry"), list(_entries()))
def test_recorded_reference_is_what_our_reference_computes(path, entry):
    _needs_vendor_tools(entry["id"])
    module = script()
    repro = built(entry["id"])
    if entry["reproduction"]["vendor_dependent_model"] and \
            entry["reproduction"]["model_sha256"] != module.model_sha256(repro.vendor_model):
        pytest.skip(f"{entry['id']}: the installed onnxruntime quantizer writes another model than {path.name}'s")
    current = module.reproduction_record(entry["id"], repro)
    assert current["reproduction"]["inputs"] == entry["reproduction"]["inputs"], \
        f"{entry['id']}: the reproduction changed; regenerate {path.name} (record_onnxruntime.py)"
    assert current["reference"] == entry["reference"], \
        f"{entry['id']}: our reference computes another result than {path.name} records"
