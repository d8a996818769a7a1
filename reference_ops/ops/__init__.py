"""Integer-only kernels, one ONNX operator per module.

Each module exposes ``run(ctx: KernelContext) -> tuple`` computing the
node's outputs from storage integers with integer arithmetic (exact
accumulation, fixed-point requantization from ``fixed_point``), and raises
``Unsupported`` (with the reason) for types or attributes it does not
cover; the evaluator then uses the definition for that node. Modules that
requantize also expose ``plan(ctx) -> dict[str, ndarray]``: the named real
multipliers (and tables) the kernel needs, which ``export`` turns into the
integer constants an integer-only target stores.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported

__all__ = ["KERNELS", "KernelContext", "Unsupported", "kernel"]

# ONNX operator -> module in this package
KERNELS = {
    "AveragePool": "average_pool",
    "Clip": "clip",
    "Concat": "concat",
    "Conv": "conv",
    "ConvTranspose": "conv_transpose",
    "DequantizeLinear": "dequantize_linear",
    "Flatten": "flatten",
    "Gather": "gather",
    "Gemm": "gemm",
    "GlobalAveragePool": "global_average_pool",
    "HardSwish": "hard_swish",
    "LeakyRelu": "leaky_relu",
    "MatMul": "matmul",
    "MaxPool": "max_pool",
    "Mul": "mul",
    "Pad": "pad",
    "QuantizeLinear": "quantize_linear",
    "ReduceMean": "reduce_mean",
    "Relu": "relu",
    "Reshape": "reshape",
    "Resize": "resize",
    "Sigmoid": "sigmoid",
    "Slice": "slice",
    "Softmax": "softmax",
    "Squeeze": "squeeze",
    "Sub": "sub",
    "Add": "add",
    "Tanh": "tanh",
    "Transpose": "transpose",
    "Unsqueeze": "unsqueeze",
}


def kernel(op_type: str) -> ModuleType | None:
    """The kernel module of an ONNX operator (default domain), or None."""
    module = KERNELS.get(op_type)
    return None if module is None else importlib.import_module(f"{__name__}.{module}")
