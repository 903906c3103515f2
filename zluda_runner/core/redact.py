"""The one redaction of credentials in URLs: every place that prints or stores a URL uses it.

What goes: the password of ``user:password@`` (a password may hold ``/`` or ``@``: everything up to
the last ``@`` before the path's query is the user part, as HTTP clients read it), a bare
``token@`` user part, and the values of query parameters whose names say they are secrets
(``password``, ``token``, ``key``, ``secret``, ``sig``, ``auth`` ...). Over-redacting is preferred
to leaking: a path holding ``@`` loses what precedes it.
"""

from __future__ import annotations

import re

MASK = "***"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*")
_SECRET_NAME = re.compile(
    r"pass|pwd|token|secret|key|sig|auth|cred|session|cookie|bearer|ticket|code", re.IGNORECASE
)


def _parts(url: str) -> tuple[str, str, str]:
    """``scheme://``, the authority and path, and ``?query#fragment`` (``scheme://`` empty: no URL)."""
    scheme, sep, rest = url.partition("://")
    cut = min((at for at in (rest.find("?"), rest.find("#")) if at >= 0), default=len(rest))
    return scheme + sep if sep else "", rest[:cut], rest[cut:]


def userinfo(url: str) -> tuple[str, str, str] | None:
    """``url`` split at its real userinfo, everything before the LAST ``@`` ahead of the query (as HTTP
    clients read it; libpq stops at the first): ``(scheme://, userinfo, @host/path?query)``; None
    without one."""
    scheme, head, tail = _parts(url)
    at = head.rfind("@")
    return (scheme, head[:at], head[at:] + tail) if scheme and at >= 0 else None


def redact_url(url: str) -> str:
    """``url`` with its credentials masked (``https://u:***@host/p?token=***``)."""
    scheme, head, tail = _parts(url)
    if not scheme:
        return url
    split = userinfo(url)
    if split is not None:
        user, colon, _ = split[1].partition(":")
        if "/" in user:  # no userinfo runs over a slash unless the password has one: mask it all
            user, colon = "", ""
        head = (f"{user}:{MASK}" if colon else MASK) + head[len(split[1]):]
    if tail.startswith("?"):
        query, hash_sign, fragment = tail[1:].partition("#")
        tail = "?" + "&".join(_redact_param(p) for p in query.split("&")) + hash_sign + fragment
    return f"{scheme}{head}{tail}"


def _redact_param(param: str) -> str:
    name, eq, value = param.partition("=")
    if eq and value and _SECRET_NAME.search(name):
        return f"{name}={MASK}"
    return param


def redact_text(text: str, *urls: str) -> str:
    """Every URL inside ``text`` (an error message, a log line) redacted, and the secrets of ``urls``
    wherever they show: a driver that read a password holding ``@`` up to its first ``@`` quotes the
    rest as a host (``ss@127.0.0.1``)."""
    for url in urls:
        split = userinfo(url)
        secret = split[1].partition(":")[2] if split else ""
        pieces = [secret, *(secret[i + 1:] + "@" for i, c in enumerate(secret) if c == "@")]
        for piece in sorted(filter(None, pieces), key=len, reverse=True):
            text = text.replace(piece, MASK + ("@" if piece.endswith("@") else ""))
    return _URL.sub(_redact_match, text)


def _redact_match(match: re.Match[str]) -> str:
    url = match.group(0)
    core = url.rstrip(".,:;!)]")  # the sentence's punctuation is not part of the URL
    return redact_url(core) + url[len(core):]


# A word that sets a secret: ``HF_TOKEN=...`` (an environment assignment), ``--api-key=...``; the value of
# an option whose name says it is one (``--token VALUE``); in a word or a command line given as one word.
_SECRET_SET = re.compile(r"(?<!\S)((?:--?)?[A-Za-z_][\w.-]*)=(\S+)")
_SECRET_OPTION = re.compile(r"--?[\w-]*(?:pass|pwd|token|secret|api[-_]?key|credential|auth)[\w-]*$",
                            re.IGNORECASE)
SECRET_OPTIONS = frozenset({"--results-db"})  # ours whose value may hold a credential: always redacted


def redact_words(words: list[str] | tuple[str, ...]) -> list[str]:
    """The words of a command line (what a run records) with every credential masked: URLs (as
    :func:`redact_text`), assignments and ``--option=value`` words whose name says they hold a secret, the
    word after such an option, and the value of :data:`SECRET_OPTIONS` (redacted as a URL)."""
    out: list[str] = []
    secret_next = ours = False
    for word in words:
        if secret_next:
            out.append(redact_url(word) if "://" in word else word if ours else MASK)
            secret_next = False
            continue
        name = word.split("=", 1)[0]
        ours = name in SECRET_OPTIONS  # a file's path is no secret; a URL's credentials are
        secret_next = "=" not in word and (ours or bool(_SECRET_OPTION.match(word)))
        if ours and "=" in word:
            out.append(f"{name}={redact_url(word.split('=', 1)[1])}")
            continue
        out.append(_SECRET_SET.sub(_redact_set, redact_text(word)))
    return out


def _redact_set(match: re.Match[str]) -> str:
    name, value = match.group(1), match.group(2)
    return f"{name}={MASK}" if _SECRET_NAME.search(name.lstrip("-")) and value != MASK else match.group(0)
