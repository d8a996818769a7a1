"""A 7B-class 4-bit model through `onnx-qtypes check`, `show`, `lift` and `lower`: wall time and peak memory.

The model is made here, with fixed seeds, into a temporary folder (never committed): LLaMA-7B's linear layers,
per layer q / k / v / o (hidden x hidden) and the MLP's gate / up (hidden x intermediate) and down
(intermediate x hidden), every weight int4 in blocks of --block along K with float16 scales, the weights in
external data. Two forms of the same weights:

- matmulnbits: com.microsoft.MatMulNBits, as onnxruntime's MatMulNBitsQuantizer writes it (B uint8
  [N, K / block, block / 2], scales [N * K / block], symmetric: no zero points);
- qdq: a blocked int4 DequantizeLinear (axis 0, block_size) feeding a plain MatMul, as the QDQ quantizers
  (onnxruntime's DefaultWeightOnlyQuantizer with QDQ, NNCF) write it.

Each command runs as its own process (`onnx_qtypes`' __main__), so its peak resident memory (VmHWM of that
process, which it writes at exit; mapped file pages count) is its own, and is compared with the bytes of the
weights; its time is compared with a named peer run the same way on the same file:

- check: onnx.checker.check_model(path, full_check=True) (reads the graph, checks that the external files
  exist, infers shapes);
- show: onnx.load(path, load_external_data=False) (the least any tool reading the model does);
- lift, lower: onnx.load(path) + onnx.save_model(..., save_as_external_data=True), the standard way to write
  a model with its external data elsewhere (every weight in memory at once).

lift runs on each form; lower on lift's output (typed, parameters by reference). Targets (issue 20,
Deliver 5): peak memory well below the weight bytes for every command.

Run: python benchmarks/bench_large_model.py [--layers 2 4 8] [--hidden 4096] [--intermediate 11008] [--block 32]
     [--forms matmulnbits qdq] [--commands check show lift lower] [--keep DIR] [--source CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

import numpy as np
import onnx
from onnx import TensorProto, helper

IR_VERSION, OPSET = 10, 21
FLOAT = TensorProto.FLOAT16
PROJECTIONS = ("q", "k", "v", "o", "gate", "up", "down")


class Weight(NamedTuple):
    name: str
    k: int  # input features
    n: int  # output features


def layer_weights(layer: int, hidden: int, intermediate: int) -> list[Weight]:
    shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "o": (hidden, hidden),
              "gate": (hidden, intermediate), "up": (hidden, intermediate), "down": (intermediate, hidden)}
    return [Weight(f"layers.{layer}.{p}", *shapes[p]) for p in PROJECTIONS]


class ExternalWriter:
    """Appends tensors to one external data file, one at a time (the generator never holds all weights)."""

    def __init__(self, folder: pathlib.Path, location: str) -> None:
        self.location = location
        self.file = open(folder / location, "wb")  # noqa: SIM115 - closed by close()
        self.offset = 0
        self.weight_bytes = 0

    def tensor(self, name: str, data_type: int, dims: list[int], data: bytes, weight: bool = False) -> TensorProto:
        pad = -self.offset % 4096  # page-aligned, as onnx writes large tensors
        self.file.write(b"\0" * pad)
        self.offset += pad
        self.file.write(data)
        tensor = TensorProto(name=name, data_type=data_type, dims=dims, data_location=TensorProto.EXTERNAL)
        for key, value in (("location", self.location), ("offset", str(self.offset)), ("length", str(len(data)))):
            tensor.external_data.add(key=key, value=value)
        self.offset += len(data)
        self.weight_bytes += len(data) if weight else 0
        return tensor

    def close(self) -> None:
        self.file.close()


def build(folder: pathlib.Path, form: str, layers: int, hidden: int, intermediate: int, block: int,
          seed: int = 0) -> tuple[pathlib.Path, int]:
    """Write model.onnx (+ model.onnx.data) of ``form`` into ``folder``; returns (path, bytes of the int4 weights)."""
    rng = np.random.default_rng(seed)
    writer = ExternalWriter(folder, "model.onnx.data")
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []
    x = "x"
    for layer in range(layers):
        weights = {w.name.rsplit(".", 1)[1]: w for w in layer_weights(layer, hidden, intermediate)}
        outputs: dict[str, str] = {}
        for p in PROJECTIONS:
            w = weights[p]
            source = {"q": x, "k": outputs.get("q"), "v": outputs.get("k"), "o": outputs.get("v"),
                      "gate": outputs.get("o"), "up": outputs.get("o"), "down": outputs.get("mul")}[p]
            out = f"{w.name}.out"
            blocks = -(-w.k // block)
            size = w.n * blocks * block // 2 if form == "matmulnbits" else -(-w.k * w.n // 2)  # (K padded to blocks)
            codes = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()  # two int4 codes a byte
            scales = rng.uniform(0.002, 0.02, size=blocks * w.n).astype(np.float16)
            if form == "matmulnbits":
                inits.append(writer.tensor(f"{w.name}.weight_Q4", TensorProto.UINT8, [w.n, blocks, block // 2], codes,
                                           weight=True))
                inits.append(writer.tensor(f"{w.name}.weight_scales", FLOAT, [w.n * blocks], scales.tobytes()))
                nodes.append(helper.make_node("MatMulNBits", [source, f"{w.name}.weight_Q4", f"{w.name}.weight_scales"],
                                              [out], name=f"{w.name}.MatMulNBits", domain="com.microsoft",
                                              K=w.k, N=w.n, bits=4, block_size=block, accuracy_level=4))
            else:
                inits.append(writer.tensor(f"{w.name}.weight", TensorProto.INT4, [w.k, w.n], codes, weight=True))
                inits.append(writer.tensor(f"{w.name}.weight_scale", FLOAT, [blocks, w.n], scales.tobytes()))
                nodes.append(helper.make_node("DequantizeLinear", [f"{w.name}.weight", f"{w.name}.weight_scale"],
                                              [f"{w.name}.weight_dq"], name=f"{w.name}.DequantizeLinear", axis=0,
                                              block_size=block))
                nodes.append(helper.make_node("MatMul", [source, f"{w.name}.weight_dq"], [out], name=f"{w.name}.MatMul"))
            outputs[p] = out
            if p == "up":
                outputs["mul"] = f"layers.{layer}.mlp.mul"
                nodes.append(helper.make_node("Mul", [outputs["gate"], out], [outputs["mul"]], name=f"layers.{layer}.mlp"))
        nodes.append(helper.make_node("Add", [x, outputs["down"]], [f"layers.{layer}.residual"],
                                      name=f"layers.{layer}.residual"))
        x = f"layers.{layer}.residual"
    writer.close()
    graph = helper.make_graph(nodes, f"llama-like-{form}",
                              [helper.make_tensor_value_info("x", FLOAT, [1, "sequence", hidden])],
                              [helper.make_tensor_value_info(x, FLOAT, [1, "sequence", hidden])], inits)
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid("com.microsoft", 1)] if form == "matmulnbits" else [])
    model = helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION, producer_name="bench_large_model")
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path, writer.weight_bytes


class Run(NamedTuple):
    seconds: float
    peak_bytes: int
    code: int
    stderr: str


# Each measured process writes its own peak resident memory (VmHWM: file pages it mapped count too) when it exits.
# Not ru_maxrss: Linux carries the parent's high-water mark into a child at exec (this script's own memory, holding
# a layer's weights while it writes the model, would be every child's floor).
PEAK = ("import atexit, os\n"
        "def _peak():\n"
        "    with open('/proc/self/status') as status:\n"
        "        kib = next(int(line.split()[1]) for line in status if line.startswith('VmHWM:'))\n"
        "    with open(os.environ['BENCH_PEAK_FILE'], 'w') as out:\n"
        "        out.write(str(kib * 1024))\n"
        "atexit.register(_peak)\n")


def run(argv: list[str], cwd: str | None = None) -> Run:
    """One process: wall time, its own peak resident memory (VmHWM at exit), exit code."""
    with tempfile.NamedTemporaryFile(prefix="bench-peak.", delete=False) as handle:
        peak_file = handle.name
    try:
        start = time.perf_counter()
        process = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd,
                                 env={**os.environ, "BENCH_PEAK_FILE": peak_file}, check=False)
        seconds = time.perf_counter() - start
        text = pathlib.Path(peak_file).read_text()
        return Run(seconds, int(text) if text else 0, process.returncode, process.stderr.strip())
    finally:
        os.unlink(peak_file)


PEERS = {
    "check": ("onnx.checker.check_model(path, full_check=True)",
              "import onnx, sys; onnx.checker.check_model(sys.argv[1], full_check=True)"),
    "show": ("onnx.load(path, load_external_data=False)",
             "import onnx, sys; onnx.load(sys.argv[1], load_external_data=False)"),
    "rewrite": ("onnx.load(path) + onnx.save_model(external data)",
                "import onnx, sys; m = onnx.load(sys.argv[1]); "
                "onnx.save_model(m, sys.argv[2], save_as_external_data=True, location='peer.onnx.data')"),
}


def ours(command: str, model: pathlib.Path, out: pathlib.Path) -> list[str]:
    code = PEAK + "import runpy, sys; sys.argv[0] = 'onnx-qtypes'; runpy.run_module('onnx_qtypes', run_name='__main__')"
    base = [sys.executable, "-c", code, command, str(model)]
    return base + ([str(out)] if command in ("lift", "lower") else [])


def peer(command: str, model: pathlib.Path, out: pathlib.Path) -> tuple[str, list[str]]:
    label, code = PEERS["rewrite" if command in ("lift", "lower") else command]
    return label, [sys.executable, "-c", PEAK + code, str(model), str(out)]


def gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[4],
                        help="layer counts, each a model of its own (e.g. 2 4 8: does memory grow with them?)")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=11008)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--forms", nargs="+", default=["matmulnbits", "qdq"], choices=["matmulnbits", "qdq"])
    parser.add_argument("--commands", nargs="+", default=["check", "show", "lift", "lower"],
                        choices=["check", "show", "lift", "lower"])
    parser.add_argument("--keep", metavar="DIR", help="build the models in DIR and keep them (default: a temp dir)")
    parser.add_argument("--source", metavar="CHECKOUT",
                        help="run onnx-qtypes from this source checkout (e.g. another commit's worktree, for a before/"
                             "after comparison; default: the installed package)")
    args = parser.parse_args()
    root = pathlib.Path(args.keep) if args.keep else pathlib.Path(tempfile.mkdtemp(prefix="bench_large_model."))
    root.mkdir(parents=True, exist_ok=True)
    print(f"hidden {args.hidden}, intermediate {args.intermediate}, int4 blocks of {args.block}, float16 scales; "
          f"onnx {onnx.__version__}")
    print("| layers | form | int4 weights | command | time | peer | peer time | time / peer | peak memory "
          "| peak / weight bytes | peer peak | exit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for layers in args.layers:
            for form in args.forms:
                folder = root / f"{form}-{layers}"
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                model, weight_bytes = build(folder, form, layers, args.hidden, args.intermediate, args.block)
                inputs = {"check": model, "show": model, "lift": model, "lower": folder / "lifted.onnx"}
                head = f"| {layers} | {form} | {gib(weight_bytes)} |"
                for command in args.commands:
                    source = inputs[command]
                    if not source.exists():
                        print(f"{head} {command} | (no {source.name}: lift first) | | | | | | | |", flush=True)
                        continue
                    out = folder / ("lifted.onnx" if command == "lift" else "lowered.onnx")
                    mine = run(ours(command, source, out), cwd=args.source)
                    label, argv = peer(command, source, folder / "peer.onnx")
                    theirs = run(argv)
                    for leftover in ("peer.onnx", "peer.onnx.data"):
                        (folder / leftover).unlink(missing_ok=True)
                    print(f"{head} {command} | {mine.seconds:.1f} s | {label} | {theirs.seconds:.1f} s | "
                          f"{mine.seconds / theirs.seconds:.2f}x | {gib(mine.peak_bytes)} | "
                          f"{mine.peak_bytes / weight_bytes:.2f} | {gib(theirs.peak_bytes)} | {mine.code} |", flush=True)
                    if mine.code not in (0, 1):
                        print(f"    {command}: {mine.stderr.splitlines()[-1] if mine.stderr else ''}", flush=True)
                if not args.keep:
                    shutil.rmtree(folder, ignore_errors=True)  # a 32-layer model is 3.5 GB, and its lifted copy
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
