"""Print every quantized tensor of a model with its parameters and statistics.

Tensors that carry statistics without being quantized are listed too.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from onnx_qtypes.proto import iter_declarations, load, read_qtype, static_shape
from onnx_qtypes.proto.model import read_statistics
from onnx_qtypes.proto.names import require_utf8_names
from onnx_qtypes.proto.qtype import QType, TensorStatistics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="path to an .onnx model")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format (default table)")


def collect(model: Any) -> list[dict[str, Any]]:
    """One row per tensor that is quantized or has statistics, in model order."""
    rows: dict[str, dict[str, Any]] = {}
    for decl in iter_declarations(model):
        qtype = read_qtype(decl.value_info, decl.pointer)
        stats = qtype.statistics if qtype is not None else read_statistics(decl.value_info, decl.pointer)
        if qtype is None and stats is None:
            continue
        row = rows.setdefault(decl.name, {"tensor": decl.name, "declared_at": [], "qtype": None, "statistics": None})
        row["declared_at"].append(decl.pointer)
        shape = static_shape(decl.value_info)
        row.setdefault("shape", None if shape is None else list(shape))
        if row["qtype"] is None and qtype is not None:
            row["qtype"] = qtype
        if row["statistics"] is None and stats is not None:
            row["statistics"] = stats
    return list(rows.values())


def run(args: argparse.Namespace) -> int:
    model = load(args.model)
    require_utf8_names(model, args.model)
    rows = collect(model)
    if args.format == "json":
        sys.stdout.write(render_json(rows, args.model))
    else:
        sys.stdout.write(render_table(rows, args.model))
    return 0


def render_json(rows: list[dict[str, Any]], model: str) -> str:
    """{"model": ..., "tensors": [...]} with one tensor per line.

    Each line comes from json's C encoder: ``indent`` would select its
    pure-Python encoder, minutes for the millions of scales of a blocked model.
    """
    tensors = ",\n".join(f"    {json.dumps(_json_row(r))}" for r in rows)
    body = f"[\n{tensors}\n  ]" if rows else "[]"
    return f'{{\n  "model": {json.dumps(model)},\n  "tensors": {body}\n}}\n'


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    qtype: QType | None = row["qtype"]
    stats: TensorStatistics | None = row["statistics"]
    out = {"tensor": row["tensor"], "shape": row["shape"], "declared_at": row["declared_at"]}
    out["qtype"] = None if qtype is None else {k: v for k, v in qtype.to_dict().items() if k != "statistics"}
    out["statistics"] = None if stats is None else stats.to_dict()
    return out


def _fmt_list(values: tuple, limit: int = 3) -> str:
    shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values[:limit])
    return f"[{shown}{', …' if len(values) > limit else ''}]" if len(values) != 1 else shown


def _fmt_stats(stats: TensorStatistics | None) -> str:
    if stats is None:
        return "-"
    parts = []
    s = stats.tensor
    if s is not None:
        for name in ("min", "max", "mean", "std"):
            value = getattr(s, name)
            if value is not None:
                parts.append(f"{name}={value:.6g}")
        if s.count is not None:
            parts.append(f"count={s.count}")
        if s.histogram_counts:
            parts.append(f"hist={len(s.histogram_counts)} bins")
    if stats.per_axis:
        parts.append(f"per-axis[{stats.axis}]={len(stats.per_axis)}")
    if stats.method:
        parts.append(f"({stats.method})")
    return " ".join(parts) or "-"


def render_table(rows: list[dict[str, Any]], source: str) -> str:
    header = ("tensor", "shape", "type", "granularity", "scale", "zero_point", "range", "schema", "statistics")
    table = [header]
    for row in rows:
        qt: QType | None = row["qtype"]
        shape = "?" if row["shape"] is None else "[" + ",".join("?" if d is None else str(d) for d in row["shape"]) + "]"
        if qt is None:
            cells = (row["tensor"], shape, "(float)", "-", "-", "-", "-", "-", _fmt_stats(row["statistics"]))
        else:
            gran = "dynamic" if qt.is_dynamic else qt.granularity
            if qt.axis is not None:
                gran += f" axis={qt.axis}" + (f" block={qt.block_size}" if qt.block_size else "")
            cells = (
                row["tensor"],
                shape,
                f"{qt.storage}->{qt.expressed}",
                gran,
                _fmt_list(qt.scale) if qt.scale else "-",
                _fmt_list(qt.zero_point) if qt.zero_point else "-",
                f"[{qt.storage_min},{qt.storage_max}]",
                qt.schema.name.lower(),
                _fmt_stats(row["statistics"]),
            )
        table.append(tuple(str(c) for c in cells))
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    summary = f"{len([r for r in rows if r['qtype'] is not None])} quantized tensor(s) in {source}"
    return "\n".join(lines + ["", summary]) + "\n"
