"""checker.columns: a type of many parameters stands in the flat arrays by its distinct values, whatever it holds."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnx_qtypes.checker.columns import _DISTINCT_ABOVE, _representatives
from onnx_qtypes.proto.parameter_values import ParameterValues

SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 6e-8, -1.5, 65504.0]  # (6e-8: a float16 subnormal)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_every_distinct_scale_stands_once(dtype):
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.uniform(-2, 2, 3 * _DISTINCT_ABOVE), SPECIAL]).astype(dtype)
    rng.shuffle(values)
    held = ParameterValues.of_array(values, float)
    got = _representatives(held, np.float64)
    wide = values.astype(np.float64)
    assert got.dtype == np.float64
    assert set(got[~np.isnan(got)].tolist()) == set(wide[~np.isnan(wide)].tolist())  # (-0.0 == 0.0 as a set)
    assert np.isnan(got).sum() == 1
    assert len(got) == len(np.unique(wide))


@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.int8])
def test_every_distinct_zero_point_stands_once(dtype):
    info = np.iinfo(dtype)
    values = np.random.default_rng(1).integers(info.min, info.max, 2 * _DISTINCT_ABOVE, endpoint=True).astype(dtype)
    got = _representatives(ParameterValues.of_array(values, int), np.int64)
    assert got.dtype == np.int64
    assert got.tolist() == np.unique(values.astype(np.int64)).tolist()


def test_zero_points_none_of_which_is_written_stand_as_one_zero():
    got = _representatives(ParameterValues.zeros(3 * _DISTINCT_ABOVE), np.int64)
    assert got.tolist() == [0] and got.dtype == np.int64
