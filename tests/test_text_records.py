"""Measured numbers the proposal quotes from a benchmark are the numbers its record holds.

A benchmark's results live in one place, its record (benchmarks/README.md, written from what the script
printed). A text that quotes them names the record; this test reads every number in each quoting passage and
fails when one is not in the record's section, so a re-run that changes the record makes the quoting text
fail until it is updated (counts that the tree itself gives are figures instead: tests/test_spec_figures.py).
"""

from __future__ import annotations

import re

import pytest
from builders import ROOT

BENCHMARKS = "benchmarks/README.md"
ROUNDING = "proposal/experiments/quantize_rounding_agreement.md"
CHECKER_ACCEPTS = "proposal/experiments/onnx_checker_accepts.md"
NNCF = "proposal/experiments/nncf_negative_scales.md"
LISTED = "proposal/experiments/listed_parameter_size.md"
KERNELS = "proposal/experiments/ort_cpu_kernels.md"
TIES = "proposal/experiments/qlinear_binary_ties.md"
# (text, passage from .. to, record, section from .. to, None: its end): the passage's numbers must all be in
# the section
QUOTES = [
    ("proposal/spec/types.md", "nncf_negative_scales.md)): 29 of 64", "can be negated exactly", NNCF, "onnx", None),
    ("proposal/spec/types.md", "The reason is size.", "past protobuf's", LISTED, "onnx", None),
    ("proposal/0001-quantized-element-types.md", "int4 weight in blocks of 32 has 524,288", "if listed",
     LISTED, "onnx", None),
    ("proposal/spec/interop.md", "On 1.32.0: 0 of 96", "part 4).", KERNELS, "4. float16 / bfloat16", "5. onnx"),
    ("proposal/spec/interop.md", "(over 20 sets of scales", "[record]", TIES, "| operator", None),
    ("proposal/0001-quantized-element-types.md", "In the same run,", "On\nwell-formed",
     CHECKER_ACCEPTS, "onnx 1.23.2", None),
    ("proposal/spec/semantics.md", "elements that differ from the exact result, of 10^6:", "On every type",
     ROUNDING, "onnx 1.23.2", None),
    ("proposal/spec/semantics.md", "- onnxruntime 1.32.0's QuantizeLinear at opset 23", "- onnx.reference 1.23.2",
     ROUNDING, "onnx 1.23.2", None),
    ("proposal/spec/semantics.md", "**Measured.** With onnx", "## 9.",
     BENCHMARKS, "### Agreement", "Part 2 isolates"),
    ("proposal/spec/semantics.md", "Measured on 10^6 random accumulators", "Ties are rare",
     BENCHMARKS, "Part 2 isolates", "## Reference ops: `run`"),
    ("proposal/0001-quantized-element-types.md", "a 7B-class file of", "the suite has a Gather",
     BENCHMARKS, "Part 2, `python benchmarks/bench_gguf.py --layers", "The written data"),
    ("proposal/spec/llm_formats.md", "Lifting synthetic LLaMA-2-7B", "`check` passes the result",
     BENCHMARKS, "Part 2, `python benchmarks/bench_gguf.py --layers", "The written data"),
    ("proposal/spec/llm_formats.md", "Measured on a 4096 × 4096 weight", "Keeping GGUF's bytes",
     BENCHMARKS, "## GGUF: storage", "Part 2, `python benchmarks/bench_gguf.py --layers"),
    ("proposal/alternatives.md", "and 1.028 times that size for Q4_K", "[PR #8214]",
     BENCHMARKS, "## GGUF: storage", "Part 2, `python benchmarks/bench_gguf.py --layers"),
    ("proposal/0001-quantized-element-types.md", "`python benchmarks/bench_large_weight.py --repeat 1`",
     "Readers must resolve", BENCHMARKS, "## Large blocked weights", "## Calibration"),
    ("proposal/alternatives.md", "int4 weight in blocks of 32 is a", "- *Shape merging*",
     BENCHMARKS, "## Large blocked weights", "## Calibration"),
]
NUMBER = re.compile(r"(?<![\w.§^−-])\d[\d,]*(?:\.\d+)*(?![\d^])")  # not a power's base or exponent (2^-16)


def _between(text: str, start: str, end: str | None, where: str) -> str:
    i = text.find(start)
    assert i >= 0, f"{where}: the passage starting {start!r} is gone; update QUOTES"
    if end is None:  # to the end of the record
        return text[i:]
    j = text.find(end, i + len(start))
    assert j >= 0, f"{where}: no {end!r} after {start!r}; update QUOTES"
    return text[i:j]


def _numbers(passage: str, code: bool = True) -> set[str]:
    # a measured number as written, without the punctuation after it; markdown links, figure spans, section
    # numbers (§6), powers (10^6), versions (1.23.2) and, in a quoting text, commands in backticks are not
    # measurements
    passage = re.sub(r"\]\([^)]*\)|<!-- figure .*?<!-- /figure -->" + ("" if code else r"|`[^`]*`"), "", passage,
                     flags=re.S)
    return {n.replace(",", "") for n in (m.rstrip(".,") for m in NUMBER.findall(passage)) if n.count(".") < 2}


@pytest.mark.parametrize("text,start,end,record,section,section_end", QUOTES,
                         ids=[f"{q[0]}:{q[1][:24]}" for q in QUOTES])
def test_a_quoted_measurement_is_the_record_s(text, start, end, record, section, section_end):
    passage = _between((ROOT / text).read_text(encoding="utf-8"), start, end, text)
    held = _between((ROOT / record).read_text(encoding="utf-8"), section, section_end, record)
    record_numbers = _numbers(held)
    missing = sorted(n for n in _numbers(passage, code=False) if n not in record_numbers)
    assert not missing, f"{text} quotes {missing} beside {start!r}, which {record} ({section}) does not hold"
    context = (ROOT / text).read_text(encoding="utf-8")
    context = context[max(0, context.find(passage) - 600):context.find(passage) + len(passage) + 600]
    named = (record, record.rsplit("/", 1)[-1], record.rsplit("/", 1)[-1].replace(".md", ".py"), "bench_")
    assert any(n in context for n in named), f"{text}: a quoted measurement names its record or command ({start!r})"


def test_the_check_sees_a_number_the_record_lacks():
    assert _numbers("lifts in 19.4 s with 241 MiB") - _numbers("19.3 s, 241 MiB") == {"19.4"}


# numbers a text takes from a constant of the code: (text, phrase with the number, the constant's value)
def _constants() -> list[tuple[str, str, int]]:
    import numpy as np

    from onnx_qtypes.calibration.ranges import DEFAULT_PERCENTILE, MSE_STEPS
    from onnx_qtypes.calibration.running import BINS, CHANNEL_BINS
    from onnx_qtypes.proto.parameter_tensors import REFERENCE_THRESHOLD

    from builders import load_script

    malformed = len(load_script("proposal/experiments/onnx_checker_accepts.py").CASES)
    fuzz = (ROOT / "tests/test_fuzz.py").read_text(encoding="utf-8")
    mutants = int(re.search(r"^MUTANTS = (\d+)", fuzz, re.M).group(1))
    samples = len(np.load(ROOT / "examples/float_cnn_samples.npz")["x"])
    return [
        ("README.md", "Per-axis and blocked types with more than {:,}", REFERENCE_THRESHOLD),
        ("proposal/spec/types.md", "listed form up to {:,} parameters", REFERENCE_THRESHOLD),
        ("proposal/alternatives.md", "above {:,}\n  parameters", REFERENCE_THRESHOLD),
        ("README.md", "runs a seeded mutation fuzz ({} damaged models", mutants),
        ("README.md", "a float model + {} samples", samples),
        ("proposal/0001-quantized-element-types.md", "accepts all {} malformed cases", malformed),
        ("proposal/spec/calibration.md", "at most {} of them from the minimum's bin", BINS),
        ("proposal/spec/calibration.md", "min({}, values in the slice) equal bins", CHANNEL_BINS),
        ("proposal/spec/calibration.md", "(p, default {})", DEFAULT_PERCENTILE),
        ("proposal/spec/calibration.md", "on a grid of {}, whose", MSE_STEPS),
        ("proposal/0001-quantized-element-types.md", "the {} malformed cases keep passing", malformed),
    ]


@pytest.mark.parametrize("text,phrase,value", _constants(), ids=lambda v: str(v)[:40])
def test_a_number_the_code_fixes_is_the_code_s(text, phrase, value):
    assert phrase.format(value) in (ROOT / text).read_text(encoding="utf-8"), \
        f"{text}: expected {phrase.format(value)!r} (the code's value is {value})"


def test_the_packing_examples_of_types_md_are_what_onnx_writes():
    # types.md §1.2 gives one int4 and one int2 example of ONNX's sub-byte order; onnx's own writer must agree
    import ml_dtypes
    import numpy as np
    from onnx import numpy_helper

    text = (ROOT / "proposal/spec/types.md").read_text(encoding="utf-8")
    examples = re.findall(r"The (int4|int2)\s+values `\[([^\]]+)\]` are\s+the\s+bytes? `([^`]+)`", text)
    assert {kind for kind, _, _ in examples} == {"int4", "int2"}, examples
    for kind, values, hexes in examples:
        numbers = [int(v.replace("−", "-")) for v in values.split(",")]
        array = np.array(numbers, dtype=getattr(ml_dtypes, kind))
        assert numpy_helper.from_array(array).raw_data == bytes(int(h, 16) for h in hexes.split()), (kind, hexes)
