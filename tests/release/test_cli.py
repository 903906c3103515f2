"""`zluda-run fetch` and `zluda-run cache ...` end to end, with a file:// mirror and a test manifest."""

from __future__ import annotations

import copy
import json
import re
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.release.manifest import default_manifest_path

BASE = "https://github.com/vosen/ZLUDA/releases/download"


def commands(hint: str) -> list[str]:
    """The commands a hint names, as the command line shows them (each in backquotes)."""
    return re.findall(r"`([^`]+)`", hint)


@pytest.fixture
def setup(tmp_path, kit, monkeypatch):
    """A manifest with a known-hash and an unknown-hash release, served by a file:// mirror."""
    payload = kit.tar_gz(kit.ZLUDA_LIKE)
    mirror = tmp_path / "mirror"
    packaged = json.loads(default_manifest_path().read_text())
    template = next(r for r in packaged["releases"] if r["id"] == "upstream-v6")
    linux = next(a for a in template["assets"] if a["os"] == "linux")
    releases = []
    for rid, tag, sha in (("upstream-v6", "v6", kit.sha256(payload)), ("upstream-v7", "v7", "unknown")):
        rel = copy.deepcopy(template)
        rel.update(id=rid, version=tag[1:], tag=tag)
        asset = copy.deepcopy(linux)
        asset.update(name="zluda-linux-test.tar.gz", url=f"{BASE}/{tag}/zluda-linux-test.tar.gz", sha256=sha,
                     size=len(payload))
        rel["assets"] = [asset]
        releases.append(rel)
        target = mirror / "vosen/ZLUDA/releases/download" / tag / "zluda-linux-test.tar.gz"
        target.parent.mkdir(parents=True)
        target.write_bytes(payload)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({**packaged, "releases": releases}))
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", mirror.as_uri())
    cache = tmp_path / "cache"
    base_args = ["--manifest", str(manifest), "--cache-dir", str(cache)]

    def run(*args: str):
        return CliRunner().invoke(main_group, [*base_args, *args], catch_exceptions=False)

    return run, cache, payload, tmp_path


def test_fetch_list_path_clean(setup, kit):
    run, cache, payload, _ = setup
    res = run("fetch", "v6", "--os", "linux")
    assert res.exit_code == 0, res.output
    folder = Path(res.stdout.strip())
    assert folder == cache / "releases" / "upstream-v6" / "zluda-linux-test" / "zluda"  # archive_root
    assert (folder / "libcuda.so.1").is_file()
    listed = json.loads(run("cache", "list", "--json").stdout)
    assert listed["schema"] == 1
    entries = [(e["release_id"], e["sha256"]) for e in listed["releases"]]
    assert entries == [("upstream-v6", kit.sha256(payload))]
    assert "upstream-v6" in run("cache", "list").stdout
    assert run("cache", "path").stdout.strip() == str(cache)
    assert run("cache", "path", "upstream-v6").stdout.strip() == str(folder.parent)
    res = run("cache", "clean", "v6", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["release"] == "upstream-v6"
    assert not folder.exists()
    assert json.loads(run("cache", "list", "--json").stdout)["releases"] == []
    res = run("--json", "cache", "path", "upstream-v6")
    data = json.loads(res.stdout)
    assert (res.exit_code, data["kind"], data["exit_code"]) == (1, "cache", 1)
    assert commands(data["hint"]) == ["zluda-run fetch upstream-v6"]  # the way to get it


def test_unknown_hash_needs_trust_on_first_use(setup, kit):
    run, cache, payload, _ = setup
    res = run("fetch", "upstream-v7", "--os", "linux")
    assert res.exit_code == 1
    assert "error:" in res.stderr and "--trust-on-first-use" in res.stderr and "Traceback" not in res.stderr
    assert not (cache / "releases").exists()
    res = run("--json", "fetch", "upstream-v7", "--os", "linux", "--trust-on-first-use")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert (data["hash_source"], data["sha256"]) == ("trust-on-first-use", kit.sha256(payload))
    assert any(kit.sha256(payload) in n for n in data["notes"])  # the hash seen, said
    trust = json.loads(run("cache", "list", "--json").stdout)["trusted"]
    assert trust[f"{BASE}/v7/zluda-linux-test.tar.gz"]["sha256"] == kit.sha256(payload)


def test_hand_downloaded_archive_found_by_name(setup, monkeypatch):
    run, _cache, payload, tmp_path = setup
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", (tmp_path / "nowhere").as_uri())  # no download possible
    hand = tmp_path / "zluda-linux-test.tar.gz"
    hand.write_bytes(payload)
    res = run("fetch", "v6", "--archive", str(hand))
    assert res.exit_code == 0, res.output
    assert Path(res.stdout.strip()).is_dir()
    bad = tmp_path / "dl" / "zluda-linux-test.tar.gz"
    bad.parent.mkdir()
    bad.write_bytes(payload[:-10])
    # cached already: the same file is said to be so, another one is not silently ignored
    res = run("fetch", "v6", "--archive", str(hand), "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["action"] == "cached"
    res = run("--json", "fetch", "v6", "--archive", str(bad), "--trust-on-first-use")
    error = json.loads(res.stdout)
    assert (res.exit_code, error["kind"]) == (1, "checksum") and str(bad) in error["error"]
    assert "--reinstall" in error["hint"]
    res = run("fetch", "v6", "--archive", str(hand), "--reinstall", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["action"] == "installed-from-archive"
    run("cache", "clean")
    res = run("fetch", "v6", "--archive", str(bad))
    assert res.exit_code == 1 and "sha256" in res.stderr and str(bad) in res.stderr


def test_nothing_fits_is_an_error(setup):
    run, *_ = setup
    res = run("fetch", "--os", "windows")
    # nothing fits: exit 3 on every path, as the README's table says (issue 20 item 2)
    assert res.exit_code == 3 and "error:" in res.stderr and "Traceback" not in res.stderr


def test_archive_name_of_several_releases_must_be_named(setup):
    run, cache, payload, tmp_path = setup
    hand = tmp_path / "zluda-linux-test.tar.gz"  # both upstream-v6 and upstream-v7 have this asset name
    hand.write_bytes(payload)
    res = run("fetch", "--archive", str(hand), "--os", "linux")
    assert res.exit_code == 1 and "Traceback" not in res.stderr
    assert "upstream-v6" in res.stderr and "upstream-v7" in res.stderr
    data = json.loads(run("--json", "fetch", "--archive", str(hand), "--os", "linux").stdout)
    assert (data["kind"], data["exit_code"]) == ("selection", 1)
    assert commands(data["hint"]) == [f"zluda-run fetch upstream-v6 --archive {hand}"]  # names the release
    assert not (cache / "releases").exists()


def test_clean_all_leaves_a_release_being_fetched_alone(setup):
    import filelock

    from zluda_runner.release.cache import CacheLayout

    run, cache, _payload, _ = setup
    assert run("fetch", "v6", "--os", "linux").exit_code == 0
    layout = CacheLayout(cache)
    work = layout.tmp / "upstream-v7@inflight"  # what a fetch running in another process is writing
    work.mkdir(parents=True)
    (work / "part").write_bytes(b"x")
    with filelock.FileLock(layout.lock_path("upstream-v7")):
        res = run("cache", "clean", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["busy"] == ["upstream-v7"]
    assert (work / "part").exists()
    assert not (layout.releases / "upstream-v6").exists()
    res = run("cache", "clean")  # lock released: now it goes
    assert res.exit_code == 0 and not work.exists()


def test_cache_path_json(setup):
    run, cache, _payload, _ = setup
    assert run("fetch", "v6", "--os", "linux").exit_code == 0
    res = run("cache", "path", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["paths"] == [str(cache)]
    data = json.loads(run("cache", "path", "upstream-v6", "--json").stdout)
    assert data["release"] == "upstream-v6"
    assert data["paths"] == [str(cache / "releases" / "upstream-v6" / "zluda-linux-test")]


def test_fetch_reports_a_tampered_cache_and_reinstall_repairs_it(setup):
    run, _cache, _payload, _ = setup
    folder = Path(run("fetch", "v6", "--os", "linux").stdout.strip())
    lib = folder / "libcuda.so.1"
    size = lib.stat().st_size
    with lib.open("r+b") as fh:  # same size, same inode: only a full check sees it
        fh.write(b"EVIL")
    res = run("fetch", "v6", "--os", "linux")
    assert res.exit_code == 1 and "libcuda.so.1" in res.stderr  # the file that changed
    assert "Traceback" not in res.stderr
    data = json.loads(run("--json", "fetch", "v6", "--os", "linux").stdout)
    assert (data["kind"], data["exit_code"]) == ("cache", 1)
    assert commands(data["hint"]) == [  # repair it, or remove it
        "zluda-run fetch upstream-v6 --reinstall", "zluda-run cache clean upstream-v6"]
    res = run("--json", "fetch", "v6", "--os", "linux", "--reinstall")
    assert res.exit_code == 0, res.output
    assert lib.read_bytes()[:4] == b"\x7fELF" and lib.stat().st_size == size
    assert json.loads(run("--json", "fetch", "v6", "--os", "linux").stdout)["action"] == "cached"


def test_ctrl_c_during_fetch_exits_130_and_the_next_fetch_resumes(tmp_path, server, kit):
    """A real SIGINT to a real `zluda-run fetch` mid-body: exit 130, the partial kept, then Range."""
    import os
    import signal
    import subprocess
    import sys

    payload = kit.tar_gz([*kit.ZLUDA_LIKE, ("file", "zluda/blob.bin", os.urandom(300_000))])
    packaged = json.loads(default_manifest_path().read_text())
    template = next(r for r in packaged["releases"] if r["id"] == "upstream-v6")
    asset = copy.deepcopy(next(a for a in template["assets"] if a["os"] == "linux"))
    asset.update(name="zluda-linux-test.tar.gz", url=f"{BASE}/v6/zluda-linux-test.tar.gz",
                 sha256=kit.sha256(payload), size=len(payload))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({**packaged, "releases": [{**template, "assets": [asset]}]}))
    path = "/m/vosen/ZLUDA/releases/download/v6/zluda-linux-test.tar.gz"
    server.add(path, payload)
    server.pause_after = 100_000
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           "ZLUDA_RUNNER_MIRROR": server.url("/m")}
    argv = [sys.executable, "-m", "zluda_runner.cli", "--manifest", str(manifest), "--cache-dir", str(cache),
            "fetch", "upstream-v6", "--os", "linux"]
    # Ctrl-C's default in the child, whatever the test runner inherited: a shell's background job (`cmd &`
    # without job control) ignores SIGINT, and an ignored SIGINT stays ignored across exec
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert server.paused.wait(timeout=60), "the fetch never reached the server"
    partial = cache / "downloads" / "upstream-v6" / "zluda-linux-test.tar.gz.part"
    # until the first 100 kB are on disk (a wait, not a timing assertion: generous, for a loaded machine)
    for _ in range(6000):
        if partial.is_file() and partial.stat().st_size == 100_000:
            break
        threading.Event().wait(0.02)
    assert partial.is_file() and partial.stat().st_size == 100_000, "the first 100 kB never reached the disk"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, (out, err)
    assert "100000" in err and "zluda-linux-test.tar.gz" in err and "Traceback" not in err  # what is kept
    assert partial.stat().st_size == 100_000
    server.pause_after = None
    server.resume_event.set()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_dir() and not partial.exists()
    last = server.served(path)[-1]
    assert (last.range_header, last.status, last.bytes_sent) == ("bytes=100000-", 206, len(payload) - 100_000)


def test_archive_works_wherever_a_release_is_needed(setup, tmp_path):
    """`--archive FILE` is a global option: the run path installs a hand-downloaded archive too, so
    every hint that names it is true outside `fetch` (no download is possible here)."""
    import os
    import subprocess
    import sys

    _run, cache, payload, _ = setup
    hand = tmp_path / "zluda-linux-test.tar.gz"
    hand.write_bytes(payload)
    env = {**os.environ, "ZLUDA_RUNNER_MIRROR": (tmp_path / "nowhere").as_uri()}
    argv = [sys.executable, "-m", "zluda_runner", "--manifest", str(tmp_path / "manifest.json"),
            "--cache-dir", str(cache), "--release", "v6", "--archive", str(hand), "--force",
            "--", "sh", "-c", "exit 0"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (cache / "releases" / "upstream-v6" / "zluda-linux-test" / "zluda" / "libcuda.so.1").is_file()
    without = subprocess.run([*argv[:9], *argv[11:]], capture_output=True, text=True, env=env, timeout=120)
    assert without.returncode == 0  # now cached: nothing to download either way
    fresh = [*argv[:6], str(tmp_path / "fresh-cache"), *argv[7:9], *argv[11:]]
    offline = subprocess.run(fresh, capture_output=True, text=True, env=env, timeout=120)
    assert offline.returncode == 1 and "--archive FILE" in offline.stderr  # the hint names what works


def test_an_unwritable_cache_is_an_error_not_a_traceback(setup):
    """`cache clean` and `fetch --reinstall` where the cache cannot be written (here its `tmp` is a
    file, which fails for root too, like a read-only cache does for a user): before, the OSError of
    mkdtemp escaped as a traceback; now a CacheError (JSON with --json), and the release stays whole."""
    run, cache, _payload, _ = setup
    assert run("fetch", "v6", "--os", "linux").exit_code == 0
    folder = cache / "releases" / "upstream-v6" / "zluda-linux-test"
    (cache / "tmp").rmdir()
    (cache / "tmp").write_text("not a folder")
    reinstall = ("fetch", "v6", "--os", "linux", "--reinstall")
    for args in (("cache", "clean", "v6"), ("cache", "clean"), reinstall):
        res = run("--json", *args)
        assert res.exit_code == 1, (args, res.output)
        out = json.loads(res.stdout)
        assert out["kind"] == "cache" and str(cache / "tmp") in out["error"], out
        assert "--cache-dir" in out["hint"]
        assert (folder / "zluda" / "libcuda.so.1").is_file()
    listed = json.loads(run("--json", "cache", "list").stdout)
    assert [e["release_id"] for e in listed["releases"]] == ["upstream-v6"]


@pytest.mark.parametrize("version", ["", " "])
def test_clean_with_an_empty_version_removes_nothing(setup, version):
    """`cache clean "$V"` with V unset removed every release on 7859508: an empty VERSION names none."""
    run, _, _, _ = setup
    assert run("fetch", "v6", "--os", "linux").exit_code == 0
    res = run("cache", "clean", version, "--json")
    assert res.exit_code == 1 and json.loads(res.stdout)["exit_code"] == 1, res.output
    assert [e["release_id"] for e in json.loads(run("cache", "list", "--json").stdout)["releases"]] == [
        "upstream-v6"]
    assert run("cache", "path", version).exit_code == 1
    assert run("fetch", version, "--os", "linux").exit_code == 1  # on d5e4bba: fetched the selected release


@pytest.mark.parametrize("version", ["", 0])
def test_clean_cache_api_with_an_empty_or_non_text_version_removes_nothing(setup, version):
    from zluda_runner import Options, clean_cache
    from zluda_runner.core.errors import CacheError

    run, cache, _, tmp_path = setup
    assert run("fetch", "v6", "--os", "linux").exit_code == 0
    with pytest.raises((CacheError, TypeError)):  # 0: the API's own type check, where it comes first
        clean_cache(version, Options(cache_dir=cache, manifest=tmp_path / "manifest.json"))
    assert (cache / "releases" / "upstream-v6").is_dir()
