"""`onnx-qtypes compare` on every quantized file of producer_corpus.py runs, as a vendor would run it.

    python benchmarks/corpus_compare.py DIR [DIR ...] [--backend onnxruntime-unoptimized] [--json out.json]

DIR: a ``--keep`` folder of benchmarks/producer_corpus.py (its ``float`` and ``lifted`` folders are skipped). Each
``PRODUCER/FILE.onnx`` is compared with ``FILE.feeds.npz`` as its inputs where the corpus wrote one, in its own
process (``python -m onnx_qtypes compare ... --format json``). Prints one line per file that does not exit 0 (the
first departure's tensor, operator and note for exit 1; the message for exit 2) and the count per exit code. An
internal error (anything but the one-line exit 2) or a compare still running after ``--timeout`` is a bug of ours: each
is counted apart and makes this exit 1.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tempfile
import time

SKIPPED = {"float", "lifted"}


def files(folders: list[pathlib.Path]) -> list[pathlib.Path]:
    return sorted(p for folder in folders for p in folder.glob("*/*.onnx") if p.parent.name not in SKIPPED)


def compare(path: pathlib.Path, backend: str, timeout: float) -> dict:
    feeds = path.with_suffix(".feeds.npz")
    with tempfile.TemporaryDirectory() as tmp:
        report = pathlib.Path(tmp) / "report.json"
        argv = [sys.executable, "-m", "onnx_qtypes", "compare", str(path), "--backend", backend, "--format", "json",
                "-o", str(report), *(["--inputs", str(feeds)] if feeds.exists() else [])]
        start = time.perf_counter()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"file": str(path), "exit": "timeout", "seconds": timeout}
        row = {"file": str(path), "exit": done.returncode, "seconds": round(time.perf_counter() - start, 1)}
        error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        if done.returncode == 2 or "internal error" in done.stderr or "Traceback" in done.stderr:
            row["error"] = error
        row["internal"] = "internal error" in done.stderr or "Traceback" in done.stderr
        if done.returncode == 1 and report.exists():
            first = json.loads(report.read_text()).get("first") or {}
            row["first"] = {k: first.get(k) for k in ("tensor", "op", "max_deviation", "tolerance", "note")}
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=pathlib.Path)
    parser.add_argument("--backend", default="onnxruntime-unoptimized")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args()
    found = files(args.folders)
    if not found:
        print(f"no PRODUCER/FILE.onnx in {', '.join(map(str, args.folders))}", file=sys.stderr)
        return 2
    rows = []
    for path in found:
        row = compare(path, args.backend, args.timeout)
        rows.append(row)
        if row["exit"] != 0:
            what = row.get("first") or row.get("error", "")
            print(f"{path.parent.name}/{path.name}: exit {row['exit']}: {what}", flush=True)
    counts = collections.Counter(str(r["exit"]) for r in rows)
    internal = sum(bool(r.get("internal")) for r in rows)
    timeouts = counts.get("timeout", 0)  # compare still running after --timeout: a hang is ours too
    print(f"{len(rows)} file(s): " + ", ".join(f"exit {k}: {v}" for k, v in sorted(counts.items()))
          + f"; internal errors: {internal}; timed out: {timeouts}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if internal or timeouts else 0


if __name__ == "__main__":
    sys.exit(main())
