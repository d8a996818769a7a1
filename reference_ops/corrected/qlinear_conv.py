"""QLinearConv with per-channel weights over one spatial axis, as onnx.reference computes two.

onnx.reference shapes a per-channel ``w_scale`` for 2-D convolutions only (``np.expand_dims(w_scale, (0, 2, 3))``),
so a 1-D QLinearConv with per-channel weights failed with numpy's broadcast error. It is computed here as the 2-D
convolution it equals, over a height of 1 (the kernel, strides, dilations and pads of that axis 1, 1, 1 and 0). Only a
QLinearConv the lift keeps as written gets here (a scale no type holds next to it); a 3-D one with per-channel weights
is refused with that reason (onnxruntime computes it).
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
        x, w = np.asarray(x), np.asarray(w)
        if x.ndim != 3 or w.ndim != 3:
            raise Refused(f"QLinearConv with per-channel weights: x of shape {list(x.shape)} and w of shape "
                          f"{list(w.shape)}; onnx.reference computes 1 or 2 spatial axes (N x C x D1 [x D2])")
        given = {"kernel_shape": self.kernel_shape, "strides": self.strides, "dilations": self.dilations}
        wrong = [f"{k} {list(v)}" for k, v in given.items() if v is not None and len(v) != 1]
        wrong += [f"pads {list(self.pads)}"] if self.pads is not None and len(self.pads) != 2 else []
        if self.kernel_shape is not None and list(self.kernel_shape) != [w.shape[-1]]:
            wrong.append(f"kernel_shape {list(self.kernel_shape)} for weights of width {w.shape[-1]}")
        if wrong:
            raise Refused(f"a 1-D QLinearConv takes one value per spatial axis (two pads): {', '.join(wrong)}")
        pads = list(self.pads or (0, 0))
        (y,) = self.stock_run(x[:, :, None, :], x_scale, x_zero_point, w[:, :, None, :], w_scale, w_zero_point,
                              y_scale, y_zero_point, B, kernel_shape=[1, w.shape[-1]],
                              dilations=[1, *(self.dilations or (1,))], strides=[1, *(self.strides or (1,))],
                              pads=[0, pads[0], 0, pads[1]])
        return (y[:, :, 0, :],)
