"""``releases`` says, in one line, where the manifest's data says the GPU has AMD's native ROCm PyTorch
wheels, with the ``zluda-run ab --b-python`` command that compares them with ZLUDA on the user's workload; its
``--json`` carries the typed answer (``native_wheels``), as :func:`zluda_runner.choose_release` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.api.releases import choose_release, list_releases
from zluda_runner.cli import main_group
from zluda_runner.core.wording import worded_for
from zluda_runner.release.manifest import default_manifest_path, load_manifest
from zluda_runner.release.native import native_wheels

ENV = {"COLUMNS": "80", "ZLUDA_RUNNER_MANIFEST": None, "ZLUDA_RUNNER_MIRROR": None}


def _releases(cache: Path, *argv: str) -> tuple[int, str]:
    out = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "releases", *argv], env=ENV)
    return out.exit_code, out.output


@pytest.mark.parametrize(("argv", "available", "exit_code"), [
    (["--os", "windows", "--hip", "6.4", "--cuda", "11", "--gpu", "gfx1100"], True, 0),
    # RDNA4 with HIP 6.2: no ZLUDA release fits (a GPU rule), AMD's native wheels do
    (["--os", "linux", "--hip", "6.2", "--cuda", "12", "--gpu", "gfx1201"], True, 3),
    (["--os", "windows", "--hip", "5.7", "--cuda", "11", "--gpu", "gfx803"], None, 0),  # no source found
])
def test_the_json_carries_the_answer(tmp_path: Path, argv: list[str], available: bool | None,
                                     exit_code: int) -> None:
    code, text = _releases(tmp_path, "--json", *argv)
    assert code == exit_code, text
    doc = json.loads(text)
    got = doc["native_wheels"]
    os_name, gfx = argv[1], argv[-1]
    want = native_wheels(load_manifest(), gfx, os_name)  # the one decision
    assert want is not None
    assert (got["gfx"], got["os"], got["available"]) == (gfx, os_name, available)
    assert got["support"] == want.support
    assert got["source"] == want.source.to_dict()
    with worded_for("command line"):
        line = want.to_dict()["line"]
    assert got["line"] == line  # the command line's words in its --json
    assert (got["line"] is None) == (not available)


def test_no_gpu_known_no_answer(tmp_path: Path) -> None:
    """Nothing of this host is read (an empty fake root): no GPU, so nothing to answer."""
    code, text = _releases(tmp_path, "--json", "--os", "linux", "--hip", "6.2", "--cuda", "12")
    assert code == 0, text
    assert json.loads(text)["native_wheels"] is None


def test_the_api_results_carry_it(tmp_path: Path) -> None:
    from zluda_runner.api.options import Options

    opts = Options(cache_dir=tmp_path)
    choice = choose_release(opts, os="windows", hip="6.4", cuda=11, gpu="gfx1100")
    assert choice.native_wheels is not None and choice.native_wheels.available is True
    listing = list_releases(opts, os="windows", hip="6.4", cuda=11, gpu="gfx1100")
    assert listing.report.native == choice.native_wheels


def test_the_view_where_zluda_does_not_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An RX 7900 on Linux with HIP 5.2 and upstream v6 only: nothing fits, and AMD's native wheels do; the
    view whole, the native line among it once."""
    monkeypatch.chdir(tmp_path)
    packaged = json.loads(default_manifest_path().read_text())
    v6 = next(r for r in packaged["releases"] if r["id"] == "upstream-v6")
    (tmp_path / "manifest.json").write_text(json.dumps({**packaged, "releases": [v6]}))
    code, text = _releases(tmp_path / "c", "--manifest", "manifest.json", "--os", "linux", "--hip", "5.2",
                           "--cuda", "12", "--gpu", "gfx1100")
    assert code == 3, text
    assert_golden("releases-nothing-fits-native-wheels", text, tmp=tmp_path)
