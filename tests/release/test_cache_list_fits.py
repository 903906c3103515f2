"""`zluda-run cache list` fits the terminal (issue 20, newcomer item 7): names and paths whole on a line."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.release.cache import CacheLayout, ensure_release

NAME = "zluda-linux-abc1234.tar.gz"


@pytest.mark.parametrize("width", [80, 120])
def test_cache_list_fits(tmp_path, server, kit, width: int) -> None:
    data = kit.tar_gz(kit.ZLUDA_LIKE)
    url = server.add("/x.tar.gz", data)
    cache = tmp_path / "cache"
    ensure_release(kit.Release("v5"), kit.Asset(name=NAME, url=url, sha256=kit.sha256(data), format="tar.gz"),
                   cache)
    out = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "cache", "list"],
                             env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    wide = [line for line in lines if len(line) > width and " " in line.strip()]
    assert not wide, out.output
    folder = str(CacheLayout(cache).release_dir("v5", NAME))
    joined = "".join(line.strip() for line in lines)  # a folder wider than the line is broken after a /
    assert folder in joined, (folder, out.output)
    for name in ("v5", NAME):
        whole = re.compile(rf"(?<![\w./-]){re.escape(name)}(?![\w.-])")
        assert any(whole.search(line) for line in lines), (name, out.output)
