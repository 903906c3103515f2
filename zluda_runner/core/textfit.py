"""Text that fits a terminal's width without breaking a word: tables and wrapped lines.

A cell or a line is broken at a space, so a library, file or release name stays whole
on one line. A table that does not fit drops its less important columns first, then wraps the
cells that may wrap (at spaces), and below that switches to a list layout (one entry per row,
``label: value`` under it). Only a single word wider than the whole line (a long path, a citation
``repo:path@sha``) is broken: after a ``/`` or ``:``, or before an ``@``, its pieces on lines of their
own with the continuation indent, so that no line is wider than ``width`` (the full text is in --json).

``width=None`` means no limit (piped output without ``COLUMNS``): rows stay one line, for grep.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from zluda_runner.core.termsize import view_width as view_width  # (the views' width: one home, there)
from zluda_runner.core.textio import visible

GAP = 2  # spaces between columns


@dataclass(frozen=True)
class Col:
    """A column: ``wrap`` False for names (never broken); ``drop`` > 0 may go when it does not fit
    (the highest first); ``head`` columns open an entry's first line in the list layout."""

    label: str
    wrap: bool = True
    drop: int = 0
    right: bool = False
    head: bool = False


def wrap_words(text: str, width: int | None, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` after ``first``, wrapped at spaces to ``width``; later lines start with ``rest``
    (default: spaces as wide as ``first``), measured as shown (:func:`visible`); the spaces between two
    words on one line are kept as written (aligned columns); only a word that fits no line is broken
    (:func:`break_word`)."""
    text = visible(text)
    if width is None:
        return [(first + text).rstrip()]
    rest = " " * len(first) if rest is None else rest
    lines: list[str] = []
    line, fresh = first, True  # fresh: nothing but the prefix on the line yet
    for spaces, word in re.findall(r"( *)\s*(\S+)", text):
        gap = spaces or " "  # the spaces before a word as written; a line break is one space
        if len(line) + (0 if fresh else len(gap)) + len(word) <= width:
            line, fresh = line + (word if fresh else gap + word), False
            continue
        if not fresh or line.strip():
            lines.append(line.rstrip())
        if len(rest) + len(word) <= width:
            line, fresh = rest + word, False
        else:  # wider than any line: broken at its separators, each piece on a line of its own
            pad = rest if width - len(rest) >= 20 else ""
            *done, last = break_word(word, width - len(pad))
            lines += [pad + piece for piece in done]
            line, fresh = pad + last, False
    if not fresh or line.strip():
        lines.append(line.rstrip())
    return lines or [first.rstrip()]


def break_word(word: str, width: int) -> list[str]:
    """``word`` in pieces of at most ``width``: each cut after the last ``/`` or ``:``, or before the
    last ``@``, that fits; where none does, at ``width``."""
    pieces: list[str] = []
    while len(word) > width:
        cuts = [i + 1 for i, ch in enumerate(word[:width]) if ch in "/:"]
        cuts += [i for i, ch in enumerate(word[: width + 1]) if ch == "@" and i > 0]
        cut = max(cuts, default=width)
        pieces.append(word[:cut])
        word = word[cut:]
    return [*pieces, word]


def wrap_line(line: str, width: int | None, hang: int = 2) -> list[str]:
    """One line of prose made :func:`visible` and wrapped at spaces; continuation lines indented ``hang``
    more than it."""
    line = visible(line)
    if width is None or len(line) <= width:
        return [line.rstrip()]  # kept as written (aligned spaces too)
    lead = len(line) - len(line.lstrip(" "))
    return wrap_words(line.strip(), width, " " * lead, " " * (lead + hang))


def wrap_text(text: str, width: int | None, hang: int = 2) -> str:
    """Each line of ``text`` wrapped as :func:`wrap_line` does; blank lines kept."""
    return "\n".join(out for line in text.split("\n") for out in (wrap_line(line, width, hang) or [""]))


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def fit_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int | None, *,
              rule: bool = True) -> list[str]:
    """The rows as a table no wider than ``width`` (see the module doc), or as a list; cells are
    measured as shown (:func:`~zluda_runner.core.textio.visible`)."""
    rows = [[visible(cell) for cell in row] for row in rows]
    everything = list(range(len(cols)))
    natural = [max([len(c.label), *(len(r[i]) for r in rows)]) for i, c in enumerate(cols)]
    if width is None:
        return _render(cols, rows, everything, natural, rule)
    least = [max([_longest_word(c.label), *((_longest_word(r[i]) if c.wrap else len(r[i])) for r in rows)])
             for i, c in enumerate(cols)]
    order = sorted((i for i, c in enumerate(cols) if c.drop > 0), key=lambda i: -cols[i].drop)
    levels = [[i for i in everything if i not in order[:k]] for k in range(len(order) + 1)]

    def total(shown: list[int], widths: list[int]) -> int:
        return sum(widths[i] for i in shown) + GAP * (len(shown) - 1)

    for shown in levels:
        if total(shown, natural) <= width:
            return _render(cols, rows, shown, natural, rule)
    shown = levels[-1]
    if total(shown, least) <= width:
        widths = list(natural)
        while total(shown, widths) > width:
            slack = [i for i in shown if cols[i].wrap and widths[i] > least[i]]
            widest = max(slack, key=lambda i: widths[i] - least[i])
            widths[widest] -= 1
        return _render(cols, rows, shown, widths, rule)
    return _as_list(cols, rows, width)


def _render(cols: Sequence[Col], rows: Sequence[Sequence[str]], shown: list[int], widths: list[int],
            rule: bool) -> list[str]:
    def cells(values: Sequence[str]) -> list[list[str]]:
        def cell(i: int) -> list[str]:
            fits = len(values[i]) <= widths[i] or not cols[i].wrap  # kept as written (spaces too)
            return [values[i]] if fits else wrap_words(values[i], widths[i])

        return [cell(i) for i in shown]

    def lines(parts: list[list[str]]) -> list[str]:
        out = []
        for n in range(max(len(p) for p in parts)):
            row = []
            for i, part in zip(shown, parts, strict=True):
                text = part[n] if n < len(part) else ""
                row.append(text.rjust(widths[i]) if cols[i].right else text.ljust(widths[i]))
            out.append((" " * GAP).join(row).rstrip())
        return out

    out = lines(cells([c.label for c in cols]))
    if rule:
        out.append((" " * GAP).join("-" * widths[i] for i in shown))
    for row in rows:
        out += lines(cells(row))
    return out


def _as_list(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """One entry per row: its head cells on the first line, then ``label: value`` items packed."""
    heads = [i for i, c in enumerate(cols) if c.head] or [0]
    out: list[str] = []
    for row in rows:
        head = "  ".join(row[i] for i in heads if row[i])
        out += [head] if len(head) <= width else wrap_words(head, width, "", "    ")
        line = ""
        for i, col in enumerate(cols):
            if i in heads or not row[i]:
                continue
            item = f"{col.label}: {row[i]}"
            if line and len(line) + 3 + len(item) <= width:
                line += "   " + item
                continue
            if line:
                out.append(line)
            if 2 + len(item) <= width:
                line = "  " + item
            else:
                out += wrap_words(row[i], width, f"  {col.label}: ", "    ")
                line = ""
        if line:
            out.append(line)
    return out
