"""One run's context (:class:`RunContext`): what the run was asked (the settings, the command, its
environment) and what the host and the manifest say, read once per run (:func:`run_context`) and carried
as one frozen record to the host check, the release resolution, the plan, the launch and the record: no
stage reads the host or the manifest again."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zluda_runner.core.settings import Settings
from zluda_runner.plan.defaults_facts import HostRead, read_host

if TYPE_CHECKING:
    from zluda_runner.plan.defaults import DefaultsFacts
    from zluda_runner.plan.model import PlanTarget, ShimPlan
    from zluda_runner.release.model import Manifest
    from zluda_runner.release.selection import Resolution


@dataclass(frozen=True)
class RunContext:
    """One run: its settings, command and environment, the host (:class:`HostRead`) and the manifest in use
    (with ``--zluda-dir`` only for the GPU x HIP rules: that folder is the release, none is resolved); once
    the target is known, its profile (``target``: inspected once, or its cached plan's) and the release
    resolution (:func:`zluda_runner.conduct.resolve.resolved`); once planned, the plan
    (:func:`zluda_runner.conduct.plan.plan_run`). The launch, the recording
    (:func:`zluda_runner.conduct.refs.context_refs`) and the views read these fields, never the host,
    the manifest or the target again."""

    settings: Settings
    argv: tuple[str, ...]
    env: Mapping[str, str]  # the run's environment, the HIP chosen (``settings.hip``) applied
    host: HostRead
    manifest: Manifest | None
    resolution: Resolution | None = None  # the release the run takes, once its target is known
    target: PlanTarget | None = None  # the target's interpreter, torch and CUDA (or binary), once known
    plan: ShimPlan | None = None  # what the run carries out, once planned
    facts: DefaultsFacts | None = None  # what the plan's defaults follow, once planned (find's variants)

    @property
    def gfx(self) -> str | None:
        """The gfx of the GPU the workload gets: what the manifest's GPU x HIP rules judge."""
        return self.host.workload_gfx(self.settings.defaults)


def context_env(settings: Settings, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a run with ``settings`` in ``env`` (default: this process's): where a HIP is
    chosen (``settings.hip``: find's "other HIP" variant, a lock's), the one the HIP finder, the plan's
    library lookups and the workload's loader all read it from
    (:func:`zluda_runner.host.hipchoice.chosen_env`). A folder that is not there is refused."""
    run_env = dict(os.environ if env is None else env)
    if settings.hip is None:
        return run_env
    import sys

    from zluda_runner.core.errors import HostError
    from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
    from zluda_runner.host.hipchoice import chosen_env

    if not HostFs(root_from_env(run_env.get(ROOT_ENV) or "")).is_dir(settings.hip):
        raise HostError(f"the HIP folder {settings.hip} chosen for this run is not there",
                        hint="{cmd:doctor} lists the HIP installs of this host; search again with "
                             "{cmd:find -- CMD}")
    return chosen_env(run_env, settings.hip, sys.platform)


def run_context(argv: Sequence[str], settings: Settings, env: Mapping[str, str] | None = None, *,
                host: HostRead | None = None) -> RunContext:
    """The context of a run of ``argv`` in ``env`` (default: this process's; a chosen HIP applied:
    :func:`context_env`); ``host``: the host's facts where read already, in that environment (a run says
    their warnings before the manifest can fail). A ``--zluda-dir`` run reads the manifest only for the
    GPU x HIP rules (GPU and HIP known), and goes on without a broken one."""
    run_env = context_env(settings, env)
    host = host or read_host(run_env)
    manifest = None
    if settings.zluda_dir is None or (host.workload_gfx(settings.defaults) and host.quick.hip.version):
        from zluda_runner.core.errors import ZludaRunnerError
        from zluda_runner.release.manifest import load_current_manifest

        try:
            manifest = load_current_manifest(settings.manifest, settings.cache_dir)
        except ZludaRunnerError:
            if settings.zluda_dir is None:
                raise
    return RunContext(settings, tuple(argv), run_env, host, manifest)
