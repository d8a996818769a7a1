"""Repro bundles (``onnx-qtypes conformance --save-repro DIR``): one folder per failing or erroring case, what a
vendor attaches to a bug. Each folder is self-contained: it can be moved, zipped, and run from anywhere.

``DIR/<case id>/`` holds:

- ``case.json``, ``model.onnx`` (and ``model.qdq.onnx``) and ``test_data_set_0/`` copied from the case, so the folder
  is itself a case: ``onnx-qtypes conformance --backend B --cases .`` in it reruns exactly it;
- ``inputs.npz``, ``expected.npz`` and, when the backend returned outputs, ``actual.npz`` (float8 / float4 /
  bfloat16 values as float32, exactly; ``repro.json`` names their types), ``steps.npz`` where a float output's
  quantization step varies over it;
- ``repro.json``: the outcome and message, the model the backend ran, the tolerance and why, how each output is
  judged, the worst elements (index, expected, actual, steps), the suite (package version, digest), the runtime and
  its version, the platform, and the commands below;
- ``repro.py``: runs the runtime on the inputs, judges every output as the suite does, prints how far each is, and
  exits 1 when the failure reproduces, 0 when it does not (2: it could not run). Without the suite where it can
  (onnxruntime, OpenVINO, the reference, on models whose inputs and outputs numpy holds); otherwise through the
  backend class: a backend given as a file (``my_backend.py:MyBackend``, or a module found as one file) is copied
  into ``backend/``; a module of a package is loaded from the folder recorded in repro.json (README.txt says so);
- for a results folder (``results:DIR``): ``results/<case id>/`` holds what the runtime wrote, and README.txt the
  command the runtime's own runner must run to write it again; ``repro.py`` judges what is there;
- ``README.txt``: the one-line commands.

A folder is written beside its final name and renamed into place, so DIR never holds a half-written bundle.
"""

from __future__ import annotations

import inspect
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.storage_types import SUB_BYTE_WIDENED

from . import judging
from .backends import BOUND_BY_TYPE, ResultsBackend, backend_version
from .execution_cases import DATA_SET, Case, widen
from .judging import FLOAT_GRIDS, float_steps, is_float, step_array
from .reports import environment
from .runner import CaseResult, backend_form
from .text import clean_text


class ReproError(QTypesError):
    """A repro bundle cannot be written."""


BACKEND_FOLDER = "backend"  # a file-based backend module, copied
RESULTS_FOLDER = "results"  # a results folder's files for this case, copied


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
        _fill(work, result, case, backend, spec, suite, suite_root)
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
    """Arrays numpy's .npz can hold (float8 / float4 / bfloat16 as float32, exactly) and the types they stand for."""
    out, types = {}, {}
    for name, value in arrays.items():
        value = np.asarray(value)
        if value.dtype.name in FLOAT_GRIDS or value.dtype == ml_dtypes.bfloat16:
            types[name] = value.dtype.name
            value = value.astype(np.float32)
        out[name] = value
    return out, types


def _judging(case: Case, expected: Mapping[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """How repro.py judges each output (the suite's judging: tolerance, the step of a float output, the mode), and
    the steps that vary over an output (steps.npz)."""
    steps = float_steps(case) if any(is_float(np.asarray(v).dtype) for v in expected.values()) else {}
    judging, varying = {}, {}
    for name, want in expected.items():
        step = step_array(steps.get(name), np.shape(want)) if is_float(np.asarray(want).dtype) else None
        if isinstance(step, np.ndarray):
            varying[name] = np.broadcast_to(step, np.shape(want)).astype(np.float64)
            step = "steps.npz"
        judging[name] = {"tolerance": case.tolerance.get(name, 0), "step": step,
                         "mode": getattr(case, "judge", {}).get(name, "value")}
    return judging, varying


def _fill(work: Path, result: CaseResult, case: Case, backend: Any, spec: str, suite: Mapping[str, Any] | None,
          suite_root: str | None) -> None:
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
    judging, varying = _judging(case, expected)
    if varying:
        np.savez(work / "steps.npz", **varying)
    form = backend_form(backend)
    model = case.model_file(form) if form else None
    name, version = clean_text(getattr(backend, "name", spec) or spec), backend_version(backend)
    source = _backend_source(backend, spec, work, case.id)
    in_suite = f"onnx-qtypes conformance --backend {spec}" + (f" --cases {suite_root}" if suite_root else "")
    commands = {"standalone": "python repro.py",
                "rerun this folder": f"onnx-qtypes conformance --backend {source['spec']} --cases .",
                "rerun in the suite": f"{in_suite} --id {case.id}"}
    if isinstance(backend, ResultsBackend):
        commands["runtime"] = _results_step(case, model)
    info = {
        "id": case.id, "kind": case.kind, "outcome": result.outcome, "reason_class": result.reason_class,
        "message": result.message, "model_run": model.name if model else "model.onnx or model.qdq.onnx (the backend "
                                                                             "does not say which it runs)",
        "tolerance": dict(case.tolerance), "tolerance_reason": getattr(case, "tolerance_reason", ""),
        "judging": judging, "max_steps": result.to_json()["max_steps"], "elements_beyond_tolerance": result.elements,
        "worst_elements": result.deviations, "npz_types": types,
        "suite": dict(suite or {}), "runtime": {"backend": name, "version": version, "spec": spec},
        "backend_source": source["about"], "environment": {**environment(), "numpy": np.__version__},
        "commands": commands, "exit_status": {"0": "the failure does not reproduce", "1": "it reproduces",
                                               "2": "repro.py could not run"},
    }
    if case.kind == "reject":
        info["must_refuse"] = {"rule": case.rule, "reason": case.reason}
    (work / "repro.json").write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    script, standalone = _script(backend, spec, case, model, source)
    (work / "repro.py").write_text(script, encoding="utf-8")
    how = ("the runtime alone" if standalone else "what the runtime's runner wrote, judged"
           if isinstance(backend, ResultsBackend) else "the backend class on this folder")
    lines = [f"{case.id}: {result.outcome} on {name} {version}".rstrip(), result.message, ""]
    if "runtime" in commands:
        lines += ["1. the runtime's own runner writes its outputs again:", f"  {commands['runtime']}",
                  "2. judge them (exit 1: the failure reproduces; 0: it does not):", "  python repro.py", ""]
    else:
        lines += [f"standalone, in this folder ({how}; exit 1: the failure reproduces, 0: it does not):",
                  f"  {commands['standalone']}"]
    lines += ["this folder as a case, from inside it:", f"  {commands['rerun this folder']}",
              "in the suite it came from:", f"  {commands['rerun in the suite']}"]
    if source["note"]:
        lines += ["", source["note"]]
    (work / "README.txt").write_text("\n".join(clean_text(line) for line in lines) + "\n", encoding="utf-8")


def _results_step(case: Case, model: Path | None) -> str:
    """What a runtime outside Python must do to write this case's results again, in this bundle."""
    model_name = model.name if model else ("model.qdq.onnx" if case.qdq_model_path is not None else "model.onnx")
    inputs = ", ".join(f"{DATA_SET}/input_{k}.pb ({n})" for k, n in enumerate(case.inputs))
    outputs = ", ".join(f"{RESULTS_FOLDER}/{case.id}/{DATA_SET}/output_{k}.pb ({n})" for k, n in
                        enumerate(case.outputs))
    return (f"run {model_name} (or model.onnx, whichever your runtime reads) on {inputs or 'no inputs'}, and write "
            f"{outputs or 'nothing'}; or its error message into {RESULTS_FOLDER}/{case.id}/error.txt")


def _backend_source(backend: Any, spec: str, work: Path, case_id: str) -> dict[str, str]:
    """How the bundle finds the backend: {"spec": what load_backend takes from inside the bundle, "about": for
    repro.json, "note": a line for README.txt, "path": a folder repro.py puts on sys.path}. A backend module that is
    one file is copied into backend/; a module of a package is loaded from its folder (recorded, not copied); a
    results folder's files for this case are copied into results/."""
    out = {"spec": spec, "about": "a backend onnx_qtypes names", "note": "", "path": ""}
    if isinstance(backend, ResultsBackend):
        return _copy_results(backend, work, out, case_id)
    if spec.startswith("results:") or ":" not in spec:
        return out
    module_name, _, attr = spec.rpartition(":")
    if module_name.endswith(".py"):
        file, dotted = Path(module_name).resolve(), False
    else:
        module = sys.modules.get(module_name)
        file, dotted = Path(getattr(module, "__file__", "") or "."), "." in module_name
    if not file.is_file():
        out.update(about=f"{spec}: the module's file was not found; repro.py imports {module_name} as it is",
                   note=f"The backend {spec} is imported by name: install it, or run where it is found.")
        return out
    if dotted or file.name == "__init__.py":
        depth = module_name.count(".") + (1 if file.name == "__init__.py" else 0)
        root = file.parents[depth]
        out.update(about=f"{spec}: a module of a package, loaded from {root} (not copied)", path=str(root),
                   note=f"The backend {spec} is loaded from {root}, not copied: keep it there, or install it.")
        return out
    (work / BACKEND_FOLDER).mkdir()
    shutil.copy2(file, work / BACKEND_FOLDER / file.name)
    out.update(spec=f"{BACKEND_FOLDER}/{file.name}:{attr}", path=str(file.parent),
               about=f"{spec}: {file} copied to {BACKEND_FOLDER}/{file.name}; modules beside it are imported from "
                     f"{file.parent}")
    return out


def _copy_results(backend: ResultsBackend, work: Path, out: dict[str, str], case_id: str) -> dict[str, str]:
    target = work / RESULTS_FOLDER
    target.mkdir()
    source = backend.folder / case_id
    if source.is_dir():
        shutil.copytree(source, target / case_id)
    for name in (backend.NAME_FILE, *backend.VERSION_FILES):
        if (backend.folder / name).is_file():
            shutil.copy2(backend.folder / name, target / name)
    if not (target / backend.NAME_FILE).exists():
        (target / backend.NAME_FILE).write_text(backend.name + "\n", encoding="utf-8")
    out.update(spec=f"results:{RESULTS_FOLDER}", about=f"results:{backend.folder.resolve()}: this case's files copied "
               f"to {RESULTS_FOLDER}/{case_id}")
    return out


# what a repro script judges with: the suite's functions themselves, by source (numpy only), so that it judges as
# judge_output does (tests/test_repro_judging.py runs both on the same outputs)
JUDGING_SOURCE = "\n\n".join(inspect.getsource(f) for f in (
    widen, judging.grid_position, judging.element_steps, judging.in_scale_steps, judging.beyond_tolerance,
    judging.not_positive_finite))
_SUB_BYTE_SOURCE = "{" + ", ".join(f"{k!r}: np.{v.name}" for k, v in SUB_BYTE_WIDENED.items()) + "}"

_HEAD = '''"""Reproduce conformance case {id} on {label}{how}.

Run: python repro.py   (prints each output's deviation in steps; exit 1: the failure reproduces, 0: it does not,
2: this script could not run; repro.json has the rest)
"""
import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
INFO = json.loads((HERE / "repro.json").read_text())


def load(name):
    """An .npz of this folder, float8 / float4 / bfloat16 arrays back in their own types (ml_dtypes)."""
    arrays = dict(np.load(HERE / name)) if (HERE / name).exists() else {{}}
    for key, dtype in INFO["npz_types"].items():
        if key in arrays:
            import ml_dtypes
            arrays[key] = arrays[key].astype(getattr(ml_dtypes, dtype))
    return arrays


def cannot_run(why):
    print(f"cannot run: {{why}}", file=sys.stderr)
    sys.exit(2)


def require(module):
    """The runtime's Python package, or exit 2 saying it is missing."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        cannot_run(exc)


feeds, expected = load("inputs.npz"), load("expected.npz")
'''

_JUDGE = '''

# The conformance suite's own judging functions, copied in by source (judging.py, execution_cases.py)
FLOAT_GRIDS = {grids!r}
SUB_BYTE_WIDENED = {sub_byte}


{shared}
def steps_off(name, want, got):
    """How far ``got`` is from ``want``, as the suite judges it: (elements beyond tolerance, largest steps, why)."""
    rule = INFO["judging"][name]
    want, got = widen(want), widen(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return want.size, float("inf"), f"{{got.dtype}} {{list(got.shape)}}, expected {{want.dtype}} {{list(want.shape)}}"
    if rule["mode"] == "positive-finite":
        bad = int(np.count_nonzero(not_positive_finite(got)))
        return bad, 0.0 if not bad else float("inf"), "any positive finite value passes"
    step = rule["step"]
    step = dict(np.load(HERE / "steps.npz"))[name] if step == "steps.npz" else step
    diff = element_steps(want, got, step)
    beyond = beyond_tolerance(diff, rule["tolerance"], want)
    return int(np.count_nonzero(beyond)), float(diff.max()) if diff.size else 0.0, ""


try:
    outputs, raised = run(feeds), None
except Exception as exc:  # the runtime's error is the outcome
    outputs, raised = None, exc
if raised is not None:
    print(f"the runtime raised {{type(raised).__name__}}: {{' '.join(str(raised).split())}}")
    reproduced = INFO["kind"] != "reject"  # refusing a must-reject model is the right answer
elif INFO["kind"] == "reject":
    print(f"returned {{sorted(outputs)}} for a model a reader must refuse ({{INFO['must_refuse']['rule']}}: "
          f"{{INFO['must_refuse']['reason']}})")
    reproduced = True
else:
    reproduced = False
    for name, want in expected.items():
        if name not in outputs:
            print(f"{{name}}: missing")
            reproduced = True
            continue
        bad, worst, why = steps_off(name, want, np.asarray(outputs[name]))
        reproduced = reproduced or bad > 0
        print(f"{{name}}: {{bad}} element(s) beyond {{INFO['judging'][name]['tolerance']}} step(s), at most {{worst:g}} "
              f"step(s){{'; ' + why if why else ''}}")
print("the failure reproduces" if reproduced else "the failure does not reproduce")
sys.exit(1 if reproduced else 0)
'''

_RUNNERS = {
    "onnxruntime": '''

def run(feeds):
    ort = require("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.{level}
    session = ort.InferenceSession(str(HERE / "{model}"), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))
''',
    "openvino": '''

def run(feeds):
    ov = require("openvino")
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(HERE / "{model}")), "CPU")
    request = compiled.create_infer_request()
    request.infer(feeds)
    return {{name: request.get_output_tensor(k).data.copy() for k, port in enumerate(compiled.outputs)
            for name in port.get_names() if name in expected}}
''',
    "reference": '''

def run(feeds):
    from onnx_qtypes.reference_ops import ReferenceEvaluator

    evaluator = ReferenceEvaluator(str(HERE / "{model}"), kernels="{kernels}")
    names = list(expected)
    return dict(zip(names, evaluator.run(names, feeds)))
''',
}

_GENERIC = '''

def run(feeds):
    import os

    if {path!r} and {path!r} not in sys.path:
        sys.path.append({path!r})  # where the backend module came from: modules beside it
    conformance = require("onnx_qtypes.conformance")
    os.chdir(HERE)  # the backend spec below is relative to this folder
    case = conformance.load_case(HERE)
    backend = conformance.load_backend({spec!r})
    return backend.run(backend.prepare(case), feeds)
'''

_RESULTS = '''

def run(feeds):
    """What the runtime's runner wrote into results/<case id>/ (README.txt: the command that writes it)."""
    folder = HERE / "{results}" / INFO["id"]
    if (folder / "error.txt").is_file():
        raise RuntimeError((folder / "error.txt").read_text(encoding="utf-8", errors="replace"))
    import onnx
    from onnx import numpy_helper

    names = json.loads((HERE / "case.json").read_text())["outputs"]
    out = {{}}
    for k, name in enumerate(names):
        path = folder / "{data_set}" / f"output_{{k}}.pb"
        if path.exists():
            value = numpy_helper.to_array(onnx.load_tensor(str(path)))
            wide = SUB_BYTE_WIDENED.get(value.dtype.name)
            out[name] = value if wide is None else value.astype(wide)
    return out
'''


def _typed_io(model: Path | None) -> bool:
    """Whether a graph input or output has a type numpy cannot hand to the runtime's API directly."""
    if model is None or not model.is_file():
        return True
    import onnx

    graph = onnx.load(str(model), load_external_data=False).graph
    return any(v.type.tensor_type.elem_type in BOUND_BY_TYPE for v in (*graph.input, *graph.output))


def _script(backend: Any, spec: str, case: Case, model: Path | None, source: Mapping[str, str]) -> tuple[str, bool]:
    """The repro.py text, and whether it runs the runtime without the suite."""
    from .backends import OnnxRuntimeBackend, OpenVinoBackend, ReferenceBackend

    name, version = clean_text(getattr(backend, "name", spec) or spec), backend_version(backend)
    body, standalone = None, False
    if model is not None and case.kind != "reject" and ":" not in spec:  # a named backend, not a subclass of one
        if isinstance(backend, ReferenceBackend):
            body = _RUNNERS["reference"].format(model=model.name, kernels=backend.kernels)
        elif isinstance(backend, OnnxRuntimeBackend) and not _typed_io(model):
            level = "ORT_ENABLE_ALL" if backend.optimize else "ORT_DISABLE_ALL"
            body = _RUNNERS["onnxruntime"].format(model=model.name, level=level)
        elif isinstance(backend, OpenVinoBackend) and not _typed_io(model):
            body = _RUNNERS["openvino"].format(model=model.name)
        standalone = body is not None
    if body is None and isinstance(backend, ResultsBackend):
        body = _RESULTS.format(results=RESULTS_FOLDER, data_set=DATA_SET)
    if body is None:
        body = _GENERIC.format(spec=source["spec"], path=source["path"])
    how = (" without the conformance suite" if standalone else " from what its runner wrote"
           if isinstance(backend, ResultsBackend) else f" through its backend ({clean_text(spec)})")
    head = _HEAD.format(id=case.id, label=f"{name} {version}".strip(), how=how)
    judge = _JUDGE.format(grids=FLOAT_GRIDS, sub_byte=_SUB_BYTE_SOURCE, shared=JUDGING_SOURCE)
    return head + body + judge, standalone
