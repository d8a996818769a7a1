"""Every external source the proposal cites has an entry in proposal/sources.md, and every entry is cited.

A citation is a GitHub-style reference (`owner/repo#N`, `repo#N`, `PR #N`,
`issue #N`, `owner/repo@commit`, `@commit:path`) or an http(s) address. A
reference must sit in the text of a link to its sources.md entry (or to an
address that entry lists); an address must be listed in some entry.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from builders import ROOT

PROPOSAL = ROOT / "proposal"
SOURCES = PROPOSAL / "sources.md"
DOCS = sorted([ROOT / "README.md", *(p for p in PROPOSAL.rglob("*.md") if p != SOURCES)])

URL = re.compile(r"https?://[^\s<>()\[\]`\"']+")
# example.com is reserved for examples (RFC 2606): the profile format's sample entry, not a source.
EXAMPLE_HOSTS = ("https://example.com/", "http://example.com/")
LINK = re.compile(r"\[([^\[\]]+)\]\(([^()\s]+)\)")
TARGET = re.compile(r"\]\([^()\s]+\)")
REF = re.compile(
    r"(?<![\w/.#-])(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z][\w.-]*(?<!\.md)#[0-9]+(?![\w-])"  # owner/repo#N, repo#N; not file.md#6
    r"|\b(?:PRs?|[Ii]ssues?)\s+#[0-9]+\b"  # PR #N, issue #N (also across a line break)
    r"|(?<![\w/])(?:[A-Za-z0-9][\w.-]*/[\w.-]+)?@[0-9a-f]{7,40}\b"  # owner/repo@commit, @commit:path
)
ANCHOR = re.compile(r'<a id="(src-[^"]+)"></a>')


def _urls(text: str) -> set[str]:
    return {u.rstrip(".,;:") for u in URL.findall(text)}


def entries() -> dict[str, set[str]]:
    """Anchor id → the addresses listed in that entry."""
    text = SOURCES.read_text(encoding="utf-8")
    marks = list(ANCHOR.finditer(text))
    ids = [m.group(1) for m in marks]
    assert len(ids) == len(set(ids)), "duplicate anchor in sources.md"
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return {m.group(1): _urls(text[m.end():end]) for m, end in zip(marks, ends)}


def _sources_anchor(doc: pathlib.Path, target: str) -> str | None:
    """The anchor of a link that points into sources.md, else None."""
    path, _, anchor = target.partition("#")
    if not path.endswith("sources.md") or (doc.parent / path).resolve() != SOURCES.resolve():
        return None
    return anchor


def problems(doc: pathlib.Path, text: str, known: dict[str, set[str]]) -> list[str]:
    """Citations in `text` (the contents of `doc`) that do not lead to an entry of `known`."""
    listed = set().union(*known.values())
    found = []
    for url in _urls(text):
        if not url.startswith(EXAMPLE_HOSTS) and url not in listed:
            found.append(f"{url}: address not listed in sources.md")
    good_spans = []  # link texts whose target is a sources.md entry or an address an entry lists
    for link in LINK.finditer(text):
        target = link.group(2)
        anchor = _sources_anchor(doc, target)
        if anchor == "":
            continue  # a link to the register itself, not to an entry
        if anchor is not None and anchor not in known:
            found.append(f"{target}: no such entry in sources.md")
        elif anchor is not None or target in listed:
            good_spans.append(link.span(1))
    # Link targets and bare addresses are not citations themselves (an internal `#6-measured`, a URL's path).
    masked = URL.sub(lambda m: " " * len(m.group()), TARGET.sub(lambda m: " " * len(m.group()), text))
    for ref in REF.finditer(masked):
        if not any(start <= ref.start() and ref.end() <= end for start, end in good_spans):
            found.append(f"{' '.join(ref.group().split())}: not linked to its sources.md entry")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_citation_has_an_entry(doc):
    found = problems(doc, doc.read_text(encoding="utf-8"), entries())
    assert not found, f"{doc.relative_to(ROOT)}:\n" + "\n".join(found)


def test_every_entry_is_cited_and_has_an_address():
    known = entries()
    linked, addresses = set(), set()
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        addresses |= _urls(text)
        for link in LINK.finditer(text):
            anchor = _sources_anchor(doc, link.group(2))
            if anchor:
                linked.add(anchor)
    assert not [a for a, urls in known.items() if not urls], "an entry lists no address"
    uncited = sorted(a for a, urls in known.items() if a not in linked and not urls & addresses)
    assert not uncited, f"entries cited nowhere in the proposal: {uncited}"


def test_patterns_flag_citations_and_leave_rule_ids_and_internal_anchors_alone():
    known = {"src-x-1": {"https://github.com/o/x/issues/1"}}
    doc = PROPOSAL / "spec" / "any.md"
    flagged = {
        "see Paddle-Lite#8042 there": "Paddle-Lite#8042",
        "in onnx/onnx PR\n#8214.": "PR #8214",
        "read at openxla/stablehlo@3c9301c116f9:`docs/spec.md`": "openxla/stablehlo@3c9301c116f9",
        "and @07466c75e57d:`quantize.h`": "@07466c75e57d",
        "issue #2205": "issue #2205",
        "<https://unlisted.example.org/page>": "https://unlisted.example.org/page",
        "[Paddle-Lite#8042](../sources.md#src-missing)": "src-missing",
        "[x#1](sources.md#src-x-1)": "x#1",  # sources.md is ../sources.md from spec/
    }
    for text, what in flagged.items():
        found = problems(doc, text, known)
        assert found and what in found[0], (text, found)
    clean = [
        "QT101 and QT120 are rule ids; `git grep QT101`",
        "[§6](interop.md#6-measured), [rules](../rules.md#qt101-something), (semantics.md#4)",
        "[x#1](../sources.md#src-x-1) and [o/x#1](https://github.com/o/x/issues/1)",
        "a [PR\n#1](../sources.md#src-x-1) across a line",
        'in JSON: "url": "https://example.com/npu-sdk"',
        "int8:float32<scale 0.02>, step 3, C#, item #",
    ]
    for text in clean:
        assert problems(doc, text, known) == [], text
