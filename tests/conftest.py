"""Fixtures shared by the tests; model builders live in builders.py."""

from __future__ import annotations

import onnx
import pytest
from builders import load_script


@pytest.fixture

def example_model() -> onnx.ModelProto:
    return load_script("examples/make_examples.py").typed_cnn()
