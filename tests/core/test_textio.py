"""Our streams never raise on a character they cannot encode."""

from __future__ import annotations

import io

import pytest

from zluda_runner.core.textio import make_safe

PATH = "C:\\Users\\Дмитрий\\AppData\\Local\\キャッシュ"


def test_a_code_page_pipe_is_switched_to_utf8() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="cp1252")
    with pytest.raises(UnicodeEncodeError):  # what a Windows pipe does without us
        stream.write(PATH)
        stream.flush()
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="cp1252")
    make_safe(stream)  # type: ignore[arg-type]
    stream.write(PATH + "\n")
    stream.flush()
    assert raw.getvalue().decode("utf-8") == PATH + "\n"


def test_a_unicode_stream_keeps_its_encoding_and_replaces_what_it_cannot_write() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-16-le")
    make_safe(stream)  # type: ignore[arg-type]
    assert stream.encoding == "utf-16-le"
    stream.write("ok \udcff\n")  # a lone surrogate (an undecodable file name): replaced, not raised
    stream.flush()
    assert raw.getvalue().decode("utf-16-le") == "ok ?\n"
