"""Hardware profiles: the shipped ones are valid, cite sources, tighten without dropping, accept fitting models."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from builders import ROOT
from checker_models import concat_model, conv_model, int8, one_tensor, qmsg

from onnx_qtypes import QType
from onnx_qtypes.checker import ProfileError, all_rules, builtin_names, iter_diagnostics, load_profile
from onnx_qtypes.checker.profile import schema
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import STORAGE_TYPES

BUILT_INS = ["ethos-u-vela", "generic", "pow2-int8", "qnn-htp", "symmetric-int8", "tensorrt-int8", "tflite-int8",
             "vitis-ai-dpu"]


def test_the_schema_names_every_storage_type_and_schema_of_the_extension():
    """profile.schema.json spells the storage types and schemas out (JSON Schema cannot import them): it must keep
    up with proto/storage_types.py, as when float storage was added."""
    defs = schema()["$defs"]
    assert defs["storage"]["enum"] == list(STORAGE_TYPES)
    assert defs["schema"]["enum"] == [s.name.lower() for s in Schema]


def test_the_built_in_profiles_ship_and_validate():
    assert builtin_names() == BUILT_INS
    jsonschema.Draft202012Validator.check_schema(schema())
    validator = jsonschema.Draft202012Validator(schema())
    for name in BUILT_INS:
        document = json.loads((ROOT / "checker" / "profiles" / f"{name}.json").read_text())
        validator.validate(document)
        profile = load_profile(name)
        assert profile.name == name
        assert profile.sources and all(s["url"].startswith("https://") for s in profile.sources)


def test_profiles_md_documents_every_built_in():
    text = (ROOT / "proposal" / "spec" / "profiles.md").read_text()
    for name in BUILT_INS:
        assert f'<a id="{name}"></a>' in text


@pytest.mark.parametrize("name", BUILT_INS)
def test_every_profile_keeps_every_extension_rule(name):
    """A profile adds checks; it never drops one (QT101 still fires, at its default severity or above)."""
    found = [d for d in iter_diagnostics(one_tensor(qmsg(scale=[0.0])), name) if d.rule == "QT101"]
    assert found and found[0].is_error
    rules = {r.id: r for r in all_rules()}
    for rule_id, severity in load_profile(name).severity.items():
        assert severity.rank >= rules[rule_id].severity.rank


def _pow2_conv():
    bias = QType("int32", 2.0**-6 * 2.0**-7, 0)
    return conv_model(x_q=int8(2.0**-6, 0), y_q=int8(2.0**-4, 0), w_q=int8(2.0**-7, 0), bias=bias)


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("tflite-int8", conv_model),
        ("symmetric-int8", lambda: conv_model(y_q=int8(0.05, 0))),
        ("pow2-int8", _pow2_conv),
    ],
)
def test_each_profile_accepts_a_model_built_for_it(name, build):
    errors = [str(d) for d in iter_diagnostics(build(), name) if d.is_error]
    assert errors == []


@pytest.mark.parametrize(
    ("name", "rules"),
    [
        ("tflite-int8", {"QT401", "QT506"}),
        ("symmetric-int8", set()),
        ("pow2-int8", {"QT505", "QT506"}),
    ],
)
def test_concat_with_different_scales_per_profile(name, rules):
    model = concat_model([0.1, 0.3], 0.3)
    errors = {d.rule for d in iter_diagnostics(model, name) if d.is_error}
    assert errors == rules


def test_profile_as_dict_and_as_object():
    doc = {"name": "acc16", "description": "16-bit accumulators", "sources": [], "accumulator_bits": 16}
    profile = load_profile(doc)
    assert profile.accumulator_bits == 16 and load_profile(profile) is profile
    with pytest.raises(ProfileError, match="expected a name, a path or a Profile"):
        load_profile(3.5)  # type: ignore[arg-type]


def test_blocked_sizes_restrict_granularity():
    doc = {"name": "blocks", "description": "blocks of 32 only", "sources": [],
           "roles": {"activation": {"granularity": {"blocked": [32]}}}}
    blocked = qmsg(scale=[0.5] * 4, zero_point=[0] * 4, axis=1, block_size=2)
    found = [d for d in iter_diagnostics(one_tensor(blocked, shape=(2, 4)), doc) if d.rule == "QT503"]
    assert [d.location.pointer for d in found] == ["/graph/input/0/type/tensor_type/quantization/block_size"]
    assert "[32]" in found[0].message


def test_storage_range_bound_reads_declared_range_for_activations():
    doc = {"name": "narrow", "description": "activations in [-127, 127]", "sources": [],
           "roles": {"activation": {"storage": [{"type": "int8", "min": -127, "max": 127}]}}}
    full = [d.rule for d in iter_diagnostics(one_tensor(int8()), doc)]
    narrow = [d.rule for d in iter_diagnostics(one_tensor(int8(storage_min=-127)), doc)]
    assert full == ["QT501"] and narrow == []
    assert np.iinfo(np.int8).min == -128  # the full range is what the first type declares
