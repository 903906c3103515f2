"""click's help layout without click, textwrap or re (commands/helpwrap): words split as the standard
library's ``textwrap`` splits them, lines filled and a command's help shortened as click does -- checked
against the real ``textwrap`` and click on many generated texts (hyphens, em-dashes, punctuation, digits,
non-ASCII letters, ``\\b`` blocks, paragraphs), not only on our own help."""

from __future__ import annotations

import random
import textwrap

from click._textwrap import TextWrapper as ClickWrapper
from click.formatting import wrap_text as click_wrap_text
from click.utils import _make_default_short_help

from zluda_runner.commands.helpwrap import Wrapper, chunks, short_help, wrap_text

# (no tab and no indent wider than a line: click's own wrapper never ends on those)
ALPHABET = "ab-- -.,é_1\n?xZ\b'"


def _texts(seed: int, count: int = 1500) -> list[tuple[str, int]]:
    rnd = random.Random(seed)
    return [("".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 48))), rnd.randint(8, 24))
            for _ in range(count)]


def test_words_split_as_textwrap_splits_them() -> None:
    splitter = textwrap.TextWrapper()
    for text, _ in _texts(1):
        assert chunks(text) == [c for c in splitter.wordsep_re.split(text) if c], text
        simple = [c for c in splitter.wordsep_simple_re.split(text) if c]
        assert chunks(text, break_on_hyphens=False) == simple


def test_lines_fill_as_click_s_wrapper_fills_them() -> None:
    for text, width in _texts(2):
        flat = text.replace("\n", " ")
        theirs = ClickWrapper(width, initial_indent="  ", subsequent_indent=" ", replace_whitespace=False)
        assert Wrapper(width, "  ", " ").fill(flat) == theirs.fill(flat), (text, width)


def test_paragraphs_wrap_as_click_wraps_them() -> None:
    for text, width in _texts(3):
        body = text.replace("\n ", "\n")  # (an indent as wide as the line is click's endless loop)
        assert wrap_text(body, width, preserve_paragraphs=True) == click_wrap_text(
            body, width, preserve_paragraphs=True), (body, width)
        assert wrap_text(body, width, "> ", ". ") == click_wrap_text(body, width, "> ", ". ")


def test_a_help_is_shortened_as_click_shortens_it() -> None:
    for text, width in _texts(4):
        assert short_help(text, width - 6) == _make_default_short_help(text, width - 6).strip(), (text, width)
    words = "Does it really run? Run COMMAND N times through ZLUDA and judge it. More."
    assert short_help(words, 30) == _make_default_short_help(words, 30).strip()
    assert short_help(words, 2) == "..."
