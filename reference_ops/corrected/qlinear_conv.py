"""QLinearConv with per-channel weights over one or three spatial axes, as onnx.reference computes two.

onnx.reference shapes a per-channel ``w_scale`` for 2-D convolutions only (``np.expand_dims(w_scale, (0, 2, 3))``),
so a 1-D or 3-D QLinearConv with per-channel weights failed with numpy's broadcast error. Each output channel is
computed here as its own per-tensor QLinearConv by onnx.reference: that channel's weights, scale, zero point and bias,
over the input channels of its group. The arithmetic per element is onnx.reference's own (its integer convolution,
then ``acc * (x_scale * w_scale / y_scale)``), only the scale is a scalar. Only a QLinearConv the lift keeps as written
gets here (a scale no type holds next to it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class QLinearConv(Corrected):
    def _run(self, x: Any, x_scale: Any, x_zero_point: Any, w: Any, w_scale: Any, w_zero_point: Any,  # noqa: PLR0913
             y_scale: Any, y_zero_point: Any, B: Any = None, **_: Any) -> tuple:  # noqa: N803 (ONNX's name)
        if np.size(w_scale) <= 1 or np.ndim(x) == 4:
            return self.stock_run(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B)
        x, w, w_scale = np.asarray(x), np.asarray(w), np.asarray(w_scale)
        if problem := self._problem(x, w, w_scale) or _operand_problem(w.shape[0], x_scale, x_zero_point, w_zero_point,
                                                                       y_scale, y_zero_point, B):
            raise Refused(f"QLinearConv with per-channel weights: {problem}")
        group = 1 if self.group is None else self.group
        per_group = w.shape[0] // group  # output channels of one group, which read x.shape[1] // group channels each
        w_zero = np.broadcast_to(np.asarray(w_zero_point if w_zero_point is not None else 0), w_scale.shape)
        channels = []
        for c in range(w.shape[0]):
            g = c // per_group
            x_group = x[:, g * w.shape[1]:(g + 1) * w.shape[1]]
            (y,) = self.stock_run(x_group, x_scale, x_zero_point, w[c:c + 1], w_scale[c], w_zero[c], y_scale,
                                  y_zero_point, None if B is None else np.asarray(B)[c:c + 1], group=1)
            channels.append(y)
        return (np.concatenate(channels, axis=1),)

    def _problem(self, x: np.ndarray, w: np.ndarray, w_scale: np.ndarray) -> str | None:
        """Why the node is no convolution onnx.reference computes per channel (shapes and attributes), or None."""
        group = 1 if self.group is None else self.group
        if group < 1:
            return f"group {group}: a convolution has at least one group"
        if x.ndim != w.ndim or x.ndim < 3 or w_scale.ndim != 1 or w_scale.size != w.shape[0]:
            return (f"x of shape {list(x.shape)}, w of shape {list(w.shape)} and w_scale of shape "
                    f"{list(w_scale.shape)} (one scale per output channel, N x C x D1 x ... x Dn)")
        if w.shape[0] % group or x.shape[1] != w.shape[1] * group:
            return f"group {group} does not split x's {x.shape[1]} channels and w's {w.shape[0]} evenly"
        rank = x.ndim - 2
        given = {"kernel_shape": self.kernel_shape, "strides": self.strides, "dilations": self.dilations}
        wrong = [f"{k} {list(v)}" for k, v in given.items() if v is not None and len(v) != rank]
        wrong += [f"pads {list(self.pads)}"] if self.pads is not None and len(self.pads) != 2 * rank else []
        if self.kernel_shape is not None and list(self.kernel_shape) != list(w.shape[2:]):
            wrong.append(f"kernel_shape {list(self.kernel_shape)} for weights of shape {list(w.shape)}")
        if wrong:
            return f"a {rank}-D convolution takes {rank} values per attribute ({2 * rank} pads): {', '.join(wrong)}"
        if any(v < 1 for v in (*(self.strides or ()), *(self.dilations or ()))):
            return f"strides {list(self.strides or [])} and dilations {list(self.dilations or [])} must be 1 or more"
        if (self.auto_pad or "NOTSET") not in _AUTO_PADS:
            return f"auto_pad {self.auto_pad!r} is none of {', '.join(_AUTO_PADS)}"
        return None


_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _operand_problem(channels: int, x_scale: Any, x_zero_point: Any, w_zero_point: Any, y_scale: Any,
                     y_zero_point: Any, bias: Any) -> str | None:
    """Why the other operands do not fit a per-channel QLinearConv of ``channels`` output channels (onnxruntime's
    checks): one scale and zero point for x and y, one zero point or one per channel for w, a bias of one value per
    channel."""
    for name, value in (("x_scale", x_scale), ("x_zero_point", x_zero_point), ("y_scale", y_scale),
                        ("y_zero_point", y_zero_point)):
        if value is not None and np.size(value) != 1:
            return f"{name} holds {np.size(value)} values, where it takes one"
    if w_zero_point is not None and np.size(w_zero_point) not in (1, channels):
        return f"w_zero_point holds {np.size(w_zero_point)} values for {channels} output channels"
    if bias is not None and np.shape(bias) != (channels,):
        return f"the bias has shape {list(np.shape(bias))}, where it takes one value per output channel ({channels})"
    return None
