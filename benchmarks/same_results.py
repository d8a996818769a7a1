"""Do two checkouts give the same results? check, show, lift and lower on the same models, compared field by field.

A memory or speed change must not change what a command says or writes. This runs, from each checkout (in a
process of its own, importing that checkout's code), on every example, every 25th model of the conformance suite,
every third suite model with blocked, by-reference or MatMulNBits parameters, and bench_large_model.py's two forms
at one layer (built in a temporary folder): `check --format json`, `show` (table and JSON), `lift` (its report and
the bytes of the written model and data file), `lower` of lift's output (or of the model when nothing lifts), and
`show --format json` / `check --format json` of the lifted model. Exit codes, standard output and standard error
are compared as text (temporary paths masked), written models by SHA-256.

With ``--fuzz`` it compares instead, in-process, ``onnx_qtypes.diagnose`` (every finding and note) and
``lift_model`` (strict, and tolerant as check reads a QDQ file: report, problems, left nodes and the lifted model's
SHA-256) on the examples, 400 suite models and 1,500 mutants of tests/mutation_fuzz.py (seed 23) — the malformed
models a speed change to check or lift is most likely to treat differently.

With ``--models LISTING`` (after ``--fuzz``, if given) the models are those LISTING names, one path per line (a
producer corpus: ``find CORPUS -name '*.onnx' > LISTING``).

Run: python benchmarks/same_results.py [--fuzz] [--models LISTING] BEFORE_CHECKOUT AFTER_CHECKOUT   (e.g. a
`git archive main` beside this one)
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def models(folder: pathlib.Path) -> list[str]:
    """The models compared: the examples, a sample of the suite, the large-model benchmark's forms (built here)."""
    cases = sorted(str(p) for p in (ROOT / "conformance_tests" / "cases").rglob("*.onnx"))
    special = [c for c in cases if any(w in c.lower() for w in ("block", "reference", "nbits", "by-ref"))]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_large_model

    built = []
    for form in ("matmulnbits", "qdq"):
        (folder / form).mkdir()
        built.append(str(bench_large_model.build(folder / form, form, 1, 4096, 11008, 32)[0]))
    chosen = sorted(str(p) for p in (ROOT / "examples").glob("*.onnx")) + cases[24::25] + special[2::3][:40] + built
    return list(dict.fromkeys(chosen))


def _digest(path: str) -> str | None:
    p = pathlib.Path(path)
    if not p.exists():
        return None
    h = hashlib.sha256(p.read_bytes())
    for extra in sorted(p.parent.glob("*.data")):
        h.update(extra.name.encode())
        h.update(extra.read_bytes())
    return h.hexdigest()


def record(listing: str, out_path: str) -> None:
    """In the checkout this process runs from (the current folder): one JSON line of results per model."""
    sys.path.insert(0, os.getcwd())
    from onnx_qtypes.cli import main

    def call(argv: list[str], tmp: str) -> list:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as stop:
                code = stop.code
            except Exception as exc:  # recorded: a traceback is a result too
                code = f"{type(exc).__name__}: {exc}"
        return [code, out.getvalue().replace(tmp, "TMP"), err.getvalue().replace(tmp, "TMP")]

    with open(out_path, "w") as results:
        for model in pathlib.Path(listing).read_text().split("\n"):
            if not model:
                continue
            tmp = tempfile.mkdtemp(prefix="same.")
            lifted, lowered = os.path.join(tmp, "lifted.onnx"), os.path.join(tmp, "low", "lowered.onnx")
            os.mkdir(os.path.dirname(lowered))
            got = {"model": model, "check": call(["check", model, "--format", "json"], tmp),
                   "show": call(["show", model], tmp), "show_json": call(["show", model, "--format", "json"], tmp),
                   "lift": call(["lift", model, lifted], tmp) + [_digest(lifted)]}
            source = lifted if os.path.exists(lifted) else model
            got["lower"] = call(["lower", source, lowered], tmp) + [_digest(lowered)]
            if os.path.exists(lifted):
                got["show_lifted"] = call(["show", lifted, "--format", "json"], tmp)
                got["check_lifted"] = call(["check", lifted, "--format", "json"], tmp)
            results.write(json.dumps(got) + "\n")
            shutil.rmtree(tmp, ignore_errors=True)


def fuzz_models(folder: pathlib.Path) -> list[str]:
    """The --fuzz corpus: the examples, 400 suite models, and 1,500 mutants written to ``folder``."""
    sys.path.insert(0, str(ROOT / "tests"))
    import mutation_fuzz

    seeds = mutation_fuzz.seed_files(400)
    chosen = [str(p) for p in seeds]
    for k, m in enumerate(mutation_fuzz.mutants(seeds, 1500, 23)):
        path = folder / f"mutant{k:04d}.onnx"
        path.write_bytes(m.data)
        chosen.append(str(path))
    return chosen


def record_fuzz(listing: str, out_path: str) -> None:
    """In the checkout this process runs from: diagnose and lift_model of every model, one JSON line each."""
    import signal
    import warnings

    sys.path.insert(0, os.getcwd())
    from onnx_qtypes.interop.lift import lift_model

    from onnx_qtypes import diagnose

    warnings.simplefilter("ignore")

    def alarm(*_: object) -> None:
        raise TimeoutError("over 60 s")

    signal.signal(signal.SIGALRM, alarm)

    def guarded(fn):
        signal.alarm(60)
        try:
            return fn()
        except Exception as exc:  # recorded: an error is a result too
            return [type(exc).__name__, str(exc)]
        finally:
            signal.alarm(0)

    def diagnosed(path: str) -> list:
        d = diagnose(path)
        return [d.form, list(d.notes), [repr(x) for x in d.diagnostics]]

    def lifted(path: str, **options: bool) -> list:
        r = lift_model(path, **options)
        return [hashlib.sha256(r.model.SerializeToString(deterministic=True)).hexdigest(), r.notes, r.warnings,
                [f"{p!r} {p} {(p.rule, p.node, p.tensor, p.parameter)}" for p in r.problems], [repr(n) for n in r.left],
                r.typed_tensors, r.removed_quantize, r.removed_dequantize, r.qoperator_nodes, r.statistics]

    with open(out_path, "w") as results:
        for model in pathlib.Path(listing).read_text().split("\n"):
            if model:
                got = {"model": model, "diagnose": guarded(lambda: diagnosed(model)),
                       "lift": guarded(lambda: lifted(model)),
                       "lift_tolerant": guarded(lambda: lifted(model, tolerant=True, keep_origins=True))}
                results.write(json.dumps(got, default=repr) + "\n")


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] in ("--record", "--record-fuzz"):  # the child: record from the current folder
        (record if sys.argv[1] == "--record" else record_fuzz)(sys.argv[2], sys.argv[3])
        return 0
    args = sys.argv[1:]
    fuzz = args[:1] == ["--fuzz"]
    args = args[1:] if fuzz else args
    given = None
    if args[:1] == ["--models"] and len(args) > 1:  # a listing of one's own (a producer corpus), one path a line
        given, args = [str(pathlib.Path(m).resolve()) for m in pathlib.Path(args[1]).read_text().split()], args[2:]
    checkouts = args
    if len(checkouts) != 2:
        print("\n".join(__doc__.strip().splitlines()[-3:]), file=sys.stderr)
        return 2
    folder = pathlib.Path(tempfile.mkdtemp(prefix="same_results."))
    try:
        listing = folder / "models.txt"
        listing.write_text("\n".join(given if given is not None else fuzz_models(folder) if fuzz else models(folder))
                           + "\n")
        runs = []
        for k, checkout in enumerate(checkouts):
            out = folder / f"{k}.jsonl"
            subprocess.run([sys.executable, os.path.abspath(__file__), "--record-fuzz" if fuzz else "--record",
                            str(listing), str(out)], cwd=checkout, check=True)
            runs.append({json.loads(line)["model"]: json.loads(line) for line in out.read_text().splitlines()})
        before, after = runs
        compared = differ = 0
        for model, results in before.items():
            for key, value in results.items():
                if key == "model":
                    continue
                compared += 1
                if after.get(model, {}).get(key) != value:
                    differ += 1
                    print(f"differs: {model} {key}\n  before: {str(value)[:300]}\n  after:  "
                          f"{str(after.get(model, {}).get(key))[:300]}")
        print(f"{len(before)} models, {compared} results compared, {differ} differ")
        return 1 if differ else 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
