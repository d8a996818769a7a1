"""GGUF: what keeping the typed planes costs, and how lifting scales (benchmarks/README.md#gguf).

Part 1, storage fidelity (``--weight``): a 4096 x 4096 weight in each lifted format. GGUF interleaves each block's
d, scales and codes, and ONNX external data gives a tensor one contiguous byte range, so the typed model cannot
point into the .gguf file: it re-encodes the blocks into planes (codes, scales, offsets). Printed per format: the
bytes in GGUF and as planes, and the time to re-encode, side by side with gguf's own dequantizer on the same bytes
(the peer: what a loader of the file spends anyway) and with a plain copy of the bytes (what pointing into the
file would cost at most).

Part 2, scale (``--layers``): a synthetic 7B-class GGUF file (LLaMA-2 7B's tensor set: 32 blocks of 4096-wide
attention and 11008-wide FFN weights, 32000-token embedding and output, a Q4_K_M-like mix of Q4_K and Q6_K with F32
norms; valid random blocks) written with gguf's GGUFWriter, then ``onnx-qtypes lift`` in a child process with
external data: its wall time and peak resident memory (ru_maxrss) against the file size, at each layer count.

    python benchmarks/bench_gguf.py --weight [--repeat 3]
    python benchmarks/bench_gguf.py --layers 4 8 16 32 [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import gc
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import gguf_files  # noqa: E402 (the tests' GGUF writer)

from onnx_qtypes.interop.gguf import plane_bytes, plane_layout  # noqa: E402
from onnx_qtypes.interop.gguf_formats import FORMATS  # noqa: E402

K = N = 4096


def _median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def weight(repeat: int) -> None:
    import gguf  # noqa: PLC0415

    rng = np.random.default_rng(0)
    print(f"4096 x 4096 weight, median of {repeat}; gguf {importlib.metadata.version('gguf')}")
    print("| format | GGUF bytes | planes bytes | planes / GGUF | re-encode | gguf dequantize (peer) | byte copy |")
    print("|---|---|---|---|---|---|---|")
    for name, fmt in FORMATS.items():
        data = gguf_files.tensor_bytes(fmt, (N, K), rng)
        blocks = data.reshape(-1, fmt.block_bytes)
        layout = plane_layout(fmt, (N, K))

        def reencode():
            planes = fmt.unpack(blocks)
            return sum(len(plane_bytes(fmt, planes, plane)) for plane, *_ in layout)

        planes_size = reencode()
        t_planes = _median_seconds(reencode, repeat)
        t_peer = _median_seconds(lambda: gguf.quants.dequantize(data, gguf.GGMLQuantizationType[name]), repeat)
        t_copy = _median_seconds(lambda: data.copy(), repeat)
        print(f"| {name} | {data.nbytes:,} | {planes_size:,} | {planes_size / data.nbytes:.3f} | "
              f"{t_planes * 1e3:.0f} ms | {t_peer * 1e3:.0f} ms | {t_copy * 1e3:.1f} ms |")


def llama7b(layers: int) -> list[tuple[str, str, tuple[int, ...]]]:
    """LLaMA-2 7B's tensors (``layers`` of its 32 blocks), Q4_K_M-like types."""
    d, ff, vocab = 4096, 11008, 32000
    out = [("token_embd.weight", "Q4_K", (vocab, d))]
    for i in range(layers):
        six = i % 2 == 0  # Q4_K_M keeps half the attn_v / ffn_down weights at Q6_K
        out += [(f"blk.{i}.attn_norm.weight", "F32", (d,)),
                (f"blk.{i}.attn_q.weight", "Q4_K", (d, d)), (f"blk.{i}.attn_k.weight", "Q4_K", (d, d)),
                (f"blk.{i}.attn_v.weight", "Q6_K" if six else "Q4_K", (d, d)),
                (f"blk.{i}.attn_output.weight", "Q4_K", (d, d)),
                (f"blk.{i}.ffn_norm.weight", "F32", (d,)),
                (f"blk.{i}.ffn_gate.weight", "Q4_K", (ff, d)), (f"blk.{i}.ffn_up.weight", "Q4_K", (ff, d)),
                (f"blk.{i}.ffn_down.weight", "Q6_K" if six else "Q4_K", (d, ff))]
    return [*out, ("output_norm.weight", "F32", (d,)), ("output.weight", "Q6_K", (vocab, d))]


def write_streaming(path: pathlib.Path, tensors: list[tuple[str, str, tuple[int, ...]]]) -> None:
    """The file written tensor by tensor (gguf's writer holds only one tensor's bytes at a time here)."""
    import gguf  # noqa: PLC0415

    rng = np.random.default_rng(7)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "synthetic 7B-class tensor set")
    writer.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(32000)])
    for name, kind, shape in tensors:
        if kind in FORMATS:
            fmt = FORMATS[kind]
            nbytes = int(np.prod(shape)) // fmt.block * fmt.block_bytes
            writer.add_tensor_info(name, (*shape[:-1], shape[-1] // fmt.block * fmt.block_bytes), np.dtype(np.uint8),
                                   nbytes, raw_dtype=gguf.GGMLQuantizationType[kind])
        else:
            writer.add_tensor_info(name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for name, kind, shape in tensors:
        if kind in FORMATS:
            data = gguf_files.tensor_bytes(FORMATS[kind], shape, rng)
        else:
            data = rng.normal(1, 0.1, shape).astype(np.float32)
        writer.write_tensor_data(data)
        del data
    writer.close()


LIFT = ("import resource, sys, time; from onnx_qtypes.interop.gguf import lift_gguf; t = time.perf_counter(); "
        "r = lift_gguf(sys.argv[1], sys.argv[2], external=True); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r.bytes_written)")


def scale(layer_counts: list[int], keep: pathlib.Path | None) -> None:
    print("| layers | GGUF file | lift time | MB/s | peak RSS (lift process) | RSS / file | written (.onnx.data) |")
    print("|---|---|---|---|---|---|---|")
    for layers in layer_counts:
        folder = pathlib.Path(tempfile.mkdtemp(prefix="bench-gguf-", dir=keep))
        try:
            source = folder / "model.gguf"
            write_streaming(source, llama7b(layers))
            size = source.stat().st_size
            done = subprocess.run([sys.executable, "-c", LIFT, str(source), str(folder / "model.onnx")],
                                  capture_output=True, text=True, check=True)
            seconds, rss_kib, written = done.stdout.split()
            rss = int(rss_kib) * 1024
            print(f"| {layers} | {size / 2**30:.2f} GiB | {float(seconds):.1f} s | {size / 2**20 / float(seconds):.0f} | "
                  f"{rss / 2**20:.0f} MiB | {rss / size:.3f} | {int(written) / 2**30:.2f} GiB |", flush=True)
        finally:
            if keep is None:
                shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weight", action="store_true", help="part 1: a 4096 x 4096 weight per format")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--layers", type=int, nargs="*", default=[], help="part 2: 7B-class files of these layer counts")
    parser.add_argument("--keep", type=pathlib.Path, help="write the files under this folder and keep them")
    args = parser.parse_args()
    if args.weight:
        weight(args.repeat)
    if args.layers:
        scale(args.layers, args.keep)
    if not args.weight and not args.layers:
        parser.error("give --weight and / or --layers N ...")
    resource.getrusage(resource.RUSAGE_SELF)


if __name__ == "__main__":
    main()
