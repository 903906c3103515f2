"""Where the selection's HIP version came from is a neutral word in the record (``hip_source``: "given",
"found on this host"), never a front end's flag: the API and ``releases --json`` carry the word, the
command line's text view renders the option that gives it (``--hip``)."""

from __future__ import annotations

import json

from click.testing import CliRunner

import zluda_runner as zr
from zluda_runner.cli import main_group
from zluda_runner.core.wording import worded_for
from zluda_runner.release.listing import HIP_GIVEN, releases_report
from zluda_runner.report.releases_view import render_selection

WANTED = "wanted: os=windows arch=x86_64 hip=6.2 cuda=11 channel=stable"  # the view's first line


def test_a_given_hip_is_recorded_as_given() -> None:
    report = zr.list_releases(os="windows", hip="6.2", cuda=11).report
    assert report.hip_source == HIP_GIVEN == "given"
    assert report.to_json_dict()["hip_source"] == "given"
    with worded_for("command line"):
        cli = render_selection(report).splitlines()[0]
    python = render_selection(report).splitlines()[0]  # a Python caller's words: the argument, not the flag
    assert (cli, python) == (f"{WANTED} (HIP given by --hip)", f"{WANTED} (HIP given by hip=...)")
    assert releases_report(None, None).hip_source is None


def test_releases_json_and_the_api_carry_the_word() -> None:
    result = CliRunner().invoke(main_group, ["releases", "--os", "windows", "--hip", "6.2", "--cuda", "11",
                                             "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["hip_source"] == "given"
    text = CliRunner().invoke(main_group, ["releases", "--os", "windows", "--hip", "6.2", "--cuda", "11"])
    assert text.output.splitlines()[0] == f"{WANTED} (HIP given by --hip)"
    listing = zr.list_releases(os="windows", hip="6.2", cuda=11)
    assert listing.report.hip_source == "given"
