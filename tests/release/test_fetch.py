"""Verified fetch into the cache against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.release.test_cli import commands
from zluda_runner.core.errors import ArchiveError, CacheError, ChecksumError, FetchError, UnsafeArchiveError
from zluda_runner.release.cache import CacheLayout, cached_release_dir, ensure_release
from zluda_runner.release.fetch import RetryPolicy, download, mirror_url

WORKER = Path(__file__).with_name("fetch_worker.py")
UPSTREAM = "https://github.com/vosen/ZLUDA/releases/download/v5/zluda-linux-abc1234.tar.gz"


@pytest.fixture
def payload(kit) -> bytes:
    # random bytes make the archive big enough to cut in the middle
    return kit.tar_gz([*kit.ZLUDA_LIKE, ("file", "zluda/blob.bin", os.urandom(300_000))])


def _asset(kit, url: str, data: bytes | None, sha: str | None = "auto",
           name: str = "zluda-linux-abc1234.tar.gz"):
    digest = kit.sha256(data) if sha == "auto" and data is not None else (None if sha == "auto" else sha)
    return kit.Asset(name=name, url=url, sha256=digest, format="tar.gz")


def test_happy_path_then_served_from_cache(tmp_path, server, kit, payload, cache_listing, capsys):
    url = server.add("/v5/zluda-linux-abc1234.tar.gz", payload)
    release, asset = kit.Release("v5"), _asset(kit, url, payload)
    folder = ensure_release(release, asset, tmp_path / "cache", progress=None)
    assert (folder / "zluda/libcuda.so.1").is_file() and (folder / "zluda/libcuda.so").is_symlink()
    assert folder == CacheLayout(tmp_path / "cache").release_dir("v5", asset.name)
    marker = json.loads(folder.with_name(folder.name + ".complete.json").read_text())
    assert marker["sha256"] == asset.sha256 and marker["url"] == url and marker["hash_source"] == "manifest"
    assert cached_release_dir(tmp_path / "cache", release, asset) == folder
    again = ensure_release(release, asset, tmp_path / "cache")
    assert again == folder
    assert len(server.served("/v5/zluda-linux-abc1234.tar.gz")) == 1
    assert "downloads/v5/zluda-linux-abc1234.tar.gz" in cache_listing(tmp_path / "cache")
    assert capsys.readouterr().err == ""  # not a terminal: no progress bar


def test_hash_mismatch_caches_nothing(tmp_path, server, kit, payload, cache_listing):
    url = server.add("/x.tar.gz", payload)
    asset = _asset(kit, url, payload, sha="0" * 64)
    with pytest.raises(ChecksumError) as info:
        ensure_release(kit.Release("v5"), asset, tmp_path / "cache")
    msg = info.value.message
    assert url in msg and "0" * 64 in msg and kit.sha256(payload) in msg
    assert "--archive" in (info.value.hint_for("command line") or "")
    assert cache_listing(tmp_path / "cache") == []


def test_dropped_connection_resumes_with_range(tmp_path, server, kit, payload, fast_retry):
    url = server.add("/x.tar.gz", payload)
    server.drop_after, server.drops_left = 100_000, 1
    asset = _asset(kit, url, payload)
    folder = ensure_release(kit.Release("v5"), asset, tmp_path / "cache", retry=fast_retry)
    assert (folder / "zluda/blob.bin").stat().st_size == 300_000
    first, second = server.served("/x.tar.gz")
    assert (first.status, first.range_header, first.bytes_sent) == (200, None, 100_000)
    assert (second.status, second.range_header) == (206, "bytes=100000-")
    assert second.bytes_sent == len(payload) - 100_000  # only the remainder was sent again
    assert len(fast_retry.sleep.calls) == 1


def test_server_without_range_restarts_from_zero(tmp_path, server, kit, payload, fast_retry):
    url = server.add("/x.tar.gz", payload)
    server.range_support = False
    server.drop_after, server.drops_left = 50_000, 1
    dest = tmp_path / "x.tar.gz"
    result = download(url, dest, expected_sha256=kit.sha256(payload), retry=fast_retry, progress=False)
    assert dest.read_bytes() == payload
    assert (result.requests, result.restarts, result.size) == (2, 1, len(payload))
    _first, second = server.served("/x.tar.gz")
    assert (second.range_header, second.status, second.bytes_sent) == ("bytes=50000-", 200, len(payload))


def test_transient_503_is_retried_with_backoff(tmp_path, server, kit, payload):
    url = server.add("/x.tar.gz", payload)
    server.fail_status, server.fails_left = 503, 2
    delays: list[float] = []
    policy = RetryPolicy(attempts=4, base_delay=0.001, max_delay=1.0, sleep=delays.append)
    download(url, tmp_path / "x", expected_sha256=kit.sha256(payload), retry=policy, progress=False)
    assert delays == [0.001, 0.002]  # exponential
    assert [r.status for r in server.served("/x.tar.gz")] == [503, 503, 200]


def test_two_processes_download_once(tmp_path, server, kit, payload):
    url = server.add("/x.tar.gz", payload)
    server.hold = threading.Event()  # the first body waits until the second process is blocked
    cache = tmp_path / "cache"
    argv = [str(cache), "v5", "zluda-linux-abc1234.tar.gz", url, kit.sha256(payload)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def start(*extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(WORKER), *argv, *extra], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)

    first = start()
    assert server.arrived.wait(timeout=60), "the first worker never reached the server"
    second = start("progress")  # the first now holds the release lock, mid-download
    assert second.stderr is not None
    # the line, whole, that says it waits: for which release, on which lock
    lock = CacheLayout(cache).lock_path("v5")
    waiting = f"waiting for another zluda-run that is fetching v5 (lock {lock})\n"
    seen = []
    for line in second.stderr:  # returns at EOF if the second never waits (then the test fails)
        seen.append(line)
        if line == waiting:
            break
    assert seen and seen[-1] == waiting, seen
    server.hold.set()
    outputs = [proc.communicate(timeout=120) for proc in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outputs
    folders = {out.strip() for out, _err in outputs}
    assert len(folders) == 1 and Path(folders.pop()).is_dir()
    served = server.served("/x.tar.gz")
    assert len(served) == 1 and served[0].bytes_sent == len(payload)  # one full download for two


def test_ctrl_c_mid_download_keeps_the_partial_file_and_the_next_fetch_resumes(tmp_path, server, kit, payload,
                                                                              cache_listing):
    """The README says downloads resume: Ctrl-C keeps what arrived (beside the archive's place, never
    as the archive) and the next fetch asks only for the rest with Range."""
    url = server.add("/x.tar.gz", payload)
    server.drop_after, server.drops_left = 100_000, 1

    def interrupt(_seconds: float) -> None:  # the user presses Ctrl-C during the retry back-off
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ensure_release(kit.Release("v5"), _asset(kit, url, payload), tmp_path / "cache",
                       retry=RetryPolicy(sleep=interrupt))
    assert server.served("/x.tar.gz")[0].bytes_sent == 100_000
    partial = CacheLayout(tmp_path / "cache").partial_path("v5", "zluda-linux-abc1234.tar.gz")
    assert partial.stat().st_size == 100_000
    assert cache_listing(tmp_path / "cache") == [
        "downloads/v5", "downloads/v5/zluda-linux-abc1234.tar.gz.part",
        "downloads/v5/zluda-linux-abc1234.tar.gz.part.json",
    ]  # no archive, no release folder, no marker
    folder = ensure_release(kit.Release("v5"), _asset(kit, url, payload), tmp_path / "cache")
    assert (folder / "zluda/blob.bin").stat().st_size == 300_000
    resumed = server.served("/x.tar.gz")[-1]
    assert (resumed.range_header, resumed.status, resumed.bytes_sent) == ("bytes=100000-", 206,
                                                                          len(payload) - 100_000)
    assert not partial.exists() and not partial.with_name(partial.name + ".json").exists()
    # download() on its own (no resume asked) still removes its partial file
    server.drops_left = 1
    alone = tmp_path / "alone.tar.gz"
    with pytest.raises(KeyboardInterrupt):
        download(url, alone, expected_sha256=kit.sha256(payload), retry=RetryPolicy(sleep=interrupt),
                 progress=False)
    assert not alone.exists()


def test_partial_of_another_file_is_not_resumed(tmp_path, server, kit, payload):
    """A partial download kept for one hash is dropped when the manifest now expects another."""
    layout = CacheLayout(tmp_path / "cache")
    partial = layout.partial_path("v5", "zluda-linux-abc1234.tar.gz")
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"junk" * 1000)
    partial.with_name(partial.name + ".json").write_text('{"url": "elsewhere"}')
    url = server.add("/x.tar.gz", payload)
    folder = ensure_release(kit.Release("v5"), _asset(kit, url, payload), tmp_path / "cache")
    assert folder.is_dir()
    assert [r.range_header for r in server.served("/x.tar.gz")] == [None]


def test_ctrl_c_mid_unpack_leaves_no_half_unpacked_folder(tmp_path, server, kit, payload, cache_listing,
                                                          monkeypatch):
    import zluda_runner.release.install as install_mod

    real = install_mod.safe_extract

    def extract_then_interrupt(archive, fmt, dest):
        real(archive, fmt, dest)  # the whole tree is on disk in the work folder ...
        raise KeyboardInterrupt  # ... when the user presses Ctrl-C

    monkeypatch.setattr(install_mod, "safe_extract", extract_then_interrupt)
    url = server.add("/x.tar.gz", payload)
    with pytest.raises(KeyboardInterrupt):
        ensure_release(kit.Release("v5"), _asset(kit, url, payload), tmp_path / "cache")
    assert cache_listing(tmp_path / "cache") == []


def test_404_is_a_clear_error(tmp_path, server, kit, cache_listing, fast_retry):
    url = server.url("/gone.tar.gz")
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, None, sha="a" * 64), tmp_path / "cache",
                       retry=fast_retry)
    assert "404" in info.value.message and url in info.value.message and "a" * 64 in info.value.message
    assert "--archive" in (info.value.hint_for("command line") or "")
    assert len(server.served("/gone.tar.gz")) == 1  # a 404 is not retried
    assert cache_listing(tmp_path / "cache") == []


def test_connection_refused_after_bounded_retries(tmp_path, kit, cache_listing, fast_retry):
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x.tar.gz"
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, None, sha="b" * 64), tmp_path / "cache",
                       retry=fast_retry)
    assert "refused" in info.value.message and url in info.value.message
    cli = info.value.hint_for("command line") or ""
    assert "proxy" in cli and "--archive" in cli
    assert fast_retry.sleep.calls == [0.01, 0.02]  # 3 attempts, 2 backoff delays
    assert cache_listing(tmp_path / "cache") == []


def test_dns_failure(tmp_path, kit, cache_listing):
    url = "http://zluda-runner-test.invalid/x.tar.gz"  # .invalid never resolves (RFC 6761)
    policy = RetryPolicy(attempts=1, sleep=lambda s: None)
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, None, sha="c" * 64), tmp_path / "cache",
                       retry=policy)
    assert "resolve" in info.value.message and url in info.value.message
    assert cache_listing(tmp_path / "cache") == []


def test_self_signed_tls_is_refused(tmp_path, tls_server, kit, payload, cache_listing, fast_retry):
    url = tls_server.add("/x.tar.gz", payload)
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, payload), tmp_path / "cache", retry=fast_retry)
    assert "certificate" in info.value.message and url in info.value.message
    assert "REQUESTS_CA_BUNDLE" in info.value.hint
    assert cache_listing(tmp_path / "cache") == []


def test_unknown_hash_refused_then_trusted_on_first_use_then_enforced(tmp_path, tls_server, kit, payload,
                                                                     cache_listing, monkeypatch):
    server = tls_server
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "cert.pem"))  # the test's own CA: https works
    cache = tmp_path / "cache"
    url = server.add("/x.tar.gz", payload)
    asset, release = _asset(kit, url, None, sha=None), kit.Release("fork-3.9.5")
    with pytest.raises(FetchError) as info:
        ensure_release(release, asset, cache)
    assert "--trust-on-first-use" in (info.value.hint_for("command line") or "") and url in info.value.message
    assert server.served("/x.tar.gz") == []  # refused before downloading
    folder = ensure_release(release, asset, cache, trust_on_first_use=True)
    assert folder.is_dir()
    trust = json.loads((cache / "trust.json").read_text())
    assert trust["assets"][url]["sha256"] == kit.sha256(payload)
    # the cache is cleared and upstream silently changes the file: the recorded hash must hold
    from zluda_runner.release.cache import clean_cache

    clean_cache(cache)
    server.files["/x.tar.gz"] = kit.tar_gz([("file", "zluda/libcuda.so.1", b"evil")])
    with pytest.raises(ChecksumError) as info:
        ensure_release(release, asset, cache, trust_on_first_use=True)
    assert info.value.kind == "checksum" and kit.sha256(payload) in info.value.message  # the recorded hash
    assert "trust.json" in info.value.hint
    assert cache_listing(cache) == ["trust.json"]


def test_trust_on_first_use_over_plain_http_is_refused(tmp_path, server, kit, payload, cache_listing,
                                                       monkeypatch):
    """The hash seen over an unencrypted connection must not become the trusted one (issue 11, 9)."""
    server.add("/base/vosen/ZLUDA/releases/download/v5/zluda-linux-abc1234.tar.gz", payload)
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", server.url("/base"))  # a plain-http mirror
    asset = _asset(kit, UPSTREAM, None, sha=None)
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("fork-3.9.5"), asset, tmp_path / "cache", trust_on_first_use=True)
    assert server.url("/base").startswith("http://") and server.url("/base") in info.value.message
    cli = info.value.hint_for("command line") or ""
    assert "https" in cli and "--archive" in cli
    assert server.requests == []  # refused before any byte was fetched
    assert cache_listing(tmp_path / "cache") == []
    # with a known hash, a plain-http mirror is fine: the bytes are checked against it
    assert ensure_release(kit.Release("v5"), _asset(kit, UPSTREAM, payload), tmp_path / "cache").is_dir()


def test_truncated_archive_with_matching_hash_is_refused(tmp_path, server, kit, payload, cache_listing):
    cut = payload[: len(payload) // 2]
    url = server.add("/cut.tar.gz", cut)
    with pytest.raises(ArchiveError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, cut), tmp_path / "cache")
    assert info.value.kind == "archive" and url in info.value.message  # not a checksum or unsafe-archive
    assert "--archive" in (info.value.hint_for("command line") or "")
    assert cache_listing(tmp_path / "cache") == []


# The work tree is <tmp>/cache/tmp/<release>@<random>/tree: four ".." reach <tmp> itself.
ESCAPE = "../../../../evil.txt"


@pytest.mark.parametrize(
    ("kind", "fmt", "entries"),
    [
        ("zip-slip", "zip", [("file", "zluda/ok", b"1"), ("file", ESCAPE, b"pwned")]),
        ("tar ..", "tar.gz", [("file", "zluda/ok", b"1"), ("file", "zluda/" + ESCAPE, b"pwned")]),
        ("absolute zip", "zip", [("file", "zluda/ok", b"1"), ("file", "{outside}/evil.txt", b"pwned")]),
        ("absolute tar", "tar.gz", [("file", "zluda/ok", b"1"), ("file", "{outside}/evil.txt", b"pwned")]),
        ("escaping symlink", "tar.gz",
         [("file", "zluda/ok", b"1"), ("symlink", "zluda/esc", "../../../../.."),
          ("file", "zluda/esc/evil.txt", b"pwned")]),
        ("escaping zip symlink", "zip",
         [("file", "zluda/ok", b"1"), ("symlink", "zluda/esc", "../" + ESCAPE)]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_unsafe_archive_from_server_writes_nothing_anywhere(tmp_path, server, kit, cache_listing, kind, fmt,
                                                            entries):
    outside = tmp_path / "outside"
    entries = [(e[0], e[1].replace("{outside}", str(outside)), *e[2:]) for e in entries]
    evil = kit.tar_gz(entries) if fmt == "tar.gz" else kit.zip_bytes(entries)
    url = server.add("/evil." + fmt, evil)
    asset = _asset(kit, url, evil, name="evil." + fmt)
    asset.format = fmt
    with pytest.raises(UnsafeArchiveError) as info:
        ensure_release(kit.Release("v5"), asset, tmp_path / "cache")
    assert url in info.value.message and info.value.hint
    assert cache_listing(tmp_path / "cache") == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]  # no evil.txt, no outside/
    assert not (tmp_path / "evil.txt").exists() and not outside.exists()


def test_corrupt_archive_error_names_the_url_and_leaves_nothing(tmp_path, server, kit, cache_listing):
    import zipfile

    files = [("file", "zluda/a.dll", b"MZ" * 5000), ("file", "zluda/b.dll", b"MZ" * 5000)]
    good = bytearray(kit.zip_bytes(files))
    with zipfile.ZipFile(io.BytesIO(bytes(good))) as zf:
        second = zf.infolist()[1]
        offset = second.header_offset + 30 + len(second.filename)
    good[offset + 2] ^= 0xFF  # a.dll unpacks, then b.dll fails its CRC: a half-written tree
    data = bytes(good)
    url = server.add("/c.zip", data)
    asset = _asset(kit, url, data, name="c.zip")
    asset.format = "zip"
    with pytest.raises(ArchiveError) as info:
        ensure_release(kit.Release("v5"), asset, tmp_path / "cache")
    msg = info.value.message
    assert info.value.kind == "archive" and url in msg and kit.sha256(data) in msg
    cli = info.value.hint_for("command line") or ""
    assert "--archive" in cli and "manifest" in cli
    assert cache_listing(tmp_path / "cache") == []


def test_file_mirror_replaces_the_host(tmp_path, kit, payload, monkeypatch, cache_listing):
    mirror = tmp_path / "mirror"
    target = mirror / "vosen/ZLUDA/releases/download/v5/zluda-linux-abc1234.tar.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(payload)
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", mirror.as_uri() + "/")
    assert mirror_url(UPSTREAM) == target.as_uri()
    folder = ensure_release(kit.Release("v5"), _asset(kit, UPSTREAM, payload), tmp_path / "cache")
    assert (folder / "zluda/libcublas.so.13").is_file()
    marker = json.loads(folder.with_name(folder.name + ".complete.json").read_text())
    assert marker["fetched_from"] == target.as_uri() and marker["url"] == UPSTREAM
    # same verification through the mirror
    with pytest.raises(ChecksumError):
        ensure_release(kit.Release("v6"), _asset(kit, UPSTREAM, payload, sha="d" * 64), tmp_path / "cache")
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", (tmp_path / "empty").as_uri())
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v7"), _asset(kit, UPSTREAM, payload), tmp_path / "cache")
    assert "ZLUDA_RUNNER_MIRROR" in info.value.hint
    assert all(not f.startswith(("releases/v6", "releases/v7")) for f in cache_listing(tmp_path / "cache"))


def test_http_mirror(tmp_path, server, kit, payload, monkeypatch):
    server.add("/base/vosen/ZLUDA/releases/download/v5/zluda-linux-abc1234.tar.gz", payload)
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", server.url("/base"))
    folder = ensure_release(kit.Release("v5"), _asset(kit, UPSTREAM, payload), tmp_path / "cache")
    assert folder.is_dir()
    assert len(server.served("/base/vosen/ZLUDA/releases/download/v5/zluda-linux-abc1234.tar.gz")) == 1


def test_bad_mirror_scheme(monkeypatch):
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", "ftp://old.example")
    with pytest.raises(FetchError, match=r"ftp://old\.example"):
        mirror_url(UPSTREAM)


def test_hand_downloaded_archive(tmp_path, server, kit, payload, cache_listing):
    url = server.url("/never-asked.tar.gz")
    hand = tmp_path / "Downloads" / "zluda-linux-abc1234.tar.gz"
    hand.parent.mkdir()
    hand.write_bytes(payload)
    wrong = tmp_path / "Downloads" / "other.tar.gz"
    wrong.write_bytes(payload + b"\0")
    with pytest.raises(ChecksumError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, payload), tmp_path / "cache", archive=wrong)
    assert str(wrong) in info.value.message
    assert cache_listing(tmp_path / "cache") == []
    folder = ensure_release(kit.Release("v5"), _asset(kit, url, payload), tmp_path / "cache", archive=hand)
    assert (folder / "zluda/libcuda.so.1").is_file()
    assert server.served("/never-asked.tar.gz") == []
    assert hand.exists()  # the user's file is copied, not moved


def test_redirect_loop_is_a_clear_error(tmp_path, server, kit, fast_retry, cache_listing):
    server.redirects["/loop.tar.gz"] = "/loop.tar.gz"
    url = server.url("/loop.tar.gz")
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, None, sha="e" * 64), tmp_path / "cache",
                       retry=fast_retry)
    assert url in info.value.message and "redirect" in info.value.message.lower()
    assert "--archive" in (info.value.hint_for("command line") or "")
    assert cache_listing(tmp_path / "cache") == []


def test_unwritable_destination_is_a_cache_error(tmp_path, server, kit, payload):
    url = server.add("/x.tar.gz", payload)
    blocked = tmp_path / "a-folder"  # a folder where the file should go: opening it for writing fails
    blocked.mkdir()
    with pytest.raises(CacheError) as info:
        download(url, blocked, expected_sha256=kit.sha256(payload), progress=False)
    assert url in info.value.message and str(blocked) in info.value.message
    assert "--cache-dir" in (info.value.hint_for("command line") or "")  # the way on: another cache


def test_progress_shown_when_asked(tmp_path, server, kit, payload, capsys):
    url = server.add("/x.tar.gz", payload)
    download(url, tmp_path / "x", expected_sha256=kit.sha256(payload), progress=True, label="x.tar.gz")
    err = capsys.readouterr().err
    # the bar ends at the whole size, with a rate and the time left
    assert "fetching x.tar.gz" in err and "300.5/300.5 kB" in err and "/s" in err and "0:00:00" in err


# --------------------------------------------------------------------------- bounded downloads

_BOUNDED_DOWNLOAD = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))  # no file over 4 MiB may be written
resource.setrlimit(resource.RLIMIT_CPU, (30, 30))
from zluda_runner.core.errors import ChecksumError
from zluda_runner.release.fetch import Limits, RetryPolicy, download
url, dest, size = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
try:
    download(url, dest, expected_size=int(size) if size != "-" else None, progress=False,
             retry=RetryPolicy(attempts=1), limits=Limits(max_bytes=2 << 20))
except ChecksumError as exc:
    print(json.dumps({"kind": exc.kind, "message": exc.message, "left": dest.exists()}))
else:
    print(json.dumps({"kind": None}))
"""


@pytest.mark.parametrize(
    ("size", "words"),
    [("174", " 174 bytes"), ("-", f" {2 << 20} bytes")],  # the bound: the manifest's size, else the cap
    ids=["manifest-size", "no-size-known"],
)
def test_unsized_stream_stops_at_the_bound(tmp_path, server, size, words):
    """A server streaming 64 MiB with no Content-Length for an asset of 174 bytes (or of unknown
    size: the cap, 2 MiB here) is cut off at the bound; in a child that may not write a file over
    4 MiB (RLIMIT_FSIZE) the download ends with a clear error and leaves nothing."""
    url = server.add("/endless.tar.gz", b"\x1f\x8b" + b"z" * 172)
    server.unsized["/endless.tar.gz"] = 64 << 20
    dest = tmp_path / "endless.tar.gz"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", _BOUNDED_DOWNLOAD, url, str(dest), size],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-1500:]
    stopped = json.loads(done.stdout)
    assert stopped["kind"] == "checksum", done.stdout + done.stderr[-1500:]  # stopped, not downloaded
    assert words in stopped["message"] and url in stopped["message"]  # the bound, the URL
    assert stopped["left"] is False and not dest.exists()  # nothing left, then or after


def test_announced_size_other_than_the_manifest_is_refused_before_the_body(tmp_path, server, kit, payload):
    url = server.add("/x.tar.gz", payload)
    with pytest.raises(ChecksumError) as info:
        download(url, tmp_path / "x", expected_size=len(payload) - 1, progress=False)
    assert f"announces {len(payload)} bytes" in info.value.message
    assert str(len(payload) - 1) in info.value.message
    assert not (tmp_path / "x").exists()


class SteppingClock:
    """A clock that moves ``step`` seconds each time it is read: the pace check sees a trickle of
    one byte per read as one byte every ``step`` seconds, without the test waiting."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_trickling_server_hits_the_pace_floor(tmp_path, server, kit, payload):
    """1 byte every 5 s reset the read time-out each time and kept a fetch alive for 330 s: now each
    minute must bring 4 KiB/s on average. (Each read here is one byte; the clock says 5 s passed.)"""
    from zluda_runner.release.fetch import Limits, TransferError

    url = server.add("/slow.tar.gz", payload)
    server.trickle = 0.002
    clock = SteppingClock(5.0)
    with pytest.raises(TransferError) as info:
        download(url, tmp_path / "slow", expected_sha256=kit.sha256(payload), progress=False,
                 retry=RetryPolicy(attempts=1), limits=Limits(clock=clock))
    assert "bytes/s" in info.value.message and url in info.value.message
    assert "retry" in info.value.hint
    assert clock.now < 200  # it gave up within a few simulated minutes
    assert not (tmp_path / "slow").exists()


# --------------------------------------------------------------------------- tampering after install


def _installed(tmp_path, server, kit, payload):
    url = server.add("/x.tar.gz", payload)
    release, asset = kit.Release("v5"), _asset(kit, url, payload)
    folder = ensure_release(release, asset, tmp_path / "cache")
    return release, asset, folder


def _swap_content(path: Path, data: bytes) -> None:
    """Replace a file's content in place: same inode, and the old mtime put back (the cheap check
    cannot see this; the full check must)."""
    st = path.stat()
    with path.open("r+b") as fh:
        fh.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("grown", "1605 bytes, not 1600"),  # each names the file and what is wrong with it
        ("replaced", "zluda/libcuda.so.1"),
        ("added", "zluda/libcublas.so.14"),
        ("removed", "zluda/libcublas.so.13"),
        ("relinked", "/tmp/elsewhere.so"),
    ],
)
def test_tampered_cache_is_refused_on_use(tmp_path, server, kit, payload, how, words):
    """`plan` said ok and `run` used a replaced libcuda: every use now checks the tree cheaply."""
    release, asset, folder = _installed(tmp_path, server, kit, payload)
    lib = folder / "zluda/libcuda.so.1"
    if how == "grown":
        lib.write_bytes(lib.read_bytes() + b"evil!")
    elif how == "replaced":  # another file (new inode) of the same size
        evil = folder / "evil"
        evil.write_bytes(b"E" * lib.stat().st_size)
        os.replace(evil, lib)
    elif how == "added":
        (folder / "zluda/libcublas.so.14").write_bytes(b"a shim nobody installed")
    elif how == "removed":
        (folder / "zluda/libcublas.so.13").unlink()
    else:
        (folder / "zluda/libcuda.so").unlink()
        (folder / "zluda/libcuda.so").symlink_to("/tmp/elsewhere.so")
    with pytest.raises(CacheError) as info:
        ensure_release(release, asset, tmp_path / "cache")
    assert info.value.kind == "cache" and words in info.value.message
    assert commands(info.value.hint_for("command line") or "") == [  # repair it, or remove it
        f"zluda-run fetch {release.id} --reinstall", f"zluda-run cache clean {release.id}"]


def test_fetch_hashes_everything_and_reinstall_repairs(tmp_path, server, kit, payload):
    from zluda_runner.release.cache import fetch_release, verify_cache

    release, asset, folder = _installed(tmp_path, server, kit, payload)
    lib = folder / "zluda/libcuda.so.1"
    _swap_content(lib, b"X" * 16)  # same size, same inode, same mtime
    assert ensure_release(release, asset, tmp_path / "cache") == folder  # the cheap check cannot tell
    with pytest.raises(CacheError) as info:
        fetch_release(release, asset, tmp_path / "cache")  # `fetch` hashes every file
    assert info.value.kind == "cache" and "zluda/libcuda.so.1" in info.value.message
    [report] = verify_cache(tmp_path / "cache")  # what the doctor calls
    assert not report.ok and "zluda/libcuda.so.1" in report.problems[0]
    outcome = fetch_release(release, asset, tmp_path / "cache", reinstall=True)
    assert outcome.action == "downloaded" and lib.read_bytes() == b"\x7fELF fake driver" * 100
    assert len(server.served("/x.tar.gz")) == 1  # the verified archive in downloads/ was reused
    assert verify_cache(tmp_path / "cache")[0].ok
    assert fetch_release(release, asset, tmp_path / "cache").action == "cached"


def test_marker_without_file_record_is_unpacked_again_from_the_archive(tmp_path, server, kit, payload):
    release, asset, folder = _installed(tmp_path, server, kit, payload)
    marker = folder.with_name(folder.name + ".complete.json")
    data = json.loads(marker.read_text())
    del data["files"]  # as written by an older zluda-runner
    marker.write_text(json.dumps(data))
    (folder / "zluda/libcuda.so.1").write_bytes(b"changed while nothing recorded it")
    assert ensure_release(release, asset, tmp_path / "cache") == folder
    assert (folder / "zluda/libcuda.so.1").read_bytes() == b"\x7fELF fake driver" * 100
    assert len(server.served("/x.tar.gz")) == 1  # from the cached archive, not downloaded again
    assert json.loads(marker.read_text())["files"]


def test_the_doctor_hashes_the_cache_and_names_a_changed_release(tmp_path, server, kit, payload):
    """The doctor checks every cached file fully (run/plan check only size, time and inode)."""
    from zluda_runner.core.settings import Settings
    from zluda_runner.doctor import DoctorOptions, run_doctor

    _release, _asset, folder = _installed(tmp_path, server, kit, payload)
    settings = Settings(cache_dir=tmp_path / "cache")
    root = tmp_path / "root"
    root.mkdir()

    def cached_check():
        report = run_doctor(DoctorOptions(root=root, env={}, platform="linux", machine="x86_64",
                                          settings=settings))
        return next(c for c in report.checks if c.id == "cached_releases")

    assert cached_check().status.value == "ok"
    _swap_content(folder / "zluda/libcuda.so.1", b"X" * 16)  # same size, inode and mtime
    check = cached_check()
    assert check.status.value == "fail" and "zluda/libcuda.so.1" in check.message
    assert "--reinstall" in (check.fix or "")


def test_an_announced_size_over_the_cap_is_refused_before_the_body(tmp_path, server):
    """Size unknown to the manifest: the server's Content-Length (8 MiB) does not lift the cap (2 MiB
    here). Before, the announced size became the bound, so a server announcing terabytes could fill
    the disk; in a child that may not write a file over 4 MiB the download is refused, leaving nothing."""
    url = server.add("/huge.tar.gz", b"\x1f\x8b" + b"z" * ((8 << 20) - 2))
    dest = tmp_path / "huge.tar.gz"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", _BOUNDED_DOWNLOAD, url, str(dest), "-"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-1500:]
    stopped = json.loads(done.stdout)
    assert stopped["kind"] == "checksum", done.stdout + done.stderr[-1500:]  # refused, not downloaded
    message = stopped["message"]
    assert f" {8 << 20} bytes" in message and f" {2 << 20} bytes" in message  # announced, the cap
    assert stopped["left"] is False and not dest.exists()
    assert all(r.range_header is None for r in server.served("/huge.tar.gz"))  # one try, no resume
