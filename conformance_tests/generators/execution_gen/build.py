"""From a Spec to a case: the typed model, its standard-ONNX form, the feeds, the expected outputs (the
definitional reference), the tolerance (onnx_qtypes.conformance.tolerance) and the tags (.coverage)."""

from __future__ import annotations

import pathlib
import warnings

import numpy as np

from .common import SPEC, Spec, _Gen, _storage_array

SKIPPED: list[str] = []


def _tensor(name, value):
    from onnx import numpy_helper  # noqa: PLC0415

    return numpy_helper.from_array(np.asarray(value), name).SerializeToString()


def _steps(a, b, integer: bool) -> float:
    """Largest distance in storage steps (integer storage) or 0 / inf (exact comparison otherwise)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0
    if integer:
        return int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))
    x, y = a.astype(np.float64), b.astype(np.float64)
    same = (x == y) | (np.isnan(x) & np.isnan(y))
    return 0 if same.all() else float("inf")


def _fit_outputs(rm, spec: Spec, g: _Gen, feeds: dict) -> bool:
    """Replace each fitted output type by one fitted to the reals the operator computes; False when the
    reference cannot run the float form or the expressed type overflows."""
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415

    fitted = [t for t in spec.outputs if any(t.qtype is q for q in g.auto)]
    if not fitted:
        return True
    plain = [rm.T(t.name, t.shape, None, g.fdt) if any(t is f for f in fitted) else t for t in spec.outputs]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):  # float16 overflow: left out just below
            warnings.simplefilter("ignore")
            reals = ReferenceEvaluator(_model(rm, spec, plain)).run(None, feeds)
    except Exception as exc:  # noqa: BLE001 (the reference cannot run it)
        SKIPPED.append(f"the float form of {spec.op} does not run ({type(exc).__name__}: {str(exc)[:300]})")
        return False
    if not all(np.isfinite(np.asarray(r, np.float64)).all() for r in reals):
        return False
    for t, value in zip(spec.outputs, reals):
        if any(t is f for f in fitted):
            t.qtype = g.fit(value, storage=t.qtype.storage)
    return True


def build_case(rm, case_id: str, seed: int, storage: str, expressed: str, variant: str, build, tmp: pathlib.Path,
               weights: str | None = None):
    """(case.json, files) of one case, or None when lower or the reference cannot take it."""
    import onnx_qtypes  # noqa: PLC0415
    from onnx_qtypes.conformance.coverage import case_tags  # noqa: PLC0415
    from onnx_qtypes.conformance.tolerance import PARAMETER_REASON, tolerances  # noqa: PLC0415
    from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: PLC0415

    g = _Gen(seed, storage, expressed)
    g.weight_storage = weights or storage
    try:
        spec = build(g, variant)
    except Exception as exc:  # noqa: BLE001 (a type this storage cannot hold: not a case)
        SKIPPED.append(f"{case_id}: not built ({type(exc).__name__}: {exc})")
        return None
    if spec is None:
        return None
    for t in spec.inputs:
        if t is not None and t.value is not None and t.qtype is not None:
            t.value = _storage_array(t.value, t.qtype)
    graph_inputs = [t for t in spec.inputs if t is not None and t.value is None]
    feeds = {}
    for t in graph_inputs:
        if spec.feeds and t.name in spec.feeds:
            feeds[t.name] = spec.feeds[t.name]
        elif t.qtype is not None:
            feeds[t.name] = _storage_array(g.data(t.qtype, t.shape), t.qtype)
        else:
            feeds[t.name] = g.real(t.shape)
    for name, value in (spec.feeds or {}).items():  # extra feeds (<x>.scale / <x>.zero_point of dynamic inputs)
        feeds.setdefault(name, value)
    if not _fit_outputs(rm, spec, g, feeds):
        SKIPPED.append(f"{case_id}: no fitted output type (the float form does not run or overflows)")
        return None
    try:
        model = _model(rm, spec, spec.outputs)
        path = tmp / f"{case_id}.onnx"
        onnx_qtypes.save(model, path)
        model_bytes = path.read_bytes()
        typed = onnx_qtypes.load(model_bytes)
    except Exception as exc:  # noqa: BLE001 (not a valid typed model)
        SKIPPED.append(f"{case_id}: not a valid typed model ({exc})")
        return None
    qdq_bytes, qdq_unavailable = _qdq_form(rm, spec, typed)
    if qdq_bytes is None and not qdq_unavailable:
        return None  # lower refuses a type that has a standard form elsewhere: not a case
    names = [t.name for t in spec.outputs]
    if spec.qdq != "plain":  # a dynamic graph output returns its parameters beside it (the calling convention)
        names += [f"{t.name}.{field}" for t in spec.outputs if t.qtype is not None and t.qtype.is_dynamic
                  for field in ("scale", "zero_point")]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = ReferenceEvaluator(onnx_qtypes.load(model_bytes), kernels="definitional").run(names, feeds)
            integer = ReferenceEvaluator(onnx_qtypes.load(model_bytes), kernels="integer").run(None, feeds)
    except Exception as exc:  # noqa: BLE001 (the reference cannot run it)
        SKIPPED.append(f"{case_id}: the reference cannot run it ({exc})")
        return None
    tolerance = tolerances(typed, feeds, spec.steps)
    for t, want, got in zip(spec.outputs, expected, integer):
        whole = t.qtype is not None and not t.qtype.storage_type.is_float
        if _steps(want, got, whole) > tolerance[t.name].steps:
            SKIPPED.append(f"{case_id}: integer kernels beyond {tolerance[t.name].steps} step(s)")
            return None
    expected = [_storage_array(v, t.qtype) if t.qtype is not None else np.asarray(v)
                for t, v in zip(spec.outputs, expected)] + [np.asarray(v) for v in expected[len(spec.outputs):]]
    doc = {
        "id": case_id,
        "kind": "execution",
        "operator": spec.op,
        "spec": spec.anchor if spec.anchor.startswith("proposal/") else f"{SPEC}#{spec.anchor}",
        "description": f"{spec.op} on {storage} storage, {expressed} expressed, {variant}"
                       + (f": {spec.note}" if spec.note else ""),
        "tags": case_tags(typed, spec.op, feeds, spec.features),
        "model": "model.onnx",
        "qdq_model": "model.qdq.onnx",
        "inputs": list(feeds),
        "outputs": names,
        "tolerance": {n: tolerance[n].steps for n in names if n in tolerance},
    }
    for name in names[len(spec.outputs):]:  # <y>.scale / <y>.zero_point: the parameters the data chose, exactly
        doc["tolerance"][name] = 0
    # every case says why: the outputs that may differ first, then why the others are exact
    ranked = sorted((n for n in names if n in tolerance), key=lambda n: not tolerance[n].steps)
    reasons = [tolerance[n].reason for n in ranked] + [PARAMETER_REASON for _ in names[len(spec.outputs):]]
    doc["tolerance_reason"] = "; ".join(dict.fromkeys(r for r in reasons if r))
    if spec.steps:
        doc["steps"] = spec.steps
    judged = {n: tolerance[n].judge for n in names if n in tolerance and tolerance[n].judge != "value"}
    if judged:  # a value the definition leaves open (y_scale of DynamicQuantizeLinear on zeros): judged by its kind
        doc["judge"] = judged
    files = {"model.onnx": model_bytes}
    if qdq_bytes is None:
        doc["qdq_model"] = None
        doc["qdq_unavailable"] = qdq_unavailable
    else:
        files["model.qdq.onnx"] = qdq_bytes
    for i, name in enumerate(feeds):
        files[f"test_data_set_0/input_{i}.pb"] = _tensor(name, feeds[name])
    for i, (n, v) in enumerate(zip(names, expected)):
        files[f"test_data_set_0/output_{i}.pb"] = _tensor(n, v)
    return doc, files


def _model(rm, spec: Spec, outputs: list):
    """The typed model of ``spec`` with these graph outputs: one node, or the graph ``spec.nodes`` describes."""
    if spec.nodes is None and not spec.functions and spec.model_hook is None:
        ir, opset = _opset(spec, outputs)
        model = rm.typed_model(spec.op, spec.inputs, outputs, opset=opset, **spec.attrs)
        model.ir_version = ir
        return model
    return _graph(rm, spec, outputs, typed=True)


def _opset(spec: Spec, outputs: list) -> tuple[int, int]:
    """(IR, opset) of the typed model: 2-bit storage is a QuantizeLinear / DequantizeLinear type from opset 25 on,
    float4e2m1 from opset 23."""
    if spec.opset is not None:
        return spec.opset
    tensors = [t for t in [*spec.inputs, *spec.hidden, *spec.inner, *outputs] if t is not None and t.qtype is not None]
    storages = {t.qtype.storage for t in tensors}
    if storages & {"int2", "uint2"}:
        return 13, 25
    return (11, 23) if "float4e2m1" in storages else (10, 21)


def _graph(rm, spec: Spec, outputs: list, typed: bool):
    from onnx import helper, numpy_helper  # noqa: PLC0415

    from onnx_qtypes import set_qtype  # noqa: PLC0415

    steps = spec.nodes if spec.nodes is not None else [(spec.op, [t.name if t else "" for t in spec.inputs],
                                                        [t.name for t in outputs], spec.attrs)]
    nodes = []
    for i, (op, ins, outs, attrs, *domain) in enumerate(steps):  # a fifth item: the node's domain
        nodes.append(helper.make_node(op, ins, outs, name=f"n{i}_{op.lower()}" if spec.nodes is not None else "node",
                                      domain=domain[0] if domain else None, **attrs))
    present = [t for t in spec.inputs if t is not None]
    graph = helper.make_graph(
        nodes, f"chain_{spec.op}" if spec.nodes is not None else f"single_{spec.op}",
        [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in present if t.value is None],
        [helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in outputs],
        [numpy_helper.from_array(np.asarray(t.value), t.name) for t in present if t.value is not None],
        value_info=[helper.make_tensor_value_info(t.name, t.elem_type, t.shape) for t in spec.hidden])
    ir, opset = _opset(spec, outputs)
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(d, 1) for d in sorted({f.domain for f, _ in spec.functions})]
    model = helper.make_model(graph, opset_imports=imports, ir_version=ir, functions=[f for f, _ in spec.functions]
                              if spec.functions else None)
    if typed:
        for t in [*present, *spec.hidden, *spec.inner, *outputs]:
            if t.qtype is not None:
                set_qtype(model, t.name, t.qtype)
        for function, inner in spec.functions:
            for t in inner:
                if t.qtype is not None:
                    set_qtype(model, t.name, t.qtype, function=function.name)
        if spec.model_hook is not None:
            spec.model_hook(model)
    return model


def _qdq_form(rm, spec: Spec, typed) -> tuple[bytes | None, str]:
    """(model.qdq.onnx bytes, "") or (None, why standard ONNX cannot express the case); (None, "") leaves it out."""
    import onnx_qtypes  # noqa: PLC0415

    if spec.qdq == "plain":  # standard operators throughout (DynamicQuantizeLinear ...): the graph minus its types
        return _graph(rm, spec, spec.outputs, typed=False).SerializeToString(), ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # how a dynamic graph input arrives (a typed-only case fed reals: lower must refuse that form, not
            # write the storage one the feeds do not fit)
            fed = "reals" if spec.qdq == "lower-reals" or "dynamic-input-reals" in spec.features else "storage"
            return onnx_qtypes.lower(typed, dynamic_inputs=fed).SerializeToString(), ""
    except Exception as exc:  # noqa: BLE001
        if spec.qdq == "typed-only":
            return None, str(exc)
        SKIPPED.append(f"{typed.graph.name}: lower refuses it ({exc})")
        return None, ""
