"""The manifest's field checker and its provenance: :class:`Checker` reads one JSON object field by field
and names the field in every fault; :func:`parse_fact` / :func:`parse_source` read where a fact comes from.

Shared by the manifest (:mod:`zluda_runner.release.validation`), its native ROCm section
(:mod:`zluda_runner.release.native`) and the lock file (:mod:`zluda_runner.release.lockfile`).
"""

from __future__ import annotations

import re
from typing import Any, NoReturn
from urllib.parse import urlsplit

from zluda_runner.core.envnames import MANIFEST_ENV
from zluda_runner.core.errors import ManifestError
from zluda_runner.release.model import FACT_KINDS, INFERRED, PIN, UNVERIFIED, Fact, Source

VERSION_RE = re.compile(r"^\d+(\.\d+)*$")
DATE_RE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")  # YYYY, YYYY-MM or YYYY-MM-DD
_GFX_RE = re.compile(r"^gfx[0-9a-f]{3,4}$")
# owner/repo[:path]@<40-hex commit> or @unverified (the commit could not be pinned)
_REPO_REF_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(:[^@\s]+)?@([0-9a-f]{40}|unverified)$")
# a public file found in a code index whose repository could not be resolved
_INDEX_REF_RE = re.compile(r"^code-index:\d+$")
MAX_TEXT = 2000


class Checker:
    """Reads one JSON object, remembering where it is for error messages."""

    def __init__(self, data: Any, where: str, source: str) -> None:
        self.where = where
        self.source = source
        if not isinstance(data, dict):
            self.fail(None, f"must be a JSON object, got {kind_of(data)}")
        self.data: dict[str, Any] = data
        self.seen: set[str] = set()

    def fail(self, name: str | None, problem: str) -> NoReturn:
        place = f"{self.where}: field '{name}'" if name else self.where
        raise ManifestError(
            f"invalid manifest {self.source}: {place} {problem}",
            hint=f"fix that field in {self.source}, or drop {{opt:manifest}} / {MANIFEST_ENV} to use the "
            "packaged manifest (schema: manifests/README.md)",
            details={"where": self.where, "field": name},
        )

    def get(self, name: str, *, required: bool = True, default: Any = None) -> Any:
        self.seen.add(name)
        if name not in self.data:
            if required:
                self.fail(name, "is missing")
            return default
        return self.data[name]

    def string(self, name: str, *, required: bool = True, pattern: re.Pattern[str] | None = None,
               choices: tuple[str, ...] | None = None, nullable: bool = False, default: str | None = None
               ) -> Any:
        if not required and name not in self.data:
            self.seen.add(name)
            return default
        value = self.get(name, required=required, default=default)
        if value is None and nullable:
            return value
        if not isinstance(value, str) or not value.strip():
            self.fail(name, f"must be a non-empty string, got {kind_of(value)}")
        if len(value) > MAX_TEXT:
            self.fail(name, f"is longer than {MAX_TEXT} characters")
        if choices is not None and value not in choices:
            self.fail(name, f"must be one of {', '.join(choices)} (got {value!r})")
        if pattern is not None and not pattern.match(value):
            self.fail(name, f"is malformed: {value!r}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.get(name, required=False, default=default)
        if not isinstance(value, bool):
            self.fail(name, f"must be true or false, got {kind_of(value)}")
        return value

    def strings(self, name: str, *, required: bool = False, nonempty: bool = False) -> list[str]:
        value = self.get(name, required=required, default=[])
        if not isinstance(value, list) or not all(
            isinstance(v, str) and v and len(v) <= MAX_TEXT for v in value
        ):
            self.fail(name, f"must be a list of non-empty strings (each at most {MAX_TEXT} characters)")
        if nonempty and not value:
            self.fail(name, "must not be empty")
        return list(value)

    def gfx_names(self, name: str = "gfx") -> list[str]:
        """A non-empty list of GPU targets, each as the manifest writes them (``gfx1201``)."""
        gfx = self.strings(name, required=True, nonempty=True)
        for g in gfx:
            if not _GFX_RE.match(g):
                self.fail(name, f"entries must look like gfx1201, got {g!r}")
        return gfx

    def objects(self, name: str, *, nonempty: bool) -> list[Any]:
        value = self.get(name, required=nonempty, default=[])
        if not isinstance(value, list):
            self.fail(name, f"must be a list, got {kind_of(value)}")
        if nonempty and not value:
            self.fail(name, "must not be empty")
        return value

    def done(self) -> None:
        extra = sorted(set(self.data) - self.seen)
        if extra:
            self.fail(extra[0], "is not part of the schema (a typo?)")


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )



def check_version_text(c: Checker, name: str, value: str | None) -> None:
    if value is not None and not VERSION_RE.match(value):
        c.fail(name, f"must be a version like 6 or 6.2, got {value!r}")



def parse_source(data: Any, where: str, source: str) -> Source:
    c = Checker(data, where, source)
    kind = c.string("kind", choices=FACT_KINDS)
    if kind == UNVERIFIED:
        c.fail("kind", "'unverified' is a fact without sources; give no source instead")
    ref = c.string("ref")
    if ref.startswith("https://"):
        if not urlsplit(ref).netloc:
            c.fail("ref", f"is not a usable URL: {ref!r}")
    elif not (_REPO_REF_RE.match(ref) or _INDEX_REF_RE.match(ref)):
        c.fail("ref", "must be an https:// URL, owner/repo:path@<40-hex commit> (or @unverified), "
               f"or code-index:<id>, got {ref!r}")
    result = Source(kind=kind, ref=ref, says=c.string("says", required=False, default="") or "")
    c.done()
    return result


def parse_fact(data: Any, where: str, source: str) -> Fact:
    c = Checker(data, where, source)
    kind = c.string("kind", choices=FACT_KINDS)
    sources = [
        parse_source(item, f"{where} source #{i}", source)
        for i, item in enumerate(c.objects("sources", nonempty=False))
    ]
    independent = c.get("independent", required=False)
    note = c.string("note", required=False, default="") or ""
    if kind == UNVERIFIED:
        if not note:
            c.fail("note", "is required for an unverified fact: say what is not known and why")
    elif not sources:
        c.fail("sources", f"must name at least one source for a {kind!r} fact")
    elif kind != INFERRED and kind not in {s.kind for s in sources}:
        c.fail("kind", f"is {kind!r}, but no source is of that kind")
    if independent is not None:
        if not isinstance(independent, int) or isinstance(independent, bool) or independent < 1:
            c.fail("independent", f"must be a positive count, got {independent!r}")
        pins = sum(1 for s in sources if s.kind == PIN)
        if kind != PIN or independent > pins:
            c.fail("independent", f"counts independent third-party pins; this fact has {pins}")
    elif kind == PIN:
        c.fail("independent", "is required for a third-party pin: how many unrelated projects pin it")
    c.done()
    return Fact(kind=kind, sources=sources, independent=independent, note=note)
