"""The CLI cannot silently do the wrong thing: options are options, typos are caught, the host is
checked first, output is plain when piped (issue: a CLI that tells the truth). Through the real
console script in a subprocess."""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

from zluda_runner.host.quick import quick_facts


def _base(tmp_path: Path, release: Path) -> list[str]:
    return ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release)]


def test_a_misspelt_option_after_the_command_is_a_usage_error(standin_releases, zluda_run, tmp_path) -> None:
    for cmd in (["plan", "--verfy-load", "--", "sh", "-c", "true"],
                ["run", "--verfy-load", "--", "sh", "-c", "true"]):
        proc = zluda_run([*_base(tmp_path, standin_releases["good"]), *cmd])
        assert proc.returncode == 2, proc.stderr
        assert "No such option '--verfy-load'. Did you mean '--verify-load'?" in proc.stderr


def test_global_options_work_after_the_command_name(standin_releases, zluda_run, tmp_path) -> None:
    release = standin_releases["good"]
    proc = zluda_run(["--cache-dir", str(tmp_path / "c"), "plan", "--zluda-dir", str(release), "--json",
                      "--", "sh", "-c", "true"])
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert Path(plan["release"]["root"]).resolve() == release.resolve()
    assert plan["target"]["binary"] and "sh" in Path(plan["target"]["binary"]).name


def test_a_misspelt_command_is_caught_not_run(zluda_run) -> None:
    proc = zluda_run(["--json", "relases"])
    error = json.loads(proc.stdout)
    assert (proc.returncode, error["exit_code"], error["kind"]) == (2, 2, "usage"), error
    assert "'releases'" in error["error"], error  # the command it takes the typo for
    # a real program whose name is close to a command is still the workload
    ok = zluda_run(["--json", "tru", "x"])  # not on PATH: a typo of nothing, so it is a workload
    assert ok.returncode == 127


def test_the_host_is_checked_before_anything_else(standin_releases, zluda_run, tmp_path) -> None:
    """No AMD GPU on this (fake, empty) host: a warning that names what is missing and points to the doctor;
    --strict stops there with exit 3 and never starts the workload."""
    root = tmp_path / "host"
    root.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "ROCM_PATH"}, "ZLUDA_RUNNER_ROOT": str(root)}
    facts = quick_facts(env=env, root=root, platform="linux")
    assert facts.gfx is None and "/dev/kfd" in facts.problems[0], facts
    marker = tmp_path / "ran"
    argv = [*_base(tmp_path, standin_releases["good"]), "--", "sh", "-c", f"touch {marker}"]
    proc = zluda_run(argv, env=env)
    assert proc.returncode == 0 and marker.exists()
    assert f"warning: {'; '.join(facts.problems)}: " in " ".join(proc.stderr.split()), proc.stderr
    assert "zluda-run doctor" in proc.stderr
    marker.unlink()
    strict = zluda_run(["--json", *_base(tmp_path, standin_releases["good"]), "run", "--strict", "--",
                        "sh", "-c", f"touch {marker}"], env=env)
    assert strict.returncode == 3 and not marker.exists()
    error = json.loads(strict.stdout)
    assert error["exit_code"] == 3 and error["kind"] == "check-failed", error


def test_the_plan_is_plain_text_piped_or_on_a_terminal(standin_releases, zluda_run, tmp_path) -> None:
    """The views are plain text laid out by one table engine (core/textfit): no escape code reaches the
    output, piped or with FORCE_COLOR (colour was decoration only; it went with rich's tables)."""
    argv = [*_base(tmp_path, standin_releases["good"]), "plan", "--", "sh", "-c", "true"]
    piped = zluda_run(argv)
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout and "release:" in piped.stdout
    forced = zluda_run(argv, env={**os.environ, "FORCE_COLOR": "1", "COLUMNS": "120"})
    assert forced.returncode == 0 and "\x1b[" not in forced.stdout and "release:" in forced.stdout


def test_json_errors_carry_the_exit_code(zluda_run, tmp_path) -> None:
    proc = zluda_run(["--json", "--zluda-dir", str(tmp_path / "missing"), "plan", "--", "sh", "-c", "true"])
    data = json.loads(proc.stdout)
    assert proc.returncode == data["exit_code"] == 1 and data["error"] and data["hint"]


def test_cpython_interpreter_is_the_default_target(zluda_run) -> None:
    """`zluda-run inspect` with no argument inspects this interpreter: a CPU torch here, said plainly."""
    proc = zluda_run(["--json", "inspect", "--python", sys.executable])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "target" and version("torch") in error["error"], error  # the CPU build it found


def test_releases_and_the_run_path_say_what_the_store_knows_for_this_gpu(standin_releases, zluda_run,
                                                                         tmp_path) -> None:
    """A host with a gfx1100 (a fake tree, ZLUDA_RUNNER_ROOT) and two recorded torch-op runs there:
    `releases` and the run path say how the release fared on this GPU."""
    from tests.doctor.test_doctor import rocm62_tree
    from tests.results import reports
    from zluda_runner.core.settings import Settings
    from zluda_runner.results.queries import summary_for_gpu
    from zluda_runner.results.recording import record_report

    root = tmp_path / "root"
    rocm62_tree(root, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    (root / "dev").mkdir(exist_ok=True)
    (root / "dev" / "kfd").touch()
    settings = Settings(cache_dir=tmp_path / "cache")
    for failing in ({3}, set()):
        outcome = record_report("torch-ops", reports.torch_ops(10, failing=failing, tag=str(len(failing))),
                                settings=settings, command=["probe", "--torch"], release={"id": "zluda-dir"},
                                host={"gfx": "gfx1100"})
        assert outcome.warning is None
    env = {**os.environ, "ZLUDA_RUNNER_ROOT": str(root)}
    (known,) = summary_for_gpu("gfx1100", settings=settings)
    assert (known.release, known.runs, known.passed, known.total) == ("zluda-dir", 2, 19, 20), known
    expected = known.text()  # the store's line for this GPU, as releases and a run show it
    listed = zluda_run(["--cache-dir", str(tmp_path / "cache"), "releases"], env=env)
    assert expected in listed.stdout, listed.stdout[-500:]
    run = zluda_run([*_base(tmp_path, standin_releases["good"]), "--", "sh", "-c", "true"], env=env)
    assert run.returncode == 0 and expected in run.stderr, run.stderr
    assert "warning:" not in run.stderr  # the fake host has a GPU and ROCm 6.2
