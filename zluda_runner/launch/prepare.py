"""A plan carried out for a launch: the loader set-up on Linux (link folder, redirector, environment),
the refusal of a fatal plan, and what ``--verify-load`` expects. Making the plan is the conductor's
(:mod:`zluda_runner.conduct`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.core.errors import FatalPlanError

if TYPE_CHECKING:
    from zluda_runner.launch.linux import LinuxLaunch
    from zluda_runner.plan.model import ShimPlan

RELEASE_ENV = "ZLUDA_RUNNER_RELEASE"



def linux_launch(plan: ShimPlan, cache_dir: Path) -> LinuxLaunch:
    """The loader set-up for a Linux plan: link folder, redirector, environment (creates files).

    Every path handed to the workload is absolute (a child that changes folder keeps the set-up).
    The redirector's map names the link-folder entries, which is what it accepts (it refuses every
    other search candidate for a mapped name); the link folder is first on LD_LIBRARY_PATH.
    """
    from zluda_runner.launch.linux import LinuxLaunch, prepare_link_dir

    cache_dir = Path(os.path.abspath(cache_dir))
    launch = LinuxLaunch(env=dict(plan.env), ld_library_path=[os.path.abspath(p) for p in plan.library_path])
    if plan.link_map:
        launch.link_dir = prepare_link_dir(cache_dir, {k: Path(v) for k, v in plan.link_map.items()})
    if plan.audit_library:
        from zluda_runner.launch.redirect import MAP_ENV, build_redirector, write_redirect_map

        if plan.audit_library == "ours":
            launch.ld_audit.append(str(build_redirector(cache_dir)))
            links = launch.link_dir
            mapping = {k: (links / k if links is not None and k in plan.link_map else Path(v))
                       for k, v in plan.redirect_map.items()}
            launch.env[MAP_ENV] = str(write_redirect_map(cache_dir, mapping))
        else:
            launch.ld_audit.append(os.path.abspath(plan.audit_library))
    return launch


def launch_env(plan: ShimPlan, cache_dir: Path, base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The full environment the workload gets under ``plan`` (``ZLUDA_RUNNER_RELEASE`` names the release,
    so a workload can tell it runs through zluda-run)."""
    env = dict(os.environ if base_env is None else base_env)
    if plan.release is not None:
        env[RELEASE_ENV] = plan.release.id or plan.release.root
    if plan.os == "windows":
        env.update(plan.env)
        if plan.path_prepend:
            env["PATH"] = os.pathsep.join([*plan.path_prepend, *filter(None, [env.get("PATH")])])
        return env
    from zluda_runner.launch.linux import compose_env
    from zluda_runner.launch.startup import linux_startup_env

    env = compose_env(env, linux_launch(plan, cache_dir))
    env.update(linux_startup_env(plan, cache_dir, env))  # the start-up defaults' sitecustomize
    return env


def refuse_if_fatal(plan: ShimPlan, force: bool) -> None:
    """A fatal verdict stops the launch before the workload starts (exit 3, a check failed)."""
    fatal = plan.fatal
    if not fatal or force:
        return
    # one line per distinct problem: a missing ROCm library stops every shim that needs it
    who_by_problem: dict[str, list[str]] = {}
    for b in fatal:
        for problem in b.problems or b.reasons[-1:] or ["fatal"]:
            shim, sep, rest = problem.partition(" needs ")
            key, who = (f"needs {rest}", shim) if sep and " " not in shim else (problem, b.need)
            if who not in who_by_problem.setdefault(key, []):
                who_by_problem[key].append(who)
    lines = [f"{', '.join(who)}: {key}" for key, who in who_by_problem.items()]
    raise FatalPlanError(
        "the plan predicts this launch will fail:\n  " + "\n  ".join(lines),
        hint="see {cmd:plan -- CMD} for the full reasons; {opt:force} runs it anyway",
    )


def expected_bindings(plan: ShimPlan) -> dict[str, Path]:
    """Needed name -> the shim the loader must take, for --verify-load."""
    return {
        b.need: Path(b.shim)
        for b in plan.bindings
        if b.action == "replace" and b.shim and plan.os == "linux"
    }

