"""Resize (opset 11+) from ONNX's text, one axis at a time (nearest, linear and cubic are separable).

Per resized axis: the output length (`sizes`, adjusted by keep_aspect_ratio_policy, or floor(input * scale));
each output coordinate mapped to the input by coordinate_transformation_mode, where `length_resized` is the
output's integer length; then the nearest input (nearest_mode), the two neighbours (linear) or four
(cubic, Keys' kernel with cubic_coeff_a; taps outside the input repeat the edge, or with exclude_outside are
dropped and the rest renormalized); tf_crop_and_resize gives extrapolation_value where a coordinate leaves
[0, length - 1].

onnx.reference reads `length_resized` as input * scale, unrounded, in align_corners (and its nearest and cubic
variants): scales 1.5 on 3 rows samples at 0, 0.57, 1.14, 1.71 instead of 0, 0.67, 1.33, 2, and the last row
misses the input's last row (linear 0.80 where ONNX gives 1.11). Opset 10 stays onnx.reference's.

Where onnxruntime 1.32 reads it otherwise, this follows ONNX's text (and onnx.reference): the output length is
the floor of the exact product input * scale (5 x float32(1.4) = 6.99999988: 6; onnxruntime multiplies in
float32 and gets 7); tf_crop_and_resize crops an axis whose length does not change (onnxruntime returns it
unchanged: 5 -> 5 with roi [0.25, 0.75]). And
ONNX does not say which taps an antialiased filter reads at the edges: here, as in onnxruntime and
onnx.reference, they repeat the edge value, the weights normalized over the whole footprint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused

FIRST_OPSET = 11


class Resize(Corrected):
    def _run(self, x: Any, roi: Any = None, scales: Any = None, sizes: Any = None, **attributes: Any) -> tuple:
        if self.opset < FIRST_OPSET:
            return self.stock_run(x, roi, scales, sizes, **attributes)
        x = np.asarray(x)
        mode = _text(attributes.get("mode"), "nearest")
        ctm = _text(attributes.get("coordinate_transformation_mode"), "half_pixel")
        if mode not in ("nearest", "linear", "cubic"):
            raise Refused(f"Resize mode {mode!r} is not one ONNX defines")
        rank = x.ndim
        axes = [int(a) % rank for a in (attributes.get("axes") or range(rank))]
        out_sizes, axis_scales = self._sizes(x, axes, scales, sizes, attributes)
        roi = self._roi(roi, axes, ctm)
        _budget.require_fits("Resize", [out_sizes.get(a, x.shape[a]) for a in range(rank)], x.dtype)
        y = x.astype(np.float64)
        outside = np.zeros((), bool)
        for axis in axes:
            y, axis_outside = _resize_axis(y, axis, out_sizes[axis], axis_scales[axis], roi.get(axis, (0.0, 1.0)),
                                           mode, ctm, attributes)
            shape = [1] * rank
            shape[axis] = out_sizes[axis]
            outside = outside | axis_outside.reshape(shape)
        if ctm == "tf_crop_and_resize" and np.any(outside):
            y = np.where(outside, float(attributes.get("extrapolation_value") or 0.0), y)
        if x.dtype.kind in "iu":  # integer inputs (nearest on storage): the value, rounded and kept in range
            info = np.iinfo(x.dtype)
            y = np.clip(np.rint(y), info.min, info.max)
        return (y.astype(x.dtype),)

    def _sizes(self, x: np.ndarray, axes: list[int], scales: Any, sizes: Any, attributes: dict) -> tuple[dict, dict]:
        """(output length, scale) per resized axis."""
        have_scales = scales is not None and np.size(scales) > 0
        have_sizes = sizes is not None and np.size(sizes) > 0
        if have_scales == have_sizes:
            raise Refused("Resize takes exactly one of scales and sizes")
        if have_scales:
            values = [float(v) for v in np.asarray(scales).reshape(-1)]
            if len(values) != len(axes) or any(not v > 0 or not math.isfinite(v) for v in values):
                raise Refused(f"Resize scales {values}: expected {len(axes)} finite values > 0")
            lengths = {a: int(math.floor(x.shape[a] * s)) for a, s in zip(axes, values)}
            return lengths, dict(zip(axes, values))
        wanted = [int(v) for v in np.asarray(sizes).reshape(-1)]
        if len(wanted) != len(axes) or any(v < 0 for v in wanted):
            raise Refused(f"Resize sizes {wanted}: expected {len(axes)} values >= 0")
        policy = _text(attributes.get("keep_aspect_ratio_policy"), "stretch")
        if policy == "stretch":
            return dict(zip(axes, wanted)), {a: (w / x.shape[a] if x.shape[a] else 1.0) for a, w in zip(axes, wanted)}
        if policy not in ("not_larger", "not_smaller"):
            raise Refused(f"Resize keep_aspect_ratio_policy {policy!r} is not one ONNX defines")
        ratios = [w / x.shape[a] for a, w in zip(axes, wanted)]
        scale = min(ratios) if policy == "not_larger" else max(ratios)
        return {a: int(math.floor(scale * x.shape[a] + 0.5)) for a in axes}, dict.fromkeys(axes, scale)

    @staticmethod
    def _roi(roi: Any, axes: list[int], ctm: str) -> dict[int, tuple[float, float]]:
        if ctm != "tf_crop_and_resize":
            return {}
        values = [] if roi is None else [float(v) for v in np.asarray(roi).reshape(-1)]
        if len(values) != 2 * len(axes):
            raise Refused(f"Resize with tf_crop_and_resize takes roi of {2 * len(axes)} values, got {len(values)}")
        return {a: (values[i], values[len(axes) + i]) for i, a in enumerate(axes)}


def _text(value: Any, default: str) -> str:
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)


def _original(out: np.ndarray, length_in: int, length_out: int, scale: float, roi: tuple[float, float],
              ctm: str) -> np.ndarray:
    """Input coordinate of each output index, as coordinate_transformation_mode defines it."""
    if ctm == "half_pixel":
        return (out + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        adjustment = length_out / (length_in * scale)
        return length_in / 2 * (1 - adjustment) + (out + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (out + 0.5) / scale - 0.5 if length_out > 1 else np.zeros_like(out)
    if ctm == "align_corners":
        return out * (length_in - 1) / (length_out - 1) if length_out > 1 else np.zeros_like(out)
    if ctm == "asymmetric":
        return out / scale
    if ctm == "tf_crop_and_resize":
        start, end = roi
        if length_out > 1:
            return start * (length_in - 1) + out * (end - start) * (length_in - 1) / (length_out - 1)
        return np.full_like(out, 0.5 * (start + end) * (length_in - 1))
    raise Refused(f"Resize coordinate_transformation_mode {ctm!r} is not one ONNX defines")


def _nearest(coordinate: np.ndarray, nearest_mode: str) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        return np.where(coordinate - np.floor(coordinate) == 0.5, np.floor(coordinate), np.round(coordinate))
    if nearest_mode == "round_prefer_ceil":
        return np.where(coordinate - np.floor(coordinate) == 0.5, np.ceil(coordinate), np.round(coordinate))
    if nearest_mode == "floor":
        return np.floor(coordinate)
    if nearest_mode == "ceil":
        return np.ceil(coordinate)
    raise Refused(f"Resize nearest_mode {nearest_mode!r} is not one ONNX defines")


def _cubic(distance: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(distance)
    return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                    np.where(d < 2, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a, 0.0))


def _resize_axis(y: np.ndarray, axis: int, length_out: int, scale: float, roi: tuple[float, float], mode: str,
                 ctm: str, attributes: dict) -> tuple[np.ndarray, np.ndarray]:
    """y resized along ``axis``, and which output positions lie outside the input (tf_crop_and_resize)."""
    length_in = y.shape[axis]
    coordinate = _original(np.arange(length_out, dtype=np.float64), length_in, length_out, scale, roi, ctm)
    outside = (coordinate < 0) | (coordinate > length_in - 1) if ctm == "tf_crop_and_resize" else \
        np.zeros(length_out, bool)
    if length_in == 0 or length_out == 0:
        shape = list(y.shape)
        shape[axis] = length_out
        return np.zeros(shape), outside
    if mode == "nearest":
        nearest_mode = _text(attributes.get("nearest_mode"), "round_prefer_floor")
        index = np.clip(_nearest(coordinate, nearest_mode), 0, length_in - 1).astype(np.int64)
        return np.take(y, index, axis=axis), outside
    if int(attributes.get("antialias") or 0) and scale < 1:
        return _antialiased(y, axis, coordinate, scale, mode, attributes), outside
    if mode == "linear":
        clamped = np.clip(coordinate, 0, length_in - 1)
        base = np.floor(clamped)
        taps = np.stack([base, base + 1], -1)
        weights = np.stack([1 - (clamped - base), clamped - base], -1)
    else:
        a = float(attributes.get("cubic_coeff_a") if attributes.get("cubic_coeff_a") is not None else -0.75)
        base = np.floor(coordinate)
        taps = base[:, None] + np.arange(-1, 3)
        weights = _cubic(coordinate[:, None] - taps, a)
        if int(attributes.get("exclude_outside") or 0):
            weights = np.where((taps < 0) | (taps > length_in - 1), 0.0, weights)
            total = weights.sum(-1, keepdims=True)
            weights = np.divide(weights, total, out=np.zeros_like(weights), where=total != 0)
    index = np.clip(taps, 0, length_in - 1).astype(np.int64)
    moved = np.moveaxis(y, axis, -1)
    out = (moved[..., index] * weights).sum(-1)  # (..., length_out)
    return np.moveaxis(out, -1, axis), outside


def _antialiased(y: np.ndarray, axis: int, coordinate: np.ndarray, scale: float, mode: str,
                 attributes: dict) -> np.ndarray:
    """Downscaling with antialias: the linear (triangle) or cubic filter stretched by 1 / scale, its weights
    normalized to sum 1; taps beyond the input repeat its edge (exclude_outside: dropped, the rest renormalized)."""
    length_in = y.shape[axis]
    a = float(attributes.get("cubic_coeff_a") if attributes.get("cubic_coeff_a") is not None else -0.75)
    first = int(np.floor(-(1.0 if mode == "linear" else 2.0) / scale)) + 1
    base = np.floor(coordinate)
    taps = base[:, None] + np.arange(first, 2 - first)
    distance = (taps - coordinate[:, None]) * scale
    weights = np.clip(1 - np.abs(distance), 0.0, 1.0) if mode == "linear" else _cubic(distance, a)
    if mode == "cubic" and int(attributes.get("exclude_outside") or 0):
        weights = np.where((taps < 0) | (taps > length_in - 1), 0.0, weights)
    total = weights.sum(-1, keepdims=True)
    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total != 0)
    index = np.clip(taps, 0, length_in - 1).astype(np.int64)
    out = (np.moveaxis(y, axis, -1)[..., index] * weights).sum(-1)
    return np.moveaxis(out, -1, axis)
