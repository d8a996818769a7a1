"""BatchNormalization at every opset (1, 6, 7, 9, 14, 15).

onnx.reference evaluates opsets 9 to 13 in training mode whenever `momentum` is set, and the schema's
default sets it always, so every BatchNormalization of an exported CNN at those opsets normalizes by the
batch's statistics; at opsets 6 to 8 it returns a tuple and fails. ONNX defines the mode by
- opset 1, 6: the `is_test` attribute (default 0: training);
- opset 7 to 13: the outputs, Y alone is inference, Y with mean / var / saved_mean / saved_var is training;
- opset 14, 15: the `training_mode` attribute.
Inference normalizes by the running mean and var inputs, training by the batch's mean and (population)
variance, and outputs running mean / var = input * momentum + batch * (1 - momentum).
`spatial` = 0 (opset 7, 8) takes per-activation parameters (C x D1 x ... x Dn) and statistics over the batch
axis. saved_var (opset 6 to 13 training) is refused: ONNX says only "saved variance used during training to
speed up gradient computation", onnxruntime gives 1 / sqrt(var + epsilon).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused

SAVED_VAR = 4


class BatchNormalization(Corrected):
    def _run(self, x: Any, scale: Any, bias: Any, mean: Any, var: Any, **attributes: Any) -> tuple:
        node, opset = self.onnx_node, self.opset
        epsilon = float(_attribute(node, "epsilon", 1e-5))
        momentum = float(_attribute(node, "momentum", 0.9))
        spatial = int(_attribute(node, "spatial", 1)) if opset < 9 else 1
        wanted = [bool(name) for name in node.output]
        if opset < 7:
            training = not int(_attribute(node, "is_test", 0))
        elif opset < 14:
            training = any(wanted[1:])
        else:
            training = bool(int(_attribute(node, "training_mode", 0)))
        if training and len(wanted) > SAVED_VAR and wanted[SAVED_VAR] and opset < 14:
            raise Refused("BatchNormalization's saved_var output is not defined by ONNX (\"saved variance used "
                          "during training to speed up gradient computation\"); leave the output out")
        x = np.asarray(x)
        axes = (0,) if spatial == 0 else tuple(a for a in range(x.ndim) if a != 1)
        params = [_parameter(np.asarray(p), x, spatial, name) for p, name in
                  zip((scale, bias, mean, var), ("scale", "B", "mean", "var"))]
        s, b, m, v = (p.astype(np.float64) for p in params)
        if not training:
            y = s * (x - m) / np.sqrt(v + epsilon) + b
            return (y.astype(x.dtype),)
        batch_mean = x.mean(axis=axes, keepdims=True, dtype=np.float64)
        batch_var = x.var(axis=axes, keepdims=True, dtype=np.float64)
        y = (s * (x - batch_mean) / np.sqrt(batch_var + epsilon) + b).astype(x.dtype)
        running_mean = (m * momentum + batch_mean * (1 - momentum)).reshape(np.shape(mean)).astype(np.asarray(mean).dtype)
        running_var = (v * momentum + batch_var * (1 - momentum)).reshape(np.shape(var)).astype(np.asarray(var).dtype)
        outputs = [y, running_mean, running_var]
        if opset < 14:
            outputs.append(batch_mean.reshape(np.shape(mean)).astype(np.asarray(mean).dtype))
        return tuple(outputs[: len(node.output)])


def _attribute(node: Any, name: str, default: Any) -> Any:
    for attribute in node.attribute:
        if attribute.name == name:
            return attribute.f if attribute.type == attribute.FLOAT else attribute.i
    return default


def _parameter(p: np.ndarray, x: np.ndarray, spatial: int, name: str) -> np.ndarray:
    """A parameter shaped to broadcast against x: (C,) per channel, (C x D1 x ... x Dn) per activation."""
    if spatial == 0:
        if p.shape != x.shape[1:]:
            raise Refused(f"BatchNormalization with spatial=0 takes {name} of shape {list(x.shape[1:])} "
                          f"(C x D1 x ... x Dn), got {list(p.shape)}")
        return p.reshape(1, *p.shape)
    if p.ndim != 1 or x.ndim < 2 or p.shape[0] != x.shape[1]:
        raise Refused(f"BatchNormalization takes {name} of shape [C] = [{x.shape[1] if x.ndim > 1 else '?'}], "
                      f"got {list(p.shape)}")
    return p.reshape(1, -1, *([1] * (x.ndim - 2)))
