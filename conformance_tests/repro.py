"""Repro bundles (``onnx-qtypes conformance --save-repro DIR``): one folder per failing or erroring case, what a
vendor attaches to a bug.

``DIR/<case id>/`` holds:

- ``case.json``, ``model.onnx`` (and ``model.qdq.onnx``) and ``test_data_set_0/`` copied from the case, so the folder
  is itself a case: ``onnx-qtypes conformance --backend B --cases DIR/<case id>`` reruns exactly it;
- ``inputs.npz``, ``expected.npz`` and, when the backend returned outputs, ``actual.npz`` (float8 / float4 values
  as float32, exactly; ``repro.json`` names their types);
- ``repro.json``: the outcome and message, the model the backend ran, the tolerance and why, the worst elements
  (index, expected, actual, steps), the suite (package version, digest), the runtime and its version, the
  platform, and the commands below;
- ``repro.py``: runs the runtime on the inputs without the suite where it can (onnxruntime, OpenVINO and the
  reference directly; other backends through their class on this folder) and prints how far each output is
  from the expected one; ``README.txt``: the one-line commands.

A folder is written beside its final name and renamed into place, so DIR never holds a half-written bundle.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from onnx_qtypes.proto.errors import QTypesError

from .backends import backend_version
from .execution_cases import DATA_SET, Case
from .judging import FLOAT_GRIDS
from .reports import environment
from .runner import CaseResult, backend_form
from .text import clean_text


class ReproError(QTypesError):
    """A repro bundle cannot be written."""


_SUB_BYTE_TYPES = {21, 22, 25, 26}  # onnx UINT4, INT4, UINT2, INT2: numpy cannot hand these to a runtime directly


def save_bundle(root: str | Path, result: CaseResult, case: Case, backend: Any, spec: str, *,
                suite: Mapping[str, Any] | None = None, suite_root: str | None = None) -> Path:
    """Write the bundle of one failing or erroring case under ``root``; returns its folder."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{case.id}.", dir=root))
    except OSError as exc:
        raise ReproError(f"--save-repro {root}: cannot write there ({exc.strerror or exc})") from None
    target = root / case.id
    try:
        _fill(work, result, case, backend, spec, suite, suite_root, target)
        _replace(work, target)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise ReproError(f"--save-repro {target}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def _replace(work: Path, target: Path) -> None:
    """``work`` renamed to ``target``, an older ``target`` moved aside first and removed after."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        target.rename(old / "bundle")
    work.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _npz_form(arrays: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Arrays numpy's .npz can hold (float8 / float4 as float32, exactly) and the types they stand for."""
    out, types = {}, {}
    for name, value in arrays.items():
        value = np.asarray(value)
        if value.dtype.name in FLOAT_GRIDS:
            types[name] = value.dtype.name
            value = value.astype(np.float32)
        out[name] = value
    return out, types


def _fill(work: Path, result: CaseResult, case: Case, backend: Any, spec: str, suite: Mapping[str, Any] | None,
          suite_root: str | None, target: Path) -> None:
    shutil.copy2(case.folder / "case.json", work / "case.json")
    for path in (case.model_path, case.qdq_model_path):
        if path is not None and path.is_file():
            shutil.copy2(path, work / path.name)
    if (case.folder / DATA_SET).is_dir():
        shutil.copytree(case.folder / DATA_SET, work / DATA_SET)
    feeds, expected = case.feeds(), case.expected()
    types: dict[str, str] = {}
    for file, arrays in (("inputs.npz", feeds), ("expected.npz", expected), ("actual.npz", result.actual)):
        if arrays is None:
            continue
        try:
            plain, found = _npz_form(dict(arrays))
        except Exception:  # a backend's "array" numpy cannot take: the message says what it was
            continue
        types.update(found)
        np.savez(work / file, **plain)
    form = backend_form(backend)
    model = case.model_file(form) if form else None
    name, version = clean_text(getattr(backend, "name", spec) or spec), backend_version(backend)
    in_suite = f"onnx-qtypes conformance --backend {spec}" + (f" --cases {suite_root}" if suite_root else "")
    commands = {"rerun this folder": f"onnx-qtypes conformance --backend {spec} --cases {target}",
                "rerun in the suite": f"{in_suite} --id {case.id}",
                "standalone": f"python {target / 'repro.py'}"}
    info = {
        "id": case.id, "kind": case.kind, "outcome": result.outcome, "reason_class": result.reason_class,
        "message": result.message, "model_run": model.name if model else "model.onnx or model.qdq.onnx (the backend "
                                                                             "does not say which it runs)",
        "tolerance": dict(case.tolerance), "tolerance_reason": getattr(case, "tolerance_reason", ""),
        "max_steps": result.to_json()["max_steps"], "elements_beyond_tolerance": result.elements,
        "worst_elements": result.deviations, "npz_types": types,
        "suite": dict(suite or {}), "runtime": {"backend": name, "version": version, "spec": spec},
        "environment": {**environment(), "numpy": np.__version__}, "commands": commands,
    }
    if case.kind == "reject":
        info["must_refuse"] = {"rule": case.rule, "reason": case.reason}
    (work / "repro.json").write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    script, standalone = _script(backend, spec, case, model)
    (work / "repro.py").write_text(script, encoding="utf-8")
    lines = [f"{case.id}: {result.outcome} on {name} {version}".rstrip(), result.message, "",
             f"standalone ({'the runtime alone' if standalone else 'the backend class on this folder'}):",
             f"  {commands['standalone']}", "this folder as a case:", f"  {commands['rerun this folder']}",
             "in the installed suite:", f"  {commands['rerun in the suite']}", ""]
    (work / "README.txt").write_text("\n".join(lines), encoding="utf-8")


_HEAD = '''"""Reproduce conformance case {id} on {label}{how}.

Run: python repro.py   (prints each output's largest deviation from the expected one; repro.json has the rest)
"""
import json
import pathlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
INFO = json.loads((HERE / "repro.json").read_text())


def load(name):
    """An .npz of this folder, float8 / float4 arrays back in their own types (ml_dtypes)."""
    arrays = dict(np.load(HERE / name)) if (HERE / name).exists() else {{}}
    for key, dtype in INFO["npz_types"].items():
        if key in arrays:
            import ml_dtypes
            arrays[key] = arrays[key].astype(getattr(ml_dtypes, dtype))
    return arrays


feeds, expected = load("inputs.npz"), load("expected.npz")
'''

_TAIL = '''
if not expected:  # a must-reject case: any outputs at all are the bug
    print(f"returned {{sorted(outputs)}} for a model a reader must refuse ({{INFO['must_refuse']['rule']}}: "
          f"{{INFO['must_refuse']['reason']}})")
for name, want in expected.items():
    got = np.asarray(outputs[name]) if name in outputs else None
    if got is None:
        print(f"{{name}}: missing")
        continue
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    largest = np.nanmax(diff) if diff.size else 0
    print(f"{{name}}: {{got.dtype}} {{list(got.shape)}}, largest |actual - expected| = {{largest}}"
          f" (tolerance {{INFO['tolerance'].get(name, 0)}} step(s))")
'''

_RUNNERS = {
    "onnxruntime": '''import onnxruntime as ort

options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.{level}
session = ort.InferenceSession(str(HERE / "{model}"), options, providers=["CPUExecutionProvider"])
names = [o.name for o in session.get_outputs()]
outputs = dict(zip(names, session.run(names, feeds)))
''',
    "openvino": '''import openvino as ov

core = ov.Core()
compiled = core.compile_model(core.read_model(str(HERE / "{model}")), "CPU")
request = compiled.create_infer_request()
request.infer(feeds)
outputs = {{name: request.get_output_tensor(k).data.copy() for k, port in enumerate(compiled.outputs)
           for name in port.get_names() if name in expected}}
''',
    "reference": '''from onnx_qtypes.reference_ops import ReferenceEvaluator

evaluator = ReferenceEvaluator(str(HERE / "{model}"), kernels="{kernels}")
names = list(expected)
outputs = dict(zip(names, evaluator.run(names, feeds)))
''',
}

_GENERIC = '''from onnx_qtypes.conformance import load_backend, load_case

case = load_case(HERE)
backend = load_backend({spec!r})
outputs = backend.run(backend.prepare(case), feeds)
'''


def _sub_byte_io(model: Path | None) -> bool:
    if model is None or not model.is_file():
        return True
    import onnx

    graph = onnx.load(str(model), load_external_data=False).graph
    return any(v.type.tensor_type.elem_type in _SUB_BYTE_TYPES for v in (*graph.input, *graph.output))


def _script(backend: Any, spec: str, case: Case, model: Path | None) -> tuple[str, bool]:
    """The repro.py text, and whether it runs the runtime without the suite."""
    from .backends import OnnxRuntimeBackend, OpenVinoBackend, ReferenceBackend

    name, version = clean_text(getattr(backend, "name", spec) or spec), backend_version(backend)
    body, standalone = None, False
    if model is not None and case.kind != "reject":
        if isinstance(backend, ReferenceBackend):
            body = _RUNNERS["reference"].format(model=model.name, kernels=backend.kernels)
        elif isinstance(backend, OnnxRuntimeBackend) and not _sub_byte_io(model):
            level = "ORT_ENABLE_ALL" if backend.optimize else "ORT_DISABLE_ALL"
            body = _RUNNERS["onnxruntime"].format(model=model.name, level=level)
        elif isinstance(backend, OpenVinoBackend) and not _sub_byte_io(model):
            body = _RUNNERS["openvino"].format(model=model.name)
        standalone = body is not None
    if body is None:
        body = _GENERIC.format(spec=spec)
    how = " without the conformance suite" if standalone else f" through its backend ({spec})"
    head = _HEAD.format(id=case.id, label=f"{name} {version}".strip(), how=how)
    return head + "\n" + body + _TAIL.format(), standalone
