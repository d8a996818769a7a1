"""The HTML report of ``onnx-qtypes show --format html``: one self-contained page, no scripts, no network."""

from onnx_qtypes.report.page import iter_html, render_html

__all__ = ["iter_html", "render_html"]
