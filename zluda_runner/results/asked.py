"""What the user asked: the command of every run recorded meanwhile (:func:`asked` sets it, recording
reads :data:`ASKED`). Small on purpose: every command line and API call enters it, a launch too, before
anything of the store is imported."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from zluda_runner.core.redact import redact_words

ASKED: ContextVar[tuple[str, ...] | None] = ContextVar("zluda_runner_asked", default=None)


@contextlib.contextmanager
def asked(words: Sequence[str]) -> Iterator[None]:
    """``words`` (what the user asked: the command line as parsed, or an API call and its arguments) is
    the command of every run recorded meanwhile; an outer one stands (the command line that made the
    API call, an API call that made another)."""
    if ASKED.get() is not None:
        yield
        return
    token = ASKED.set(tuple(redact_words([str(w) for w in words])))
    try:
        yield
    finally:
        ASKED.reset(token)
