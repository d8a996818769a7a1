"""onnxruntime quantize_static output, lifted to typed form: valid under generic, flagged under tflite-int8."""

from __future__ import annotations

import pytest
from corpus import corpus_models

from onnx_qtypes import QType, get_qtype
from onnx_qtypes.checker import check_model, iter_diagnostics
from onnx_qtypes.interop import lift

LIFTED: dict = {}


def _lifted(name: str):  # noqa: ANN202
    if name not in LIFTED:
        LIFTED[name] = lift(corpus_models()[name])
    return LIFTED[name]


@pytest.mark.parametrize("name", sorted(corpus_models()))
def test_lifted_quantize_static_model_has_no_errors_under_generic(name):
    warnings = check_model(_lifted(name), "generic")  # raises ValidationError on any error
    assert all(not w.is_error for w in warnings)


def test_concat_inputs_with_different_scales_are_reported_under_tflite_int8():
    model = _lifted("attention-qdq_s8_perchannel")
    concat_index, concat = next((i, n) for i, n in enumerate(model.graph.node) if n.op_type == "Concat")
    # Independently of the checker: the tool wrote different scales on the Concat inputs.
    input_scales = [get_qtype(model, name).scale for name in concat.input]
    output_scale = get_qtype(model, concat.output[0]).scale
    differing = [i for i, s in enumerate(input_scales) if s != output_scale]
    assert differing, "the corpus model no longer has Concat inputs with different scales"

    generic = [d for d in iter_diagnostics(model, "generic") if d.location.node == concat.name]
    assert generic and all(not d.is_error for d in generic)  # valid: a requantizing Concat

    tflite = [d for d in iter_diagnostics(model, "tflite-int8") if d.location.node == concat.name and d.is_error]
    shared = {d.location.pointer for d in tflite if d.rule == "QT506"}
    assert shared == {f"/graph/node/{concat_index}/input/{i}" for i in differing}
    assert any(d.rule == "QT401" for d in tflite)  # raised from a warning by the profile


def test_softmax_output_of_quantize_static_breaks_tflite_fixed_parameters():
    model = _lifted("attention-qdq_s8_perchannel")
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    scale = get_qtype(model, softmax.output[0]).scale
    assert scale != (1 / 256,)
    found = [d for d in iter_diagnostics(model, "tflite-int8") if d.rule == "QT507"]
    assert [d.location.node for d in found] == [softmax.name]


@pytest.mark.parametrize(("method", "said"), [(None, "widen the parameters unless clipping is intended"),
                                              ("minmax", "widen the parameters unless clipping is intended"),
                                              ("entropy", "calibration method 'entropy', which clips outliers"),
                                              ("percentile", "calibration method 'percentile', which clips outliers"),
                                              ("mse", "calibration method 'mse', which clips outliers"),
                                              ("onnxruntime:minmax", "widen the parameters unless clipping is intended"),
                                              ("onnxruntime", "widen the parameters unless clipping is intended")])
def test_a_clipped_range_names_the_calibration_method_that_chose_it(method, said):
    """QT208 on calibrate's own output with entropy or percentile told the engineer to widen the parameters, when
    the method clipped on purpose: the statistics record the method, and the warning says it."""
    from checker_models import int8, one_tensor

    from onnx_qtypes.proto import Statistics, TensorStatistics

    statistics = TensorStatistics(tensor=Statistics(min=-2.4, max=2.5), method=method)
    found = [d for d in iter_diagnostics(one_tensor(int8(0.01, 0), statistics=statistics)) if d.rule == "QT208"]
    assert len(found) == 1 and said in found[0].message, [d.message for d in found]


@pytest.mark.parametrize(("out_q", "clamps"), [(QType("uint8", 0.019, 0), "[0, 4.845]"),
                                               (QType("uint8", 0.04, 112), None)])
def test_a_moved_tensor_whose_range_clamps_its_inputs_is_told_to_keep_the_clamp(out_q, clamps):
    """onnxruntime's quantizer folds a Relu after a Split into the outputs' parameters (zero point 0): giving an
    output its input's type would drop that clamp, so QT401 says so; an output whose range holds the input's is told
    to keep the input's parameters, as before."""
    from checker_models import mover

    in_q = QType("uint8", 0.036, 112)  # [-4.032, 5.148]
    (finding,) = [d for d in iter_diagnostics(mover("Reshape", (1, 4), (4,), in_q, out_q)) if d.rule == "QT401"]
    if clamps:
        assert f"its range {clamps} clamps that of 'x_q'" in finding.message
        assert "keep that clamp as its operator after Reshape" in finding.message
    else:
        assert "clamps" not in finding.message and finding.message.endswith("avoids a requantization")
