"""The search: each candidate planned (a FATAL plan costs no run: :func:`prepare_run` refuses it), run and
judged exactly as ``poc`` judges (:func:`zluda_runner.poc.runner.run_sides`,
:func:`zluda_runner.poc.session.judge`), until one passes every criterion that can be judged here, the
budget is spent, or Ctrl-C; the best is locked (:mod:`zluda_runner.finder.lock`)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.abtest.sides import check_program, split_command
from zluda_runner.conduct.lock import host_facts, launch_mechanism
from zluda_runner.core.errors import HostError, ZludaRunnerError
from zluda_runner.core.settings import Settings
from zluda_runner.core.version import __version__
from zluda_runner.finder.candidates import (
    candidate_settings,
    given_candidates,
    manifest_candidates,
    variant_changes,
    variant_env,
    variants_for,
)
from zluda_runner.finder.model import (
    NOT_PROVEN_GPU,
    Candidate,
    CandidateStatus,
    CandidateVerdict,
    FindReport,
    best,
)
from zluda_runner.host.hipchoice import HipInstall
from zluda_runner.launch.run import PreparedRun
from zluda_runner.plan.model import RecordRefs
from zluda_runner.poc.model import PocReport, PocRun, Thresholds
from zluda_runner.poc.runner import Workload, cpu_reference, run_sides
from zluda_runner.poc.session import PocRequest, judge
from zluda_runner.release.lockfile import (
    DEFAULTS,
    INJECTOR_VARIANT,
    OTHER_HIP_VARIANT,
    FailedCandidate,
    Lock,
    LockedCriterion,
    LockedRelease,
    LockedSetting,
    hash_tree,
    write_lock,
)
from zluda_runner.telemetry.model import NoTelemetry
from zluda_runner.telemetry.sampler import DEFAULT_INTERVAL_S, TelemetrySource, open_source

Progress = Callable[[str], None]


@dataclass(frozen=True)
class FindRequest:
    command: tuple[str, ...]
    runs: int = 1
    reference: str = "cpu"
    candidates: tuple[Path, ...] = ()  # --candidate DIR|ARCHIVE, in the order given
    only_given: bool = False  # the given candidates only, not the manifest's releases
    budget_s: float | None = None
    lock_path: Path | None = None  # None: not written
    thresholds: Thresholds = field(default_factory=Thresholds)
    root: Path | None = None  # a fake system tree for telemetry (tests)
    interval_s: float = DEFAULT_INTERVAL_S
    timeout: float | None = None
    known_from: str | None = None  # find --from FILE|URL: a bundle whose known-good locks go first


def run_find(request: FindRequest, settings: Settings, *, progress: Progress | None = None,
             on_warning: Callable[[str], None] | None = None,
             env: Mapping[str, str] | None = None) -> tuple[FindReport, RecordRefs | None]:
    """Search, judge, lock (module doc); raises only for what stops it before anything runs. With the
    report, what its recording names: the locked candidate's own run context (its release, torch, host;
    None: nothing ran)."""
    if not request.command:
        raise HostError("nothing to run", hint="{cmd:find -- python script.py [ARGS]}")
    base_env = dict(os.environ if env is None else env)
    reference = _reference(request, base_env)
    given = given_candidates(request.candidates, settings)
    queue = list(given)
    if not request.only_given:
        queue = manifest_candidates(_manifest_ids(request.command, settings, on_warning)) + queue
    queue = _known_first(request.known_from, settings, given, progress, on_warning) + queue
    queue = list(dict.fromkeys(queue))  # a candidate a known-good lock named is tried once, first
    if not queue:
        what = "" if request.only_given else "no release of the manifest fits this host, and "
        raise HostError(f"no candidate to try: {what}no {{opt:candidate}} was given",
                        hint="give a ZLUDA folder or release archive with {opt:candidate DIR}")
    source = open_source(root=request.root, env=base_env)
    available = not isinstance(source, NoTelemetry)
    telemetry = f"{source.backend}, {source.device}" if not isinstance(source, NoTelemetry) else source.reason
    search = _Search(request, settings, reference, source, telemetry, progress, base_env)
    start = time.monotonic()
    stopped: str = "exhausted"
    try:
        while queue:
            if request.budget_s is not None and time.monotonic() - start >= request.budget_s:
                stopped = "budget"
                break
            cand = queue.pop(0)
            verdict, variants = search.judge(cand, len(search.verdicts) + 1, len(queue))
            queue[0:0] = variants
            if verdict.status == "pass" or (verdict.status == "unproven" and not available):
                stopped = "passed"
                break
    except KeyboardInterrupt:
        stopped = "interrupted"
    finally:
        if not isinstance(source, NoTelemetry):
            source.close()
    verdicts = tuple(search.verdicts)
    chosen = best(verdicts)
    lock = _lock(chosen, verdicts, search, request) if chosen is not None else None
    if lock is not None and request.lock_path is not None:
        write_lock(lock, request.lock_path)
    report = FindReport(
        command=request.command, reference=request.reference, runs=request.runs, verdicts=verdicts,
        telemetry=telemetry, lock=lock,
        lock_path=str(request.lock_path) if lock is not None and request.lock_path is not None else None,
        left=len(queue), stopped=stopped,  # type: ignore[arg-type]
    )
    ran = search.prepared.get(chosen.candidate) if chosen is not None else None
    return report, ran.recorded if ran is not None else None


def _known_first(source: str | None, settings: Settings, given: Sequence[Candidate],
                 progress: Progress | None, on_warning: Callable[[str], None] | None) -> list[Candidate]:
    """The candidates known-good locks name for this GPU (:mod:`zluda_runner.finder.known`): those of the
    bundle ``source`` (``--from``), then those this results store holds."""
    from zluda_runner.finder.known import known_first, locks_from, stored_locks
    from zluda_runner.plan.defaults_facts import read_host

    gfx = read_host(os.environ).quick.gfx
    first: list[Candidate] = []
    for where, locks in (((source, locks_from(source, settings.cache_dir)),) if source is not None else ()) \
            + (("the results store", stored_locks(settings)),):
        found, notes = known_first(locks, gfx, given, where)
        for note in notes if where == source else ():  # the store's other GPUs are no news
            if on_warning is not None:
                on_warning(note)
        if progress is not None and (locks or where == source):
            progress(f"find: {len(found)} known-good lock(s) of {len(locks)} in {where} tried first")
        first += found
    return first


def _reference(request: FindRequest, env: Mapping[str, str]) -> Workload:
    if request.reference == "cpu":
        return cpu_reference(request.command, env)
    argv = split_command(request.reference, "the reference")
    check_program(argv, "the reference", env.get("PATH"))
    return Workload("reference", tuple(argv), dict(env))


def _manifest_ids(command: Sequence[str], settings: Settings,
                  on_warning: Callable[[str], None] | None) -> list[str]:
    """The manifest's releases that fit this host and the command's torch, best first (the one resolver's
    ranked list); none (said) where the manifest cannot be read or nothing fits."""
    from zluda_runner.conduct.resolve import choose_target, resolve_release

    try:
        python = choose_target(list(command), settings).python
        resolution = resolve_release(settings, torch_python=python)
    except ZludaRunnerError as exc:
        if on_warning is not None:
            on_warning(f"no release of the manifest is tried: {exc.message}")
        return []
    return [c.release.id for c in resolution.candidates]


class _Search:
    """One search's state: the verdicts so far, and what the lock needs of each candidate that ran."""

    def __init__(self, request: FindRequest, settings: Settings, reference: Workload,
                 source: TelemetrySource | NoTelemetry, telemetry: str, progress: Progress | None,
                 base_env: Mapping[str, str]) -> None:
        self.request, self.settings, self.reference = request, settings, reference
        self.source, self.telemetry, self.progress = source, telemetry, progress
        self.verdicts: list[CandidateVerdict] = []
        self.prepared: dict[Candidate, PreparedRun] = {}
        self.base_env: Mapping[str, str] = base_env
        self._other_hips: tuple[HipInstall, ...] | None = None

    def say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def judge(self, cand: Candidate, number: int, left: int) -> tuple[CandidateVerdict, list[Candidate]]:
        """``cand``'s verdict, and the variants to try next (after its defaults ran)."""
        self.say(f"find: trying {number}: {cand.label} ({left} more queued)")
        began = time.monotonic()
        try:
            prepared = _prepare(self.request.command, candidate_settings(self.settings, cand),
                                injector=cand.variant == INJECTOR_VARIANT)
        except ZludaRunnerError as exc:
            verdict = CandidateVerdict(cand, "plan", "fail", _one_line(exc.message),
                                       wall_s=time.monotonic() - began)
            # no run: no setting variant either; another HIP is another plan (a missing HIP library)
            hips = self.other_hips() if cand.variant == DEFAULTS else ()
            return self._done(verdict), [Candidate(cand.source, cand.ref, OTHER_HIP_VARIANT, h.path)
                                         for h in hips]
        self.prepared[cand] = prepared
        workload = Workload("zluda", tuple(prepared.argv), variant_env(prepared.env, cand.variant))
        available = not isinstance(self.source, NoTelemetry)
        runs, refs = run_sides(workload, self.reference, runs=self.request.runs, source=self.source,
                               thresholds=self.request.thresholds, interval_s=self.request.interval_s,
                               timeout=self.request.timeout)
        poc = judge(PocRequest(self.request.command, runs=self.request.runs, reference=self.request.reference,
                               thresholds=self.request.thresholds), runs, refs,
                    telemetry=self.telemetry, telemetry_available=available)
        release = prepared.plan.release
        verdict = CandidateVerdict(cand, "run", _status(poc, available), _why(poc, available),
                                   poc.criteria, (release.id or release.root) if release else None,
                                   time.monotonic() - began)
        variants: list[Candidate] = []
        if cand.variant == DEFAULTS and verdict.status != "pass" and prepared.facts is not None:
            same_os = prepared.host is None or prepared.host.same_os(prepared.plan.os)
            variants = variants_for(cand, prepared.plan, prepared.facts, self.other_hips() if same_os else ())
        return self._done(verdict), variants

    def other_hips(self) -> tuple[HipInstall, ...]:
        """The host's HIP installs of another version than the one a run takes by default (read once a
        search, under ``ZLUDA_RUNNER_ROOT`` where that names a fake tree)."""
        if self._other_hips is None:
            from zluda_runner.host.fs import ROOT_ENV, root_from_env
            from zluda_runner.host.hipchoice import other_hips

            root = root_from_env(self.base_env.get(ROOT_ENV) or "")
            self._other_hips = other_hips(root, self.base_env, sys.platform) if self.settings.hip is None \
                else ()
        return self._other_hips

    def _done(self, verdict: CandidateVerdict) -> CandidateVerdict:
        self.verdicts.append(verdict)
        self.say(f"find: {verdict.candidate.label}: {verdict.status.upper()} -- {verdict.why}")
        return verdict


def _prepare(command: Sequence[str], settings: Settings, *, injector: bool) -> PreparedRun:
    from zluda_runner.conduct.run import prepare_run

    return prepare_run(list(command), settings, injector=injector, on_warning=lambda _w: None)


def _status(report: PocReport, available: bool) -> CandidateStatus:
    judged = [c for c in report.criteria if available or c.name != "on the GPU"]
    if not all(c.passed for c in judged):
        return "fail"
    return "pass" if available else "unproven"


def _why(report: PocReport, available: bool) -> str:
    """The first criterion that failed and its detail (a crash: its signal or exit code and first error
    line; "right": the comparator's first difference), else what passed."""
    for c in report.criteria:
        if c.passed or (c.name == "on the GPU" and not available):
            continue
        if c.name == "ran":
            run = next(r for r in report.runs if not r.ok)
            return f"ran failed: {crash_text(run)}"
        detail = next((e for e in c.evidence if "differ" in e or "FAILED" in e), c.evidence[0] if c.evidence
                      else "")
        return f"{c.name} failed: {c.summary}" + (f" ({detail})" if detail else "")
    if not available:
        return f"ran, right, stable, speed pass; on the GPU not shown ({NOT_PROVEN_GPU})"
    return "every criterion passes"


def crash_text(run: PocRun) -> str:
    """A run that did not end well, named: the signal that killed it, else its exit code or error, and the
    first error line it wrote."""
    code = run.exit_code
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        what = f"killed by {name}"
    elif code is not None and code > 128 and code - 128 in {s.value for s in signal.Signals}:
        what = f"exit {code} ({signal.Signals(code - 128).name})"
    else:
        what = run.error or f"exit {code}"
    line = _first_error_line(run.stderr_tail)
    return f"{what}: {line}" if line else what


def _first_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    marked = [ln for ln in lines if "error" in ln.lower() or ln.startswith(("Traceback", "Fatal"))]
    return ((marked or lines or [""])[0])[:200]


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _lock(chosen: CandidateVerdict, verdicts: Sequence[CandidateVerdict], search: _Search,
          request: FindRequest) -> Lock:
    """The lock of ``chosen``: its release hashed where the run took it, its plan's mechanism and settings,
    the host, each criterion, every failed candidate, what was not proven."""
    from zluda_runner.plan.defaults_facts import read_host

    cand = chosen.candidate
    plan = search.prepared[cand].plan
    ref = plan.release
    root = Path(ref.root) if ref is not None else None
    sha = None
    if ref is not None and ref.id and cand.source != "dir":
        from zluda_runner.release.manifest import load_current_manifest

        try:
            release = load_current_manifest(search.settings.manifest, search.settings.cache_dir).find(ref.id)
            sha = next((a.sha256 for a in release.assets if a.name == ref.asset), None)
        except ZludaRunnerError:
            sha = None
    locked_release = LockedRelease(cand.source, cand.ref, ref.id if ref else None, ref.asset if ref else None,
                                   sha, str(root) if root else None, hash_tree(root) if root else ())
    ran = search.prepared[cand]
    host = ran.host or read_host(search.base_env)  # the host as the run read it: its HIP chosen
    changes = variant_changes(cand, host.quick.hip.text)
    settings = [LockedSetting(d.name, d.setting, d.applied, d.why_not or d.reason) for d in plan.defaults
                if d.name not in changes]
    settings += [LockedSetting(name, text, cand.variant != "cudnn-on", "find's variant")
                 for name, text in changes.items()]
    facts = host_facts(plan, host.quick)
    available = chosen.status == "pass"
    criteria = tuple(LockedCriterion(c.name, "not shown" if c.name == "on the GPU" and not available and
                                     not c.passed else c.status, c.summary, c.evidence)
                     for c in chosen.criteria)
    not_proven = () if available else (f"{NOT_PROVEN_GPU}: {search.telemetry}",)
    env_change = {k: v for k, v in variant_env(search.prepared[cand].env, cand.variant).items()
                  if search.prepared[cand].env.get(k) != v}
    return Lock(
        release=locked_release, variant=cand.variant, mechanism=launch_mechanism(plan, cand.variant),
        settings=tuple(settings), host=facts, workload=request.command, criteria=criteria,
        failed=tuple(FailedCandidate(v.candidate.label, v.stage, v.why)
                     for v in verdicts if v.status == "fail"),
        proven_on_gpu=available, not_proven=not_proven, env=env_change, zluda_runner=__version__,
    )
