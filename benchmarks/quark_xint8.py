"""Quantize the corpus float models with AMD Quark's XINT8 preset and check them under the vitis-ai-dpu profile.

    pip install amd-quark            # 0.13 was measured; it needs torch and onnx <= 1.22: use its own venv
    python benchmarks/quark_xint8.py [--profile vitis-ai-dpu|FILE] [--keep DIR]

Quark runs in this interpreter (the venv that has amd-quark); the check runs through `onnx-qtypes` of the
environment given by --qtypes-python (default: the same interpreter), so that each side keeps its own onnx.
Prints, per model, the errors and warnings and the rules that found them. The profile before it was re-derived
from Quark's source: `git show 63ad97b:checker/profiles/vitis-ai-dpu.json > old.json` then `--profile old.json`.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ("cnn", "mlp", "attention")


def _float_models(folder: pathlib.Path, python: str) -> None:
    """The corpus float models (tests/corpus.py), written by the onnx-qtypes interpreter."""
    code = ("import sys, onnx; sys.path.insert(0, 'tests'); import corpus; "
            f"[onnx.save(getattr(corpus, n)(), f'{folder}/{{n}}.onnx'.format(n=n)) for n in {MODELS!r}]")
    subprocess.run([python, "-c", code], cwd=ROOT, check=True)


def _quantize(source: pathlib.Path, target: pathlib.Path) -> None:
    import onnx
    from onnxruntime.quantization import CalibrationDataReader
    from quark.onnx import ModelQuantizer
    from quark.onnx.quantization.config import Config, get_default_config

    model = onnx.load(source)
    first = model.graph.input[0]
    shape = [d.dim_value or 1 for d in first.type.tensor_type.shape.dim]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.samples = iter([{first.name: np.random.default_rng(i).normal(size=shape).astype(np.float32)}
                                 for i in range(8)])

        def get_next(self):  # noqa: ANN201
            return next(self.samples, None)

    ModelQuantizer(Config(global_quant_config=get_default_config("XINT8"))).quantize_model(
        str(source), str(target), Reader())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="vitis-ai-dpu")
    parser.add_argument("--qtypes-python", default=sys.executable, help="an interpreter with onnx-qtypes installed")
    parser.add_argument("--keep", metavar="DIR", help="keep the quantized models in DIR")
    args = parser.parse_args()
    folder = pathlib.Path(args.keep or tempfile.mkdtemp())
    folder.mkdir(parents=True, exist_ok=True)
    _float_models(folder, args.qtypes_python)
    print(f"{'model':10}  {'errors':>6}  {'warnings':>8}  rules")
    for name in MODELS:
        target = folder / f"{name}.XINT8.onnx"
        _quantize(folder / f"{name}.onnx", target)
        report = subprocess.run([args.qtypes_python, "-m", "onnx_qtypes", "check", str(target), "--profile",
                                 args.profile, "--format", "json"], capture_output=True, text=True, check=False)
        found = json.loads(report.stdout)["diagnostics"]
        errors = sum(d["severity"] == "error" for d in found)
        rules = sorted({d["rule"] for d in found})
        print(f"{name:10}  {errors:>6}  {len(found) - errors:>8}  {' '.join(rules) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
