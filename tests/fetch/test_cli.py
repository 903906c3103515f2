"""`zluda-run fetch` and `zluda-run cache ...` end to end, with a file:// mirror and a test manifest."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.release.manifest import default_manifest_path

BASE = "https://github.com/vosen/ZLUDA/releases/download"


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
    res = run("cache", "path", "upstream-v6")
    assert res.exit_code == 1 and "zluda-run fetch" in res.stderr


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
    res = run("fetch", "v6", "--archive", str(bad), "--trust-on-first-use")  # cached already: no-op
    assert res.exit_code == 0
    run("cache", "clean")
    res = run("fetch", "v6", "--archive", str(bad))
    assert res.exit_code == 1 and "sha256" in res.stderr and str(bad) in res.stderr


def test_nothing_fits_is_an_error(setup):
    run, *_ = setup
    res = run("fetch", "--os", "windows")
    assert res.exit_code == 1 and "error:" in res.stderr and "Traceback" not in res.stderr


def test_archive_name_of_several_releases_must_be_named(setup):
    run, cache, payload, tmp_path = setup
    hand = tmp_path / "zluda-linux-test.tar.gz"  # both upstream-v6 and upstream-v7 have this asset name
    hand.write_bytes(payload)
    res = run("fetch", "--archive", str(hand), "--os", "linux")
    assert res.exit_code == 1 and "Traceback" not in res.stderr
    assert "upstream-v6" in res.stderr and "upstream-v7" in res.stderr
    assert "zluda-run fetch upstream-v6" in res.stderr
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
