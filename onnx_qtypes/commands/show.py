"""Print every quantized tensor of a model with its parameters and statistics.

Tensors that carry statistics without being quantized are listed too. A
tensor declared with different types gets one row per type (the checker's
QT301), never just the first. ``--format html`` writes one self-contained
page (inline CSS and SVG, no script): each tensor's histogram with its
representable range, the clipped fraction and error estimated from it, and
the checker's findings beside the tensor they name.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

import onnx

from onnx_qtypes.proto import iter_declarations, static_shape
from onnx_qtypes.proto.errors import MalformedExtensionError, QTypesError
from onnx_qtypes.proto.external import spill_folder
from onnx_qtypes.proto.files import refuse_overwrite, write_report
from onnx_qtypes.proto.model import (ParameterLookup, model_parameters, read_view, referenced_values,
                                     require_known_fields)
from onnx_qtypes.proto.reader import ReadModel, read_model
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.relu_readers import MAIN, read_only_by_relu
from onnx_qtypes.report.stored import StoredStatistics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="path to an .onnx model")
    parser.add_argument("--format", choices=("table", "json", "html"), default="table",
                        help="output format (default table); html: a self-contained page with histograms and findings")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the report to FILE (atomically) instead of stdout")


def _read(value_info: onnx.ValueInfoProto, where: str, qtypes: dict[bytes, QType], parameters: ParameterLookup
          ) -> tuple[QType | None, StoredStatistics | None]:
    """The declared type (without statistics) and statistics (kept encoded, report/stored.py), refusing fields
    this version does not define.

    One QType per distinct message, as in the checker: a NaN scale is unequal to itself, and equal
    declarations must still share a row.
    """
    if value_info.type.WhichOneof("value") != "tensor_type":
        return None, None
    view = read_view(value_info.type.tensor_type, where)
    require_known_fields(view, where)
    quantized, has_stats = view.HasField("quantization"), view.HasField("statistics")
    stats = StoredStatistics(view.statistics) if has_stats else None
    if not quantized:
        return None, stats
    key = view.quantization.SerializeToString()
    if view.quantization.HasField("scale_tensor") or view.quantization.HasField("zero_point_tensor"):
        key = value_info.type.SerializeToString()  # the parameters' shape follows the declared shape
    if key not in qtypes:
        values = referenced_values(view.quantization, parameters, static_shape(value_info), where)
        qtypes[key] = QType.from_proto(view.quantization, validate=False, values=values)
    return qtypes[key], stats


def collect(model: Any, source: str = "<model>") -> list[dict[str, Any]]:
    """One row per tensor and distinct type (statistics aside) that is quantized or has statistics, in model order."""
    rows: list[dict[str, Any]] = []
    # a tensor's rows, one per distinct type: found by equality, not by hash (a blocked weight's type holds
    # millions of parameters, which a hash reads one Python object at a time; a tensor has one or two types)
    of_tensor: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    qtypes: dict[bytes, QType] = {}
    functions = [f"{f.domain}:{f.name}" if f.domain else f.name for f in model.functions]
    parameters = model_parameters(model)
    for decl in iter_declarations(model):
        # a function body names its own tensors (as get_qtype(function=...) reads them)
        function = functions[int(decl.pointer.split("/")[2])] if decl.pointer.startswith("/functions/") else None
        where = f"{decl.pointer} (tensor {decl.name!r})"  # as check names it
        try:
            qtype, stats = _read(decl.value_info, where, qtypes, parameters)
        except MalformedExtensionError as exc:
            raise MalformedExtensionError(f"{source}: {exc}") from None
        if qtype is None and stats is None:
            continue
        same = of_tensor.setdefault((function, decl.name), [])
        row = next((r for r in same if r["qtype"] is qtype or r["qtype"] == qtype), None)
        if row is None:
            shape = static_shape(decl.value_info)
            row = {"tensor": decl.name, "function": function, "shape": None if shape is None else list(shape),
                   "declared_at": [], "qtype": qtype, "statistics": None}
            rows.append(row)
            same.append(row)
        row["declared_at"].append(decl.pointer)
        if row["statistics"] is None:
            row["statistics"] = stats
    scope_of = {None: MAIN, **{name: f"/functions/{i}" for i, name in enumerate(functions)}}
    relu_only = read_only_by_relu(model)
    for row in rows:
        row["relu_only"] = (scope_of[row["function"]], row["tensor"]) in relu_only
    first = {key: k for k, key in enumerate(of_tensor)}  # a tensor's rows side by side, where it first appears
    return sorted(rows, key=lambda r: first[r["function"], r["tensor"]])


def run(args: argparse.Namespace) -> int:
    # the weights stay in their files (proto.external), and those a quantizer form's in-memory lift computes
    # (MatMulNBits repacked) wait in a temporary folder: a large model is never all in memory
    with spill_folder():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    read = read_model(args.model, external_data="lazy")  # as every command reads a model (sizes, names, order)
    try:
        return _show(args, read)
    except QTypesError as exc:  # a place in a graph the reader sorted: where the file has it
        raise read.located(exc) from None


def _show(args: argparse.Namespace, read: ReadModel) -> int:
    model = read.model
    rows, notes = collect(model, args.model), []
    if not rows:  # a QDQ / QOperator model: its lifted form's tensors, named and located as the file has them
        rows, notes = _quantizer_rows(model, args.model)
    else:
        notes = _untyped_nodes_note(read)
    for row in rows:  # a graph the reader sorted: the places the file has
        row["declared_at"] = [read.file_pointer(p) for p in row["declared_at"]]
    if args.format == "json":
        chunks = iter_json(rows, args.model, notes)
    elif args.format == "html":
        chunks = _html(read, rows, args.model, notes)
    else:
        chunks = iter([render_table(rows, args.model) + "".join(f"note: {n}\n" for n in notes)])
    # written piece by piece (a tensor or a card at a time): the page or JSON of a large model is never one string
    if args.output:
        refuse_overwrite(args.output, model=args.model)
    write_report(args.output, chunks)
    return 0


def _html(model: ReadModel, rows: list[dict[str, Any]], source: str, notes: list[str]) -> Iterator[str]:
    from onnx_qtypes.diagnosis import diagnose  # the checker: only for the page, which lists its findings
    from onnx_qtypes.report import iter_html

    try:
        findings = diagnose(model).diagnostics
    except QTypesError as exc:  # the parameters are still worth showing
        findings, notes = (), [*notes, f"the checker could not read the model: {' '.join(str(exc).split())}"]
    return iter_html(rows, source, findings, notes)


def _untyped_nodes_note(read: ReadModel) -> list[str]:
    """A typed model's quantization nodes that no type covers (those a lift left as written), counted: they have
    no row."""
    from onnx_qtypes.diagnosis import untyped_quantization_nodes  # imports interop: only for a typed model

    count = sum(len(chosen) for _, _, chosen in untyped_quantization_nodes(read.graphs()))
    if not count:
        return []
    return [f"{count} quantization node(s) outside the types (left as the file wrote them; `onnx-qtypes lift` names "
            "each and why) are not listed; `onnx-qtypes check` reads their parameters"]


def _quantizer_rows(model: onnx.ModelProto, source: str) -> tuple[list[dict[str, Any]], list[str]]:
    from onnx_qtypes.diagnosis import quantizer_view  # imports interop and the checker: only for such models
    from onnx_qtypes.interop.left import summary as summary_of_left

    try:
        view = quantizer_view(model)
    except QTypesError as exc:
        raise type(exc)(f"{source}: {exc}") from None
    if view is None:
        return [], []
    rows = collect(view.result.model, source)
    for row in rows:
        row["tensor"], location = view.locator.stored_as(row["tensor"])
        row["declared_at"] = [location.pointer]
    notes = ["read from its QuantizeLinear / DequantizeLinear / QOperator nodes (declared_at: the node that "
             "applies the parameters)"]
    if view.result.left:  # a custom quantizer's nodes too: never "0 quantized tensors" alone
        notes.append(f"the lift {summary_of_left(view.result.left)}, which no row shows; `onnx-qtypes check` names "
                     "each and why")
    # a node may break several rules: counted once; one the note above counts already (a kept pair), not again
    malformed = {p.node for p in view.result.problems} - {n.index for n in view.result.left}
    others = view.other_warnings()
    unlisted = [f"{len(malformed)} node(s) with malformed quantization"] if malformed else []
    unlisted += [f"{len(others)} other thing(s) the lift left as they were"] if others else []
    if unlisted:
        notes.append(f"{' and '.join(unlisted)} are not listed; `onnx-qtypes check` names each")
    return rows, notes


def render_json(rows: list[dict[str, Any]], model: str, notes: list[str] | None = None) -> str:
    """{"model": ..., "tensors": [...]} with one tensor per line."""
    return "".join(iter_json(rows, model, notes))


def iter_json(rows: list[dict[str, Any]], model: str, notes: list[str] | None = None) -> Iterator[str]:
    """``render_json`` a tensor at a time.

    Each line comes from json's C encoder: ``indent`` would select its
    pure-Python encoder, minutes for the millions of scales of a blocked model.
    """
    yield f'{{\n  "model": {json.dumps(model)},\n  "tensors": '
    if not rows:
        yield "[]"
    for k, row in enumerate(rows):
        yield ("[\n    " if k == 0 else ",\n    ") + _dumps(_json_row(row))
    if rows:
        yield "\n  ]"
    extra = f',\n  "notes": {json.dumps(notes)}' if notes else ""
    yield f"{extra}\n}}\n"


def _dumps(row: dict[str, Any]) -> str:
    """Standard JSON: NaN and infinities (in an invalid type or statistics) as the strings "nan", "inf", "-inf".

    The C encoder refuses them with allow_nan=False, so finite rows (nearly all) pay nothing for the check.
    """
    try:
        return json.dumps(row, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(row), allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    qtype: QType | None = row["qtype"]
    stats: StoredStatistics | None = row["statistics"]
    out = {"tensor": row["tensor"], "function": row["function"], "shape": row["shape"],
           "declared_at": row["declared_at"]}
    out["qtype"] = None if qtype is None else {k: v for k, v in qtype.to_dict().items() if k != "statistics"}
    out["statistics"] = None if stats is None else stats.decode().to_dict()
    return out


def _fmt_list(values: tuple, limit: int = 3) -> str:
    shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values[:limit])
    return f"[{shown}{', …' if len(values) > limit else ''}]" if len(values) != 1 else shown


def _fmt_stats(stats: StoredStatistics | None) -> str:
    if stats is None:
        return "-"
    summary = stats.summary()
    parts = [f"{name}={summary[name]:.6g}" for name in ("min", "max", "mean", "std") if name in summary]
    if "count" in summary:
        parts.append(f"count={summary['count']}")
    if summary.get("bins"):
        parts.append(f"hist={summary['bins']} bins")
    if summary["per_axis"]:
        parts.append(f"per-axis[{summary['axis']}]={summary['per_axis']}")
    if summary["method"]:
        parts.append(f"({summary['method']})")
    return " ".join(parts) or "-"


def render_table(rows: list[dict[str, Any]], source: str) -> str:
    header = ("tensor", "shape", "type", "granularity", "scale", "zero_point", "range", "schema", "statistics")
    table = [header]
    for row in rows:
        qt: QType | None = row["qtype"]
        shape = "?" if row["shape"] is None else "[" + ",".join("?" if d is None else str(d) for d in row["shape"]) + "]"
        # check quotes names (repr, see Location.describe); here only names that would break the terminal or the table
        name = row["tensor"] if row["tensor"].isprintable() else repr(row["tensor"])
        if row["function"] is not None:
            name += f" (function {row['function']})"
        if qt is None:
            cells = (name, shape, "(float)", "-", "-", "-", "-", "-", _fmt_stats(row["statistics"]))
        else:
            gran = "dynamic" if qt.is_dynamic else qt.granularity
            if qt.axis is not None:
                gran += f" axis={qt.axis}" + (f" block={qt.block_size}" if qt.block_size is not None else "")
            cells = (
                name,
                shape,
                f"{qt.storage}->{qt.expressed}",
                gran,
                (_fmt_list(qt.scale) if qt.scale else "-") + (f" (in {qt.scale_tensor})" if qt.scale_tensor else ""),
                _fmt_list(qt.zero_point) if qt.zero_point else "-",
                f"[{qt.storage_min},{qt.storage_max}]",
                qt.schema.name.lower(),
                _fmt_stats(row["statistics"]),
            )
        table.append(tuple(str(c) for c in cells))
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    quantized = {(r["function"], r["tensor"]) for r in rows if r["qtype"] is not None}
    summary = [f"{len(quantized)} quantized tensor(s) in {source}"]
    counts = Counter((r["function"], r["tensor"]) for r in rows)
    if conflicts := sorted((n, f or "") for (f, n), count in counts.items() if count > 1):
        summary.append(f"declared with different types (one row each; `onnx-qtypes check` reports QT301): "
                       f"{', '.join(repr(n) + (f' in function {f}' if f else '') for n, f in conflicts)}")
    return "\n".join(lines + ["", *summary]) + "\n"
