"""QLinearConv with per-channel weights over one spatial axis, as onnx.reference computes two.

onnx.reference shapes a per-channel ``w_scale`` for 2-D convolutions only (``np.expand_dims(w_scale, (0, 2, 3))``),
so a 1-D QLinearConv with per-channel weights failed with numpy's broadcast error. It is computed here as the 2-D
convolution it equals, over a height of 1 (the kernel, strides, dilations and pads of that axis 1, 1, 1 and 0). Only a
QLinearConv the lift keeps as written gets here (a scale no type holds next to it); a 3-D one with per-channel weights
is refused with that reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class QLinearConv(Corrected):
    def _run(self, x: Any, x_scale: Any, x_zero_point: Any, w: Any, w_scale: Any, w_zero_point: Any,  # noqa: PLR0913
             y_scale: Any, y_zero_point: Any, B: Any = None, **_: Any) -> tuple:  # noqa: N803 (ONNX's name)
        operands = (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B)
        if np.size(w_scale) <= 1 or np.ndim(x) == 4:
            return self.stock_run(*operands)
        if np.ndim(x) != 3:
            raise Refused(f"QLinearConv with per-channel weights over {np.ndim(x) - 2} spatial axes: onnx.reference "
                          "computes 1 or 2")
        x, w = np.asarray(x)[:, :, None, :], np.asarray(w)[:, :, None, :]
        pads = list(self.pads or (0, 0))
        return tuple(y[:, :, 0, :] for y in self.stock_run(
            x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B,
            auto_pad=self.auto_pad, group=self.group, kernel_shape=[1, w.shape[-1]],
            dilations=[1, *(self.dilations or (1,))], strides=[1, *(self.strides or (1,))],
            pads=[0, pads[0], 0, pads[1]]))
