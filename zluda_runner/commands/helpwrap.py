"""click's help layout, without click, :mod:`textwrap` or :mod:`re`: ``zluda-run --help`` is written by
:mod:`zluda_runner.commands.helptext` through these rules, and click's group shows that same page.

What click does (``click.formatting.HelpFormatter``, ``wrap_text``, ``click._textwrap.TextWrapper``,
``click.utils._make_default_short_help``), and the standard library's :class:`textwrap.TextWrapper` under
it, for text without ANSI escapes: words split where ``textwrap`` splits them (at whitespace, after the
hyphen of a hyphenated word, around an em-dash), lines filled greedily, a word wider than a line cut.
tests/commands/test_helptext.py holds our page equal to click's own rendering at every width.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Sequence

_WHITESPACE = "\t\n\x0b\x0c\r "  # textwrap's
_WORD_PUNCT = "!\"'&.,?"  # with the word characters, what may come before an em-dash (textwrap's)
BLOCK_MARK = "\b"  # a paragraph that starts with this line is not rewrapped (click's)


def _word(c: str) -> bool:  # re's \w
    return c.isalnum() or c == "_"


def _letter(c: str) -> bool:  # textwrap's letter, [^\d\W]
    return _word(c) and not c.isdecimal()


def _at(text: str, i: int, test: object) -> bool:
    return 0 <= i < len(text) and test(text[i])  # type: ignore[operator]


def _em_dash_at(text: str, i: int) -> bool:
    """Do two or more hyphens at ``i`` stand between words (after a word or punctuation, before a word)?"""
    if not (_at(text, i - 1, lambda c: _word(c) or c in _WORD_PUNCT) and text.startswith("--", i)):
        return False
    end = i
    while end < len(text) and text[end] == "-":
        end += 1
    return _at(text, end, _word)


def _hyphen_breaks_at(text: str, i: int) -> bool:
    """May a line break after the hyphen at ``i``: two letters (or letter-hyphen-letter) before it, a
    letter and a letter (perhaps after one more hyphen) after it?"""
    before = (_at(text, i - 2, _letter) and _at(text, i - 1, _letter)) or (
        _at(text, i - 3, _letter) and _at(text, i - 2, "-".__eq__) and _at(text, i - 1, _letter))
    after = _at(text, i + 1, _letter) and (
        _at(text, i + 2, _letter) or (_at(text, i + 2, "-".__eq__) and _at(text, i + 3, _letter)))
    return before and after


def chunks(text: str, *, break_on_hyphens: bool = True) -> list[str]:
    """``text`` split as :class:`textwrap.TextWrapper` splits it before filling lines: runs of whitespace
    and words; with ``break_on_hyphens``, a hyphenated word after each hyphen it may break at, and an
    em-dash (``--`` between words) a chunk of its own."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        end = i + 1
        if text[i] in _WHITESPACE:
            while end < n and text[end] in _WHITESPACE:
                end += 1
        elif break_on_hyphens and _em_dash_at(text, i):
            while text[end] == "-":
                end += 1
        else:
            while end < n and text[end] not in _WHITESPACE:
                if break_on_hyphens and text[end] == "-" and _hyphen_breaks_at(text, end):
                    end += 1
                    break
                if break_on_hyphens and _em_dash_at(text, end):
                    break
                end += 1
        out.append(text[i:end])
        i = end
    return out


class Wrapper:
    """:class:`textwrap.TextWrapper` with ``replace_whitespace=False`` (click's), for text without tabs
    (``wrap_text`` expands them first) and without ANSI escapes. ``click_long_words``: a word wider than
    the line is cut as click's wrapper cuts it (at least one character on the line); else as the
    standard library's."""

    def __init__(self, width: int, initial_indent: str = "", subsequent_indent: str = "", *,
                 break_on_hyphens: bool = True, max_lines: int | None = None, placeholder: str = " [...]",
                 click_long_words: bool = True) -> None:
        self.width, self.initial_indent, self.subsequent_indent = width, initial_indent, subsequent_indent
        self.break_on_hyphens, self.max_lines, self.placeholder = break_on_hyphens, max_lines, placeholder
        self.click_long_words = click_long_words

    def fill(self, text: str) -> str:
        return "\n".join(self.wrap(text))

    def wrap(self, text: str) -> list[str]:
        return self._wrap_chunks(chunks(text.expandtabs(), break_on_hyphens=self.break_on_hyphens))

    def indent_only(self, text: str) -> str:
        return "\n".join(f"{self.subsequent_indent if i else self.initial_indent}{line}"
                         for i, line in enumerate(text.splitlines()))

    def _handle_long_word(self, reversed_chunks: list[str], cur_line: list[str], cur_len: int,
                          width: int) -> None:
        # click's: at least one character on the line; the standard library's: what is left of it
        room = width - cur_len
        space_left = max(room, 1) if self.click_long_words else (room if width >= 1 else 1)
        last = reversed_chunks[-1]
        end = space_left
        if not self.click_long_words and self.break_on_hyphens and len(last) > space_left:
            hyphen = last.rfind("-", 0, space_left)
            if hyphen > 0 and any(c != "-" for c in last[:hyphen]):
                end = hyphen + 1
        cur_line.append(last[:end])
        reversed_chunks[-1] = last[end:]

    def _wrap_chunks(self, pieces: list[str]) -> list[str]:  # textwrap's, step by step
        if self.width <= 0:
            raise ValueError(f"invalid width {self.width!r} (must be > 0)")
        if self.max_lines is not None:
            indent = self.subsequent_indent if self.max_lines > 1 else self.initial_indent
            if len(indent) + len(self.placeholder.lstrip()) > self.width:
                raise ValueError("placeholder too large for max width")
        lines: list[str] = []
        pieces = pieces[::-1]
        while pieces:
            cur_line: list[str] = []
            cur_len = 0
            indent = self.subsequent_indent if lines else self.initial_indent
            width = self.width - len(indent)
            if pieces[-1].strip() == "" and lines:
                del pieces[-1]
            while pieces and cur_len + len(pieces[-1]) <= width:
                cur_len += len(pieces[-1])
                cur_line.append(pieces.pop())
            if pieces and len(pieces[-1]) > width:
                self._handle_long_word(pieces, cur_line, cur_len, width)
                cur_len = sum(map(len, cur_line))
            if cur_line and cur_line[-1].strip() == "":
                cur_len -= len(cur_line[-1])
                del cur_line[-1]
            if not cur_line:
                continue
            if (self.max_lines is None or len(lines) + 1 < self.max_lines
                    or ((not pieces or (len(pieces) == 1 and not pieces[0].strip())) and cur_len <= width)):
                lines.append(indent + "".join(cur_line))
                continue
            self._end_with_placeholder(lines, cur_line, cur_len, width, indent)
            break
        return lines

    def _end_with_placeholder(self, lines: list[str], cur_line: list[str], cur_len: int, width: int,
                              indent: str) -> None:
        while cur_line:
            if cur_line[-1].strip() and cur_len + len(self.placeholder) <= width:
                lines.append(indent + "".join([*cur_line, self.placeholder]))
                return
            cur_len -= len(cur_line[-1])
            del cur_line[-1]
        if lines:
            prev_line = lines[-1].rstrip()
            if len(prev_line) + len(self.placeholder) <= self.width:
                lines[-1] = prev_line + self.placeholder
                return
        lines.append(indent + self.placeholder.lstrip())


def wrap_text(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "",
              preserve_paragraphs: bool = False) -> str:
    """``click.formatting.wrap_text``: with ``preserve_paragraphs``, paragraphs (split at empty lines)
    wrapped one by one, each indented as its first line is, one that starts with a ``\\b`` line kept
    as written."""
    text = text.expandtabs()
    wrapper = Wrapper(width, initial_indent, subsequent_indent)
    if not preserve_paragraphs:
        return wrapper.fill(text)
    paragraphs: list[tuple[int, bool, str]] = []
    buf: list[str] = []
    indent: int | None = None
    for line in [*text.splitlines(), ""]:
        if not line:
            if buf:
                raw = buf[0].strip() == BLOCK_MARK
                paragraphs.append((indent or 0, raw, "\n".join(buf[1:]) if raw else " ".join(buf)))
                buf = []
            indent = None
            continue
        if indent is None:
            stripped = line.lstrip()
            indent, line = len(line) - len(stripped), stripped
        buf.append(line)
    out = []
    for extra, raw, body in paragraphs:
        inner = Wrapper(width, initial_indent + " " * extra, subsequent_indent + " " * extra)
        out.append(inner.indent_only(body) if raw else inner.fill(body))
    return "\n\n".join(out)


def short_help(text: str, limit: int) -> str:
    """``click.utils._make_default_short_help``: the first sentence of the first paragraph, shortened
    to ``limit`` at a word with ``...``; then stripped, as ``Command.get_short_help_str`` does."""
    words = text.partition("\n\n")[0].split()
    if words and words[0] == BLOCK_MARK:
        words = words[1:]
    for i, word in enumerate(words):
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            words = words[: i + 1]
            break
    joined = " ".join(words)
    if len(joined) <= limit:
        return joined.strip()
    if limit < len("..."):
        return "..."
    return Wrapper(limit, max_lines=1, placeholder="...", break_on_hyphens=False,
                   click_long_words=False).fill(joined).strip()


class Page:
    """``click.HelpFormatter``: a help page written into a buffer, ``width`` columns wide."""

    def __init__(self, width: int) -> None:
        self.width, self.indent = width, 0
        self.buffer: list[str] = []

    def write(self, text: str) -> None:
        self.buffer.append(text)

    def usage(self, prog: str, args: str, prefix: str = "Usage: ") -> None:
        usage_prefix = f"{prefix:>{self.indent}}{prog} "
        text_width = self.width - self.indent
        if not args:
            self.write(usage_prefix.rstrip(" ") + "\n")
            return
        if text_width >= len(usage_prefix) + 20:
            self.write(wrap_text(args, text_width, usage_prefix, " " * len(usage_prefix)))
        else:
            indent = " " * (max(self.indent, len(prefix)) + 4)
            self.write(usage_prefix + "\n" + wrap_text(args, text_width, indent, indent))
        self.write("\n")

    def paragraph(self) -> None:
        if self.buffer:
            self.write("\n")

    def text(self, text: str) -> None:
        """Indented text, rewrapped by paragraph (``HelpFormatter.write_text`` under ``indentation``)."""
        self.paragraph()
        self.indent += 2
        indent = " " * self.indent
        self.write(wrap_text(text, self.width, indent, indent, preserve_paragraphs=True) + "\n")
        self.indent -= 2

    def section(self, heading: str, rows: Sequence[tuple[str, str]], col_max: int = 30,
                col_spacing: int = 2) -> None:
        """A heading and its definition list (``HelpFormatter.section`` and ``write_dl``)."""
        self.paragraph()
        self.write(f"{'':>{self.indent}}{heading}:\n")
        self.indent += 2
        first_col = min(max((len(first) for first, _ in rows), default=0), col_max) + col_spacing
        for first, second in rows:
            self.write(f"{'':>{self.indent}}{first}")
            if not second:
                self.write("\n")
                continue
            if len(first) <= first_col - col_spacing:
                self.write(" " * (first_col - len(first)))
            else:
                self.write("\n" + " " * (first_col + self.indent))
            text_width = max(self.width - first_col - 2, 10)
            lines = wrap_text(second, text_width, preserve_paragraphs=True).splitlines()
            self.write(f"{lines[0]}\n" if lines else "\n")
            for line in lines[1:]:
                self.write(f"{'':>{first_col + self.indent}}{line}\n")
        self.indent -= 2

    def value(self) -> str:
        """The page, as ``Command.get_help`` returns it (no trailing newline)."""
        return "".join(self.buffer).rstrip("\n")
