"""Every normative statement of the proposal names the rule that checks it, or says that none does.

A sentence is normative when it holds MUST, MUST NOT, SHALL, REQUIRED or "is
an error". It passes when it cites a registered rule id (QTnnn), sits in a
rule's own paragraph of validity.md (which opens with the rule's id), or
carries the marker that types.md#citations defines for statements no rule
checks. Every QTnnn the documents mention must be a registered rule (a retired
id only in a sentence that says it is retired).
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from builders import ROOT

from onnx_qtypes.checker import all_rules
from onnx_qtypes.checker.registry import RETIRED

DOCS = [
    "proposal/0001-quantized-element-types.md",
    "proposal/spec/types.md",
    "proposal/spec/semantics.md",
    "proposal/spec/validity.md",
    "proposal/spec/interop.md",
    "proposal/spec/calibration.md",
    "proposal/spec/profiles.md",
    "proposal/spec/llm_formats.md",
]
RULE_IDS = {r.id for r in all_rules()}
MARKER = "not checked by a rule:"  # the convention stated once in types.md#citations
NORMATIVE = re.compile(r"\b(MUST|SHALL|REQUIRED)\b|\bis an error\b")
# The RFC 2119 boilerplate and "states a MUST" name the key words; they state nothing.
NAMES_KEY_WORDS = re.compile(r"RFC 2119|\ba MUST\b")
# Sentences that may stay bare for now, each with why: text another change is rewriting,
# which must add the marker or a citation when it lands (the last test fails once an entry matches nothing).
PENDING: dict[tuple[str, str], str] = {}  # (doc, sentence start) -> why it may stay uncited for now
RULE_ID = re.compile(r"\bQT[0-9]{3}\b")
RULE_PARAGRAPH = re.compile(r"^\*\*QT[0-9]{3} `")  # validity.md: "**QT101 `scale-not-positive` (error).** ..."
# A sentence ends at . ! or ? (optionally closing a parenthesis) followed by a
# capital, a backtick or emphasis: "e.g. the", "1.23.2" and "§2.1" do not split.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*])|(?<=[.!?]\))\s+(?=[A-Z`*])")
BLOCK_START = re.compile(r"^(\s*)([-*+]|[0-9]+\.)\s+")


@dataclasses.dataclass
class Sentence:
    doc: str
    line: int
    text: str
    in_rule_paragraph: bool

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def blocks(text: str):
    """(first line number, joined text) of each paragraph, list item and table row; code is skipped."""
    current: list[str] = []
    start = 0
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            if current:
                yield start, " ".join(current)
                current = []
            continue
        if fenced:
            continue
        stripped = line.strip()
        # a blank line, a heading, an anchor, a table row or a new list item ends the block before it
        ends = (not stripped or stripped.startswith(("#", "<a id=", "|")) or BLOCK_START.match(line))
        if ends and current:
            yield start, " ".join(current)
            current = []
        if not stripped or stripped.startswith("<a id="):
            continue
        if stripped.startswith(("#", "|")):
            yield number, stripped
            continue
        if not current:
            start = number
        current.append(stripped)
    if current:
        yield start, " ".join(current)


def sentences(doc: str) -> list[Sentence]:
    found = []
    for line, block in blocks((ROOT / doc).read_text()):
        in_rule = bool(RULE_PARAGRAPH.match(block))
        for text in SENTENCE_END.split(block):
            found.append(Sentence(doc, line, text.strip(), in_rule))
    return found


SENTENCES = [s for doc in DOCS for s in sentences(doc)]


def pending(s: Sentence) -> bool:
    return any(s.doc == doc and start in s.text for doc, start in PENDING)


def test_the_parser_finds_normative_sentences():
    # A parser that found nothing would pass every check below.
    normative = [s for s in SENTENCES if NORMATIVE.search(s.text)]
    by_doc = {doc: [s for s in normative if s.doc == doc] for doc in DOCS}
    assert len(by_doc["proposal/spec/validity.md"]) > len(RULE_IDS) // 2
    assert by_doc["proposal/spec/types.md"] and by_doc["proposal/spec/semantics.md"]
    # Line wrapping is undone: this MUST in validity.md is on the line after its rule's id.
    qt113 = [s for s in normative if "A type without scales (dynamic) MUST NOT carry zero points" in s.text]
    assert len(qt113) == 1 and qt113[0].in_rule_paragraph


@pytest.mark.parametrize("doc", DOCS)
def test_every_normative_sentence_cites_its_rule_or_says_none_checks_it(doc):
    bare = [
        str(s) for s in SENTENCES
        if s.doc == doc and NORMATIVE.search(s.text) and not NAMES_KEY_WORDS.search(s.text)
        and not s.in_rule_paragraph and not RULE_ID.search(s.text) and MARKER not in s.text
        and not pending(s)
    ]
    assert not bare, (
        f"normative sentences citing no rule; cite the QTnnn that checks each, or mark it "
        f"'({MARKER} ...)' (proposal/spec/types.md#citations):\n" + "\n".join(bare)
    )


@pytest.mark.parametrize("doc", DOCS)
def test_every_cited_rule_exists(doc):
    unknown = [
        f"{rule_id} in {s}" for s in SENTENCES if s.doc == doc for rule_id in RULE_ID.findall(s.text)
        if rule_id not in RULE_IDS and not (rule_id in RETIRED and "retired" in s.text)
    ]
    assert not unknown, "rule ids the registry does not hold:\n" + "\n".join(unknown)


def test_the_marker_is_defined_where_the_message_points():
    types = (ROOT / "proposal/spec/types.md").read_text()
    assert '<a id="citations"></a>' in types and MARKER in types


def test_every_pending_exception_still_matches_a_bare_sentence():
    for doc, start in PENDING:
        matches = [s for s in SENTENCES if s.doc == doc and start in s.text]
        assert matches, f"{doc}: no sentence starts '{start}' any more: remove it from PENDING"
        assert all(NORMATIVE.search(s.text) and MARKER not in s.text and not RULE_ID.search(s.text)
                   for s in matches), f"{doc}: '{start}' now cites or carries the marker: remove it from PENDING"
