"""SARIF 2.1.0: rule metadata from the registry, one result per finding.

Each result carries a stable ``ruleId``, its level, the model file as the
physical location (a binary artifact: no region), the JSON pointer into the
model as the logical location, and a fingerprint built from the rule and the
names of the node and tensor (not from list indices, so that inserting a node
elsewhere does not change it).
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import urllib.parse
from typing import Any

from onnx_qtypes.checker.diagnostics import Diagnostic, Location
from onnx_qtypes.checker.emit import Report, as_list
from onnx_qtypes.checker.registry import Rule, all_rules

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT = "onnxQtypesFinding/v1"


def _uri(model: str) -> str | None:
    if model.startswith("<"):
        return None  # bytes or an in-memory model: no file to point at
    path = pathlib.PurePath(model)
    if path.is_absolute():
        return pathlib.Path(model).as_uri()
    return urllib.parse.quote(path.as_posix())


def _rule(rule: Rule) -> dict[str, Any]:
    sections = rule.sections()
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": sections.get("What it checks", rule.summary)},
        "help": {"text": rule.doc, "markdown": rule.doc},
        "defaultConfiguration": {"level": rule.severity.value},
        "properties": {"tags": [rule.area], "spec": rule.spec},
    }


def _logical(location: Location) -> dict[str, Any]:
    out: dict[str, Any] = {"fullyQualifiedName": location.pointer}
    if location.tensor is not None:
        out.update(name=location.tensor, kind="variable")
    elif location.node is not None:
        out.update(name=location.node, kind="function")
    else:
        out["kind"] = "module"
    return out


def _location(location: Location, uri: str | None, artifact: int) -> dict[str, Any]:
    out: dict[str, Any] = {"logicalLocations": [_logical(location)]}
    if uri is not None:
        out["physicalLocation"] = {"artifactLocation": {"uri": uri, "index": artifact}}
    return out


def fingerprint(d: Diagnostic) -> str:
    loc = d.location
    field = loc.pointer.split("/type/tensor_type/", 1)[1] if "/type/tensor_type/" in loc.pointer else ""
    anchor = loc.pointer if loc.node is None and loc.tensor is None else field
    key = "|".join([d.rule, loc.node or "", loc.tensor or "", anchor])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def document(reports: Report | list[Report]) -> dict[str, Any]:
    """One run over every model checked in one call: one artifact per model file, one result per finding."""
    from onnx_qtypes import __version__

    reports = as_list(reports)
    rules = all_rules()
    index = {r.id: i for i, r in enumerate(rules)}
    artifacts: list[dict[str, Any]] = []
    results = []
    notes = []
    for report in reports:
        uri = _uri(report.model)
        artifact = len(artifacts)
        if uri is not None:
            artifacts.append({"location": {"uri": uri}, "mimeType": "application/octet-stream"})
        notes.extend({"level": "note", "message": {"text": f"{report.model}: {note}"}} for note in report.notes)
        for d in report.diagnostics:
            result: dict[str, Any] = {
                "ruleId": d.rule,
                "ruleIndex": index[d.rule],
                "level": d.severity.value,
                "message": {"text": d.message},
                "locations": [_location(d.location, uri, artifact)],
                "partialFingerprints": {FINGERPRINT: fingerprint(d)},
            }
            if d.related:
                result["relatedLocations"] = [
                    {"id": i + 1, **_location(r, uri, artifact), "message": {"text": f"also at {r.pointer}"}}
                    for i, r in enumerate(d.related)
                ]
            results.append(result)
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "onnx-qtypes", "version": __version__, "rules": [_rule(r) for r in rules]}},
        "results": results,
        "properties": {"profile": reports[0].profile if reports else "generic"},
    }
    if notes:
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": notes}]
    if artifacts:
        run["artifacts"] = artifacts
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render(reports: Report | list[Report]) -> str:
    return json.dumps(document(reports), indent=2) + "\n"
