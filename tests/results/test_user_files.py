"""One writer for every file written where the user asked (results.userfiles): a symbolic link is
followed (the file it names is replaced, the link stays), the store's files are refused however named,
a device is written in place (issue 27, point 6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.recording import record_report
from zluda_runner.results.userfiles import OutputFileError, output_path, write_output

pytestmark = pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "runs.db"
    assert record_report("torch-ops", reports.torch_ops(2), settings=Settings(cache_dir=tmp_path),
                         db_url=str(store), command=["zluda-run", "probe"], host=reports.HOST).recorded
    return store


def test_an_export_onto_a_link_writes_the_file_it_names_and_keeps_the_link(tmp_path: Path) -> None:
    store = _store(tmp_path)
    (tmp_path / "shared").mkdir()
    named = tmp_path / "shared" / "bundle.jsonl"
    named.write_text("old\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(named)
    result = CliRunner().invoke(main_group, ["--results-db", str(store), "results", "export", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(named)  # 7859508: the link became a file
    assert named.read_text().count("\n") == 2  # the header and the run
    assert not [p for p in (tmp_path / "shared").iterdir() if p.name.startswith(".")]


def test_a_page_through_a_link_to_the_store_is_refused(tmp_path: Path) -> None:
    store = _store(tmp_path)
    link = tmp_path / "page.html"
    link.symlink_to(store)
    before = store.read_bytes()
    with pytest.raises(OutputFileError) as caught:
        write_output(link, "<html>", (store,))
    assert str(store) in caught.value.message  # names the store file it would have replaced
    assert store.read_bytes() == before and link.is_symlink()


def test_a_link_to_a_file_not_yet_made_is_followed(tmp_path: Path) -> None:
    link = tmp_path / "out.html"
    link.symlink_to(tmp_path / "made.html")
    assert output_path(link, ()) == tmp_path / "made.html"
    write_output(link, "<p>", ())
    assert (tmp_path / "made.html").read_text() == "<p>" and link.is_symlink()


def test_a_device_is_written_in_place(tmp_path: Path) -> None:
    assert write_output(Path(os.devnull), "x", ()) == Path(os.devnull)
    assert Path(os.devnull).is_char_device()
