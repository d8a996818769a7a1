"""Which scales onnxruntime's QDQ quantizer gives the inputs of a Concat.

Run: PYTHONPATH=. python proposal/experiments/concat_scales.py

Builds the corpus attention block (tests/corpus.py: quantize_static of the
installed onnxruntime, MinMax calibration) under every setting and prints, per
setting, the scales of the DequantizeLinear nodes feeding its Concat. Different
scales make the Concat requantize: valid under the extension, refused by
targets that need one shared scale (QT506 under tflite-int8).
"""

from __future__ import annotations

import pathlib
import sys

import onnx
from onnx import numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import stock_tools as st  # noqa: E402
from corpus import corpus_models  # noqa: E402


def concat_input_scales(model: onnx.ModelProto) -> list[list[float]]:
    producer = {out: node for node in model.graph.node for out in node.output}
    initializer = {init.name: init for init in model.graph.initializer}
    found = []
    for node in model.graph.node:
        if node.op_type != "Concat":
            continue
        readers = [producer.get(name) for name in node.input]
        found.append([float(numpy_helper.to_array(initializer[dq.input[1]]).ravel()[0])
                      for dq in readers if dq is not None and dq.op_type == "DequantizeLinear"])
    return found


def main() -> int:
    print(st.versions(), "\n")
    print("| corpus model | Concat input scales |\n|---|---|")
    for name, model in sorted(corpus_models().items()):
        for scales in concat_input_scales(model):
            print(f"| `{name}` | {', '.join(f'{s:.4g}' for s in scales)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
