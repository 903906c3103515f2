"""Bounded manifest reads (issue 11 item 17) and `zluda-run manifest update` against a local server."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.httpserve import serving
from tests.release.test_cli import commands
from zluda_runner.cli import main_group
from zluda_runner.core.errors import ManifestError
from zluda_runner.core.fsutil import file_kind
from zluda_runner.core.wording import render
from zluda_runner.release.compat import render_markdown
from zluda_runner.release.manifest import (
    MAX_JSON_DEPTH,
    MAX_MANIFEST_BYTES,
    cached_manifest_path,
    default_manifest_path,
    load_current_manifest,
    load_manifest,
)
from zluda_runner.release.update import origin_path, staleness_warning, update_manifest

PACKAGED = default_manifest_path().read_bytes()


def _doc(version: int) -> bytes:
    doc = json.loads(PACKAGED)
    doc["manifest_version"] = version
    return json.dumps(doc).encode()


# --------------------------------------------------------------------------- bounded reads


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_quickly() -> None:
    kind = re.escape(file_kind(os.stat("/dev/zero").st_mode))  # what it is: a character device
    with pytest.raises(ManifestError, match=rf"/dev/zero .*{kind}"):  # the file, what it is
        load_manifest(Path("/dev/zero"))
    res = CliRunner().invoke(main_group, ["--json", "--manifest", "/dev/zero", "releases"])
    error = json.loads(res.stdout)
    assert (res.exit_code, error["kind"]) == (1, "manifest") and "/dev/zero" in error["error"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "m.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ManifestError, match=re.escape(file_kind(stat.S_IFIFO))):  # would block if opened
        load_manifest(fifo)


def test_deep_nesting_and_oversize_and_folder(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ManifestError, match=rf"{re.escape(str(deep))}\b.* {MAX_JSON_DEPTH}\b"):  # the bound
        load_manifest(deep)
    # brackets inside strings do not count
    ok = tmp_path / "strings.json"
    ok.write_text(json.dumps({"x": "[[[[" * 100 + '\\"{'}))
    with pytest.raises(ManifestError, match="schema_version"):
        load_manifest(ok)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_MANIFEST_BYTES + 1))
    with pytest.raises(ManifestError, match=rf"{MAX_MANIFEST_BYTES + 1}\b.* {MAX_MANIFEST_BYTES}\b"):
        load_manifest(big)  # its size, the bound
    with pytest.raises(ManifestError, match="a folder"):
        load_manifest(tmp_path)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ManifestError, match=rf"{re.escape(str(binary))}\b.*UTF-8.*\bbyte 0\b"):
        load_manifest(binary)  # the first byte that is not


# --------------------------------------------------------------------------- update


class _Server:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.base = ""


@pytest.fixture
def manifest_server() -> Iterator[_Server]:
    state = _Server()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = state.files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    with serving(Handler) as state.base:
        yield state


def _cached(cache: Path) -> bytes | None:
    path = cached_manifest_path(cache)
    return path.read_bytes() if path.exists() else None


def test_newer_manifest_is_accepted_and_used(manifest_server: _Server, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    manifest_server.files["/m.json"] = _doc(99)
    args = ["--cache-dir", str(cache), "manifest", "update", manifest_server.base + "/m.json"]
    res = CliRunner().invoke(main_group, args)
    assert res.exit_code == 0, res.output
    assert "99" in res.output and str(json.loads(PACKAGED)["manifest_version"]) in res.output  # new, old
    assert _cached(cache) == _doc(99)
    current = load_current_manifest(None, cache)
    assert current.manifest_version == 99 and current.source == str(cached_manifest_path(cache))
    assert load_current_manifest(default_manifest_path(), cache).manifest_version != 99  # --manifest wins
    listing = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(cache), "releases"])
    used = json.loads(listing.output)["manifest"]  # the manifest in use: its version, file and origin
    assert (used["manifest_version"], used["source"]) == (99, str(cached_manifest_path(cache)))
    assert used["origin"]["url"] == f"{manifest_server.base}/m.json"
    text = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "releases"], env={"COLUMNS": None})
    assert f"{manifest_server.base}/m.json" in text.output  # and the text view names where it came from
    # the same version again: nothing to do
    again = update_manifest(cache, manifest_server.base + "/m.json")
    assert not again.replaced


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{not json", "JSON.*line 1, column 2"),  # what it is not, where
        (json.dumps({"schema_version": 2}).encode(), "'manifest_version'"),  # the field
        (b"[" * 50 + b"]" * 50, f" {MAX_JSON_DEPTH} "),  # the bound
        (None, "2048 .*1024"),  # oversized: its size, the bound
        ("older", r"manifest_version 10\b.*\b50\b"),  # its version, the one in use
    ],
    ids=["malformed", "schema", "deep", "oversized", "older"],
)
def test_bad_manifest_is_refused_and_nothing_replaced(
    manifest_server: _Server, tmp_path: Path, body: bytes | str | None, problem: str
) -> None:
    cache = tmp_path / "cache"
    manifest_server.files["/good.json"] = _doc(50)
    update_manifest(cache, manifest_server.base + "/good.json")
    before = _cached(cache)
    if body is None:
        body = b" " * 2048
        limit = 1024
    else:
        limit = MAX_MANIFEST_BYTES
    if body == "older":
        body = _doc(10)
    assert isinstance(body, bytes)
    manifest_server.files["/bad.json"] = body
    with pytest.raises(ManifestError, match=problem):
        update_manifest(cache, manifest_server.base + "/bad.json", limit=limit)
    assert _cached(cache) == before
    args = ["--cache-dir", str(cache), "manifest", "update", manifest_server.base + "/bad.json"]
    res = CliRunner().invoke(main_group, ["--json", *args])
    if body != b" " * 2048:  # the command's own bound is not 1024
        assert (res.exit_code, json.loads(res.stdout)["kind"]) == (1, "manifest"), res.output
    assert _cached(cache) == before


def test_plain_http_elsewhere_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ManifestError, match=r"http://example\.invalid"):  # the URL refused
        update_manifest(tmp_path, "http://example.invalid/m.json")
    monkeypatch.delenv("ZLUDA_RUNNER_MANIFEST_URL", raising=False)
    with pytest.raises(ManifestError, match="update_url"):  # the field that would have named one
        update_manifest(tmp_path, None)
    assert _cached(tmp_path) is None


def test_broken_cached_copy_is_ignored(tmp_path: Path) -> None:
    path = cached_manifest_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{broken")
    assert load_current_manifest(None, tmp_path).source == str(default_manifest_path())


def test_staleness_warning_after_90_days() -> None:
    import datetime as dt

    m = load_manifest()
    assert m.updated
    year, month, day = (int(x) for x in m.updated.split("-"))
    assert staleness_warning(m, dt.date(year, month, day) + dt.timedelta(days=30)) is None
    warning = staleness_warning(m, dt.date(year, month, day) + dt.timedelta(days=120))
    assert warning and "120" in warning and m.updated in warning
    assert commands(render(warning, "command line")) == [  # what to run
        "zluda-run manifest update" + ("" if m.update_url else " URL")]


# --------------------------------------------------------------------------- compatibility page


def test_compatibility_page_is_current() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
    assert page.read_text(encoding="utf-8") == render_markdown(load_manifest()), (
        "docs/compatibility.md is stale: run `python -m zluda_runner.release.compat > docs/compatibility.md`"
    )
    assert "lshqqytiger/ZLUDA/issues/137" in page.read_text(encoding="utf-8")
    assert sys.version_info >= (3, 10)


def test_an_unwritable_cache_is_an_error_not_a_traceback(manifest_server: _Server, tmp_path: Path) -> None:
    """The cache's manifest folder cannot be written (here it is a file, which fails for root too, like
    a read-only cache for a user): before, the OSError was a traceback; now a CacheError, in JSON with
    --json, nothing replaced. The origin record failing after the manifest was written says so."""
    import json

    cache = tmp_path / "cache"
    manifest_server.files["/m.json"] = _doc(99)
    folder = cached_manifest_path(cache).parent
    folder.parent.mkdir(parents=True)
    folder.write_text("not a folder")
    args = ["--cache-dir", str(cache), "--json", "manifest", "update", manifest_server.base + "/m.json"]
    res = CliRunner().invoke(main_group, args, catch_exceptions=False)
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout)
    assert out["kind"] == "cache" and str(cached_manifest_path(cache)) in out["error"] and out["hint"]
    assert not cached_manifest_path(cache).exists()  # nothing was replaced
    folder.unlink()
    origin_path(cache).mkdir(parents=True)  # the origin record cannot replace a folder
    res = CliRunner().invoke(main_group, args, catch_exceptions=False)
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout)
    assert out["kind"] == "cache" and str(origin_path(cache)) in out["error"] and "99" in out["error"]
    assert _cached(cache) == _doc(99)
