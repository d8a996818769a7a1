"""How many channels / groups of NNCF-style symmetric weights get a negative scale, and how many could be negated.

Run: PYTHONPATH=. python proposal/experiments/nncf_negative_scales.py

For each mode of tests/corpus_nncf_negative.py (INT8_SYM and INT4_SYM per
channel, INT4_SYM in groups of 16) and each of its two MatMul weights ([32, 64]
and [64, 16]), prints the slices (channels or groups), those with a negative
scale, and those of them that store storage_min (whose negation does not fit
the storage type, so the slice cannot be negated exactly). The handmade
models are counted; with nncf installed, nncf.compress_weights' own output is
counted beside them (tests/test_interop_nncf_negative.py checks the two are
bit-identical).
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from corpus_nncf_negative import handmade_models, negative_slices, nncf_models  # noqa: E402


def main() -> int:
    made = nncf_models()
    try:
        from importlib.metadata import version
        nncf = f"nncf {version('nncf')}: its output counted too"
    except Exception:  # noqa: BLE001 - not installed
        nncf = "nncf not installed: handmade copies only"
    print(f"onnx {onnx.__version__}; {nncf}\n")
    print("| source | mode | weight | slices | negative scale | negative and holding storage_min |")
    print("|---|---|---|---|---|---|")
    for source, models in (("handmade", handmade_models()), ("nncf", made)):
        for mode, model in models.items():
            for tensor, slices, negative, holding_min in negative_slices(model):
                print(f"| {source} | {mode} | `{tensor}` | {slices} | {negative} | {holding_min} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
