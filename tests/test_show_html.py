"""`onnx-qtypes show --format html`: the page's structure, parsed back, and the estimates it prints.

The page is read with html.parser into a small element tree; nothing here needs a browser.
"""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from onnx import TensorProto
from builders import ROOT, add_model, load_script
from report_models import (BINS, CLIPPING_CHANNELS, HOSTILE, W_CHANNEL_BINS, hostile_names_model,
                           per_axis_clipping_model, typed_cnn_with_histograms)
from test_cli import assert_one_line_error, run_cli

from onnx_qtypes import QType, Statistics, TensorStatistics, get_qtype, save, set_qtype
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.diagnosis import diagnose
from onnx_qtypes.proto.model import set_statistics
from onnx_qtypes.reference_ops.quant import dequantize, quantize
from onnx_qtypes.report.page import TABLE_ROWS
from onnx_qtypes.report.range_error import Histogram, range_error, tensor_error
from onnx_qtypes.report.svg import MAX_CHANNEL_BARS

VOID = {"meta", "br", "hr", "img", "input", "link"}


class Element:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent, self.children, self.text = tag, attrs, parent, [], []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str, cls: str | None = None) -> list[Element]:
        return [e for e in self.iter() if e.tag == tag and (cls is None or cls in e.classes)]

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.current = Element("#root", {}, None)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Element(tag, dict(attrs), self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"</{tag}> closes nothing open"
        assert node is self.current, f"</{tag}> closes <{self.current.tag}> early"
        self.current = node.parent

    def handle_data(self, data):
        self.current.text.append(data)


def parse(page: str) -> Element:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.current is builder.root, f"<{builder.current.tag}> never closed"
    return builder.root


def show_html(tmp_path, model, name: str = "m.onnx") -> tuple[str, Element]:
    path = tmp_path / name
    if not isinstance(model, str):
        save(model, path)
    else:
        path = model
    out = tmp_path / "report.html"
    result = run_cli("show", str(path), "--format", "html", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    page = out.read_text(encoding="utf-8")
    return page, parse(page)


def cards(root: Element) -> dict[str, Element]:
    found = {}
    for card in root.find_all("section", "card"):
        (title,) = card.find_all("h3")
        found[title.all_text().split(" in ")[0] if title.children else title.all_text()] = card
    return found


def finding_rules(element: Element) -> list[str]:
    return [li.find_all("span", "rule")[0].all_text().split()[0] for li in element.find_all("li", "finding")]


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rich")
    model = typed_cnn_with_histograms()
    page, root = show_html(tmp, model)
    return model, page, root


def test_one_card_per_quantized_tensor_with_a_bar_per_non_empty_bin(rich):
    model, _, root = rich
    by_name = cards(root)
    assert sorted(by_name) == sorted(["x_q", "w", "b", "conv_q", "relu_q", "pool_q"])
    for name, card in by_name.items():
        histograms = card.find_all("svg", "histogram")
        if name in BINS:
            (svg,) = histograms
            stats = get_qtype(model, name).statistics.tensor
            assert len(stats.histogram_counts) == BINS[name]
            assert len(svg.find_all("rect", "bin")) == sum(1 for c in stats.histogram_counts if c), name
        else:  # no statistics: parameters only
            assert histograms == [], name
            assert "no statistics" in card.all_text()


def test_range_markers_sit_at_the_representable_range(rich):
    _, _, root = rich
    x_q = cards(root)["x_q"]
    labels = [t.all_text() for t in x_q.find_all("text", "marker-label")]
    assert len(x_q.find_all("line", "range-marker")) == 2
    lo, hi = 0.02 * (-128 - 0), 0.02 * (127 - 0)  # int8, the example's scale 0.02 and zero point 0
    assert labels == [f"lo {lo:.4g}", f"hi {hi:.4g}"]
    # per-axis: the range every channel covers and the widest one, four ends
    w = cards(root)["w"]
    assert len(w.find_all("line", "range-marker")) == 4
    assert len(w.find_all("rect", "range")) == 1 and len(w.find_all("rect", "range-some")) == 1


def test_bars_outside_the_range_are_marked_clipped(rich):
    _, _, root = rich
    svg = cards(root)["conv_q"].find_all("svg", "histogram")[0]
    clipped = svg.find_all("rect", "clipped")
    assert clipped, "conv_q's long tail runs past its range"
    for bar in clipped:  # each clipped bin's tooltip "[a, b]: n" starts above hi = 0.05 * (127 + 10)
        a = float(re.match(r"\[([^,]+),", bar.all_text()).group(1))
        assert a > 0.05 * (127 + 10)


def test_per_axis_card_has_a_bar_and_a_row_per_channel(rich):
    model, _, root = rich
    w = cards(root)["w"]
    (chart,) = w.find_all("svg", "channels")
    assert len(chart.find_all("rect", "channel-bar")) == 4
    (table,) = w.find_all("table", "channels-table")
    assert len(table.find_all("tbody")[0].find_all("tr")) == 4


def test_findings_are_listed_under_the_tensor_they_name(rich):
    model, _, root = rich
    by_name = cards(root)
    expected: dict[str, list[str]] = {name: [] for name in by_name}
    for d in iter_diagnostics(model):
        expected[d.location.tensor].append(d.rule)
    assert any(expected.values()), "the model should have findings to place"
    for name, card in by_name.items():
        assert sorted(finding_rules(card)) == sorted(expected[name]), name
    summary = root.find_all("table", "summary")[0]
    for row in summary.find_all("tbody")[0].find_all("tr"):
        name = row.find_all("a")[0].all_text()
        assert row.find_all("span", "count")[0].all_text() == str(len(expected[name]))
        assert row.find_all("a")[0].attrs["href"] == "#" + by_name[name].attrs["id"]


def test_qdq_model_findings_go_to_their_tensor_or_the_model_section(tmp_path):
    path = str(ROOT / "examples" / "broken_qdq_cnn.onnx")
    _, root = show_html(tmp_path, path)
    found = diagnose(path).diagnostics
    listed = finding_rules(root)
    assert sorted(listed) == sorted(d.rule for d in found)  # each finding once: a card or the model section
    assert finding_rules(cards(root)["b"]) == ["QT405"]  # the bias scale, at the bias DequantizeLinear
    (model_section,) = [s for s in root.find_all("section") if s.attrs.get("id") == "model-findings"]
    assert sorted(finding_rules(model_section)) == ["QT101", "QT307"]  # on tensors the lift could not type


def test_the_page_loads_nothing_and_runs_nothing(rich):
    _, page, root = rich
    for element in root.iter():
        assert element.tag not in {"script", "link", "img", "iframe", "object", "embed"}
        assert "src" not in element.attrs
        assert not any(k.startswith("on") for k in element.attrs), element.attrs
        href = element.attrs.get("href")
        assert href is None or href.startswith("#"), href
    style = "".join(s.all_text() for s in root.find_all("style"))
    assert "url(" not in style and "@import" not in style and "http" not in page.split("<body")[0]


def test_markup_in_tensor_names_stays_text(tmp_path):
    page, root = show_html(tmp_path, hostile_names_model())
    assert "<script>" not in page
    assert root.find_all("script") == []
    hostile = cards(root)[HOSTILE]
    (title,) = hostile.find_all("h3")
    assert title.children == [] and title.all_text() == HOSTILE
    assert [a.all_text() for a in root.find_all("a")][0] == HOSTILE
    assert finding_rules(cards(root)["c"]) and "QT103" in finding_rules(cards(root)["c"])


def test_stdout_without_o_is_the_same_page(tmp_path):
    save(hostile_names_model(), tmp_path / "m.onnx")
    printed = run_cli("show", str(tmp_path / "m.onnx"), "--format", "html")
    assert printed.returncode == 0, printed.stderr
    written = run_cli("show", str(tmp_path / "m.onnx"), "--format", "html", "-o", str(tmp_path / "r.html"))
    assert written.returncode == 0
    assert printed.stdout == (tmp_path / "r.html").read_text(encoding="utf-8")
    assert printed.stdout.startswith("<!DOCTYPE html>")


def test_o_writes_the_table_too(tmp_path):
    save(hostile_names_model(), tmp_path / "m.onnx")
    result = run_cli("show", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "t.txt"))
    assert result.returncode == 0 and result.stdout == ""
    assert run_cli("show", str(tmp_path / "m.onnx")).stdout == (tmp_path / "t.txt").read_text(encoding="utf-8")


def test_unreadable_input_and_overwriting_the_model_exit_2(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    assert_one_line_error(run_cli("show", str(tmp_path / "bad.onnx"), "--format", "html", "-o",
                                  str(tmp_path / "r.html")), "bad.onnx")
    assert not (tmp_path / "r.html").exists()
    save(add_model(), tmp_path / "m.onnx")
    before = (tmp_path / "m.onnx").read_bytes()
    assert_one_line_error(run_cli("show", str(tmp_path / "m.onnx"), "--format", "html", "-o",
                                  str(tmp_path / "m.onnx")), "m.onnx")
    assert (tmp_path / "m.onnx").read_bytes() == before


def test_a_model_with_nothing_quantized_is_an_empty_report(tmp_path):
    _, root = show_html(tmp_path, add_model())
    assert root.find_all("section", "card") == []
    assert "No quantized tensors" in root.all_text()


def test_a_malformed_histogram_shows_the_parameters_and_says_why(tmp_path):
    model = add_model()
    bad = TensorStatistics(tensor=Statistics(min=-1, max=1, histogram_edges=(-1.0, 0.0, 1.0), histogram_counts=(3,)))
    set_qtype(model, "a", QType("int8", 0.0078125, 0, statistics=bad))
    _, root = show_html(tmp_path, model)
    card = cards(root)["a"]
    assert card.find_all("svg", "histogram") == []
    assert "3 edges give 2 bins, found 1 counts" in card.all_text()  # QT205's own words


# -- the estimates, against quantizing samples drawn from the histogram ------------------------------


def _spread(h: Histogram, per_count: int) -> np.ndarray:
    """Values spread evenly within each bin, ``per_count`` for each count (a sample without sampling noise:
    a heavy tail's few counts would otherwise dominate the error's variance)."""
    parts = []
    for a, b, count in zip(h.edges, h.edges[1:], h.counts):
        m = count * per_count
        parts.append(a + (np.arange(m) + 0.5) / max(m, 1) * (b - a))
    return np.concatenate(parts)


@pytest.mark.parametrize("scale, zero_point", [(0.02, 0), (0.05, -10), (0.01, 100)])
def test_clipped_fraction_and_mse_match_quantizing_samples(scale, zero_point):
    rng = np.random.default_rng(3)
    counts, edges = np.histogram(np.concatenate([rng.normal(0, 1, 4000), rng.exponential(2, 1000)]), bins=40)
    h = Histogram(tuple(edges.tolist()), tuple(counts.tolist()))
    qtype = QType("int8", scale, zero_point)
    x = _spread(h, 80)
    error = dequantize(quantize(x, qtype), qtype) - x
    estimate = range_error(h, scale * (-128 - zero_point), scale * (127 - zero_point), scale)
    assert estimate.clipped == pytest.approx(np.mean(np.abs(error) > scale / 2 + 1e-12), abs=1e-4)
    assert estimate.mse == pytest.approx(np.mean(error**2), rel=0.01)
    assert estimate.power == pytest.approx(np.mean(x**2), rel=1e-3)
    sqnr = 10 * math.log10(np.mean(x**2) / np.mean(error**2))
    assert estimate.sqnr_db == pytest.approx(sqnr, abs=0.05)


def test_a_negative_scale_channel_gets_an_estimate_from_quantizing_samples():
    """NNCF writes negative per-channel weight scales (valid, QT101): the channel's range is [scale·qmax, scale·qmin]
    and its estimate matches quantizing the values, as a positive scale's does."""
    rng = np.random.default_rng(5)
    counts, edges = np.histogram(rng.normal(0, 1, 3000), bins=30)
    h = Histogram(tuple(edges.tolist()), tuple(counts.tolist()))
    per = Statistics(histogram_edges=h.edges, histogram_counts=h.counts)
    qtype = QType("int8", [0.01, -0.01], [0, 0], axis=0, storage_min=-127, storage_max=127)
    estimate, how = tensor_error(qtype, TensorStatistics(axis=0, per_axis=(per, per)))
    assert estimate is not None, how
    x = _spread(h, 40)
    both = np.stack([x, x])
    error = dequantize(quantize(both, qtype), qtype) - both
    assert estimate.clipped == pytest.approx(np.mean(np.abs(error) > 0.005 + 1e-12), abs=1e-4)
    assert estimate.mse == pytest.approx(np.mean(error**2), rel=0.01)


def test_edges_near_the_float64_limit_give_an_infinite_error_not_an_exception():
    """Finite edges whose cubes overflow (any float is a valid statistic): nearly every value clips, the error
    is infinite and no SQNR is claimed."""
    h = Histogram((-1e300, 0.0, 1e300), (3, 3))
    estimate = range_error(h, -1.28, 1.27, 0.01)
    assert estimate.clipped == pytest.approx(1.0) and estimate.mse == math.inf and estimate.sqnr_db is None


def test_per_axis_estimate_weights_each_channel_by_its_count():
    model = typed_cnn_with_histograms()
    w = get_qtype(model, "w")
    estimate, how = tensor_error(w, w.statistics)
    assert estimate is not None and str(len(w.scale)) in how
    parts = []
    for s, stats in zip(w.scale, w.statistics.per_axis):
        h = Histogram(stats.histogram_edges, stats.histogram_counts)
        assert len(h.counts) == W_CHANNEL_BINS
        parts.append((range_error(h, s * w.storage_min, s * w.storage_max, s), stats.count))
    total = sum(n for _, n in parts)
    assert estimate.mse == pytest.approx(sum(e.mse * n for e, n in parts) / total)
    assert estimate.clipped == 0  # each channel's scale covers its own largest value


def test_a_blocked_or_dynamic_type_gets_no_estimate():
    stats = TensorStatistics(tensor=Statistics(histogram_edges=(-1.0, 1.0), histogram_counts=(5,)))
    assert tensor_error(QType("int8"), stats)[0] is None
    blocked = QType("int4", [0.1, 0.1], [0, 0], axis=0, block_size=2)
    assert tensor_error(blocked, stats)[0] is None


def test_examples_page_renders(tmp_path):
    """The bundled example carries a histogram: its page draws it."""
    typed = load_script("examples/make_examples.py").typed_cnn()
    _, root = show_html(tmp_path, typed)
    assert len(cards(root)["x_q"].find_all("rect", "bin")) == 4


def test_channels_a_finding_names_are_highlighted(tmp_path):
    model = per_axis_clipping_model()
    _, root = show_html(tmp_path, model)
    card = cards(root)["a"]
    named = sorted({int(d.location.pointer.rsplit("/", 1)[1]) for d in iter_diagnostics(model) if d.rule == "QT208"})
    assert named == list(CLIPPING_CHANNELS)
    bars = card.find_all("svg", "channels")[0].find_all("rect", "channel-bar")
    assert [i for i, bar in enumerate(bars) if "flagged" in bar.classes] == named
    rows = card.find_all("table", "channels-table")[0].find_all("tbody")[0].find_all("tr")
    assert [i for i, row in enumerate(rows) if "flagged" in row.classes] == named
    clipped = [float(row.find_all("td")[4].all_text().rstrip("%") or 0) for row in rows]
    assert [i for i, c in enumerate(clipped) if c > 0] == named  # only those channels clip


def test_a_type_with_many_blocks_keeps_the_page_small(tmp_path):
    """Every scale is drawn (bucketed into at most MAX_CHANNEL_BARS bars) but the table stops at TABLE_ROWS."""
    model = add_model(TensorProto.INT4)
    blocks = 3 * TABLE_ROWS
    for vi in [*model.graph.input, *model.graph.output]:
        vi.type.tensor_type.shape.dim[0].dim_value = blocks * 2
    set_qtype(model, "a", QType("int4", [0.5 + (i % 7) / 8 for i in range(blocks)], [0] * blocks, axis=0,
                                block_size=2))
    page, root = show_html(tmp_path, model)
    card = cards(root)["a"]
    assert len(card.find_all("svg", "channels")[0].find_all("rect", "channel-bar")) == MAX_CHANNEL_BARS
    tables = card.find_all("table", "channels-table")
    assert sum(len(t.find_all("tbody")[0].find_all("tr")) for t in tables) == TABLE_ROWS
    assert len(page) < 3_000_000


def test_a_float_tensor_with_statistics_shows_its_histogram_without_a_range(tmp_path):
    model = add_model(TensorProto.FLOAT)
    edges = tuple(float(e) for e in np.linspace(-1, 1, 9))
    set_statistics(model, "a", TensorStatistics(tensor=Statistics(histogram_edges=edges, histogram_counts=(1,) * 8)))
    _, root = show_html(tmp_path, model)
    card = cards(root)["a"]
    (svg,) = card.find_all("svg", "histogram")
    assert len(svg.find_all("rect", "bin")) == 8 and svg.find_all("line", "range-marker") == []
    assert "with statistics only" in root.all_text()


def test_a_relu_only_tensor_counts_no_clipping_below_its_range():
    """Below a range reaching 0, the reading Relu gives 0 whether the value clipped or not: the estimate is the
    error of Relu(dequantize(quantize(x))) against Relu(x)."""
    rng = np.random.default_rng(4)
    counts, edges = np.histogram(rng.normal(0, 1, 5000), bins=40)
    h = Histogram(tuple(edges.tolist()), tuple(counts.tolist()))
    qtype = QType("uint8", 0.01, 0)  # [0, 2.55]: the negative half and the tail above 2.55 are outside
    x = _spread(h, 80)
    error = np.maximum(dequantize(quantize(x, qtype), qtype), 0) - np.maximum(x, 0)
    estimate = range_error(h, 0.0, 2.55, 0.01, relu_only=True)
    assert estimate.clipped == pytest.approx(np.mean(np.abs(error) > 0.005 + 1e-12), abs=1e-4)
    assert estimate.mse == pytest.approx(np.mean(error**2), rel=0.02)
    assert range_error(h, 0.0, 2.55, 0.01).clipped > estimate.clipped + 0.4  # counted, the negative half


def test_a_calibrated_relu_input_is_not_drawn_or_counted_as_clipped(tmp_path):
    from corpus import FLOAT_MODELS, calibration_samples

    from onnx_qtypes.calibration import calibrate_model

    model = calibrate_model(FLOAT_MODELS["cnn"](), calibration_samples("cnn")).model  # c1: conv1, read by relu1
    c1 = get_qtype(model, "c1")
    assert c1.statistics.tensor.min < 0 and c1.zero_point == (0,)  # negative values, a range from 0
    _, root = show_html(tmp_path, model)
    card = cards(root)["c1"]
    assert "Relu only" in card.all_text()
    (svg,) = card.find_all("svg", "histogram")
    for bar in svg.find_all("rect", "clipped"):
        assert float(re.match(r"\[([^,]+),", bar.all_text()).group(1)) > 0
    (row,) = [tr for tr in root.find_all("table", "summary")[0].find_all("tr") if tr.all_text().startswith("c1")]
    clipped = float(row.find_all("td", "num")[2].all_text().rstrip("%"))
    assert clipped < 0.1  # the negative values (about half) are not in it


def test_a_tensor_an_if_branch_also_reads_is_not_relu_only():
    """A branch reads outer names (one scope, as QT208's consumers count it): t feeds a Relu and a branch's
    Identity, so values below its range do matter; r only feeds Relu."""
    from onnx import helper

    from onnx_qtypes.proto.relu_readers import read_only_by_relu

    def info(name):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])

    branch = helper.make_graph([helper.make_node("Identity", ["t"], ["b"])], "branch", [], [info("b")])
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    graph = helper.make_graph([helper.make_node("Abs", ["x"], ["t"]), helper.make_node("Relu", ["t"], ["y"]),
                               helper.make_node("Abs", ["x"], ["r"]), helper.make_node("Relu", ["r"], ["z"]),
                               helper.make_node("If", ["c"], ["o"], then_branch=branch, else_branch=branch)],
                              "g", [info("x"), cond], [info("y"), info("z"), info("o")])
    model = helper.make_model(graph)
    assert read_only_by_relu(model) == {("", "r")}


def test_a_towering_bin_is_cut_so_the_rest_stay_readable_and_empty_ends_are_not_drawn():
    from onnx_qtypes.report.svg import HEIGHT, histogram_svg

    counts = (0, 0, 1000, 8, 10, 6, 0, 0, 0, 0)  # a Relu output: its zeros tower over the rest
    edges = tuple(float(e) for e in range(11))
    svg = parse(histogram_svg(Histogram(edges, counts), [(2.0, 6.0)]))
    bars = svg.find_all("rect", "bin")  # the non-empty bins 2, 3, 4, 5
    assert len(bars) == 4
    heights = [float(b.attrs["height"]) for b in bars]
    assert "cut" in bars[0].attrs["class"] and not any("cut" in b.attrs["class"] for b in bars[1:])
    assert heights[2] > 0.5 * heights[0]  # 10 against 1000, drawn at 80 % of the cut bar, not 1 %
    assert heights[0] <= HEIGHT
    ticks = [t.all_text() for t in svg.find_all("text", "tick")]
    assert ticks[:2] == ["2", "6"]  # the populated bins' extent, not the histogram's empty ends


def test_a_large_model_gets_cards_for_the_tensors_that_need_a_look_and_every_tensor_in_the_table(tmp_path):
    from report_models import relu_chain_with_histograms

    from onnx_qtypes.report.page import CARDS
    from onnx_qtypes.report.svg import MAX_BARS

    tensors = CARDS + 50
    page, root = show_html(tmp_path, relu_chain_with_histograms(tensors))
    by_name = cards(root)
    assert len(by_name) == CARDS and {"t7", "t11", "t13"} <= set(by_name)
    tables = root.find_all("table", "summary")
    attention, every = tables
    ranked = [tr.find_all("td")[0].all_text() for tr in attention.find_all("tbody")[0].find_all("tr")]
    assert len(ranked) == CARDS and ranked[:3] == ["t7", "t11", "t13"]  # the error, then the most clipped
    (folded,) = root.find_all("details", "all-tensors")
    assert every in list(folded.iter())
    listed = [tr.find_all("td")[0] for tr in every.find_all("tbody")[0].find_all("tr")]
    assert sorted(td.all_text() for td in listed) == sorted(f"t{k}" for k in range(tensors))  # every tensor
    linked = {td.all_text() for td in listed if td.find_all("a")}
    assert linked == set(by_name)  # a row links to a card only where there is one
    for card in by_name.values():  # 2048 bins drawn as at most MAX_BARS bars (one more where a class changes)
        assert len(card.find_all("rect", "bin")) <= MAX_BARS + 2
    assert len(page) < 25_000 * CARDS + 1_000 * tensors


def test_a_histogram_drawn_in_runs_keeps_every_count_and_never_mixes_clipped_and_kept():
    from onnx_qtypes.report.svg import MAX_BARS, histogram_bars

    rng = np.random.default_rng(2)
    counts, edges = np.histogram(rng.normal(0, 1, 100_000), bins=2048)
    h = Histogram(tuple(edges.tolist()), tuple(counts.tolist()))
    bars = histogram_bars(h, [(-1.0, 2.5)])
    assert sum(count for _, _, count, _ in bars) == counts.sum()
    assert len(bars) <= MAX_BARS + 2
    for a, b, _, kind in bars:
        assert ("clipped" in kind) == (b <= -1.0 or a >= 2.5), (a, b, kind)  # a bar is one side of an end


@pytest.mark.parametrize("edges, counts", [
    ((0.0, 1.0, 2.0), (3, 4)), ((0.0, 1.0, 1.0, 2.0), (3, 4, 5)), ((0.0, 1.0, 2.0), (3, 4, 5)),
    ((0.0, math.nan, 2.0), (1, 1)), ((0.0, 1.0, math.inf), (1, 1)), ((0.0, 1.0, 2.0), (3, -4)),
    ((2.0, 1.0), (1,)), ((0.0,), ()), ((0.0, 5e-324), (7,)),
])
def test_the_reports_histogram_screen_agrees_with_qt205(edges, counts):
    from onnx_qtypes.checker.rules.qt205_histogram_malformed import malformed_histogram
    from onnx_qtypes.report.range_error import histogram_problem

    stats = Statistics(histogram_edges=edges, histogram_counts=counts)
    found = malformed_histogram(stats)
    problem = histogram_problem(stats)
    assert problem == (found[1] if found else None if sum(counts) else "every bin is empty")
