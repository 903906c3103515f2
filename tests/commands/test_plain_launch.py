"""A plain launch (``zluda-run [OPTIONS] -- CMD`` or ``zluda-run [OPTIONS] PROGRAM ...``) is read by the fast
recogniser of the global options' table and started without click (issue 28: launch at the interpreter's
floor); anything it does not take whole goes to click's group, which keeps its behaviour. Both read one
table and call the same API: what the API is asked is the same either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import zluda_runner.api.launching as launching
from zluda_runner.cli import main, main_group
from zluda_runner.commands.global_options import GLOBAL_OPTIONS, recognise
from zluda_runner.devtools.standin import build_release, libs_from_spec
from zluda_runner.results.asked import ASKED

# what a launch with a warm plan must not import (the cached launch's modules are the API it calls,
# the conductor, the host's quick facts and the plan's records)
HEAVY = ("click", "requests", "elftools", "pefile", "rich", "zluda_runner.inspection.inspect",
         "zluda_runner.probe", "zluda_runner.doctor", "zluda_runner.abtest", "zluda_runner.release.manifest",
         "zluda_runner.release.selection", "zluda_runner.results.schema", "zluda_runner.host.hip",
         "zluda_runner.host.compile_cache", "zluda_runner.commands.common", "zluda_runner.commands.launching")


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stand-in ZLUDA release (libcuda.so.1, libcublas.so.13), as benchmarks/launch_overhead.py runs."""
    base = tmp_path_factory.mktemp("standin")
    spec = {"libcuda.so.1": {"soname": "libcuda.so.1", "links": ["libcuda.so"]},
            "libcublas.so.13": {"soname": "libcublas.so.13",
                                "versions": {"libcublas.so.13": ["cublasCreate_v2"]}}}
    return build_release(libs_from_spec(spec), base / "zluda", build_dir=base / "build")


def _launched(argv: list[str]) -> dict[str, object]:
    """``zluda-run ARGV`` in a fresh interpreter, up to the moment it replaces itself with the workload:
    what it would exec, and which of HEAVY it had imported."""
    code = (
        "import json, os, sys\nfrom zluda_runner.cli import main\n"
        f"HEAVY = {HEAVY!r}\n"
        "def fake_execve(path, argv, env):\n"
        "    heavy = [m for m in HEAVY\n"
        "             if m in sys.modules or any(n.startswith(m + '.') for n in sys.modules)]\n"
        "    print(json.dumps({'argv': list(argv), 'heavy': heavy}), flush=True)\n"
        "    os._exit(0)\n"
        "os.execve = fake_execve\n"
        "main(sys.argv[1:])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    found: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("form", ["dashes", "program"])
def test_a_warm_plain_launch_imports_neither_click_nor_a_heavy_module(release: Path, tmp_path: Path,
                                                                      form: str) -> None:
    base = ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release)]
    workload = ["sh", "-c", "exit 0"]
    argv = [*base, "--", *workload] if form == "dashes" else [*base, *workload]
    _launched(argv)  # fills the plan cache
    warm = _launched(argv)
    assert warm["argv"] == workload and warm["heavy"] == [], warm


def test_the_import_check_sees_click(release: Path, tmp_path: Path) -> None:
    """(The check above can fail: a launch that is not plain, ``--json`` here, goes through click.)"""
    argv = ["--json", "--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release),
            "--", "sh", "-c", "exit 0"]
    _launched(argv)
    assert "click" in _launched(argv)["heavy"]


@pytest.mark.parametrize("argv", [
    [], ["--"], ["--help"], ["-h"], ["--version"], ["--json", "--", "true"], ["--trace", "--", "true"],
    ["--verify-load", "--", "true"], ["--monitor", "--", "true"], ["--trace-out", "f", "--", "true"],
    ["plan", "--", "true"], ["run", "--", "true"], ["--strict", "true"], ["--force=yes", "--", "true"],
    ["--zluda-dir"], ["--bogus", "--", "true"], ["--zluda-dir", "R"], ["relases"], ["no-such-program-zr"],
    ["--cache-dir", "C", "releases"], ["-x", "true"], ["--release", "--", "true"], ["--python", "-x", "true"],
])
def test_what_is_not_a_plain_launch_goes_to_click(argv: list[str]) -> None:
    assert recognise(argv, {}) is None


def _asked(argv: list[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> list[tuple[object, ...]]:
    """What the API is asked for ``zluda-run ARGV``, through the fast path (``main``) and through click's
    group: the command, the options and the words recorded, for each."""
    seen: list[tuple[object, ...]] = []

    def prepare_launch(command, options, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((list(command), options, ASKED.get(), kwargs["strict"], kwargs["injector"]))
        raise SystemExit(0)

    monkeypatch.setattr(launching, "prepare_launch", prepare_launch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit):
        main(argv)
    CliRunner().invoke(main_group, argv, catch_exceptions=False)
    return seen


@pytest.mark.parametrize(("argv", "env"), [
    (["--", "true", "a b", "--json"], {}),
    (["--zluda-dir", "~/z", "--cache-dir=/c", "--force", "--no-defaults", "--release", "v6", "true", "-x"],
     {}),
    (["--python", "py", "--no-record", "--trust-on-first-use", "--archive", "a.zip", "--", "true"], {}),
    (["--lock", "zluda.lock", "--results-db", "r.db", "--manifest", "m.json", "--", "true", "--", "y"], {}),
    (["--", "true"],
     {"ZLUDA_RUNNER_ZLUDA_DIR": "/z", "ZLUDA_RUNNER_CACHE": "/c", "ZLUDA_RUNNER_RESULTS_DB": "x"}),
    (["--zluda-dir", "/given", "true"], {"ZLUDA_RUNNER_ZLUDA_DIR": "/from-env", "ZLUDA_RUNNER_CACHE": ""}),
])
def test_the_fast_path_asks_the_api_what_click_asks(argv: list[str], env: dict[str, str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert recognise(argv, env) is not None  # taken by the fast path
    fast, clicked = _asked(argv, monkeypatch, env)
    assert fast == clicked
    assert fast[2] and fast[2][0] == "zluda-run" and "run" in fast[2]  # the words were recorded


def test_every_global_option_is_clicks() -> None:
    """The table is click's group: each row is one of its options, with its flag, metavar and variable."""
    import click

    options = {p.name: p for p in main_group.params if isinstance(p, click.Option) and p.expose_value}
    assert list(options) == [o.dest for o in GLOBAL_OPTIONS]
    for row in GLOBAL_OPTIONS:
        option = options[row.dest]
        assert (option.opts, option.is_flag, option.metavar, option.envvar, option.help) == (
            [row.name], row.flag, row.metavar, row.envvar, row.help)
