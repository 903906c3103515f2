"""The shim plan's records: bindings, placements, the release it came from, verdict words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.version import JSON_SCHEMA_VERSION

Verdict = Literal["ok", "warn", "fatal"]
OK: Final = "ok"
WARN: Final = "warn"
FATAL: Final = "fatal"
SEVERITY: dict[Verdict, int] = {OK: 0, WARN: 1, FATAL: 2}

Action = Literal["replace", "keep", "missing", "unbound"]
REPLACE: Final = "replace"
KEEP: Final = "keep"
MISSING: Final = "missing"
# the release's stand-in is not bound (a host library it needs is missing): NVIDIA's own loads instead
UNBOUND: Final = "unbound"

# NVIDIA's own library keeps working on top of ZLUDA's driver (it only calls the runtime/driver API
# or compiles on the CPU); nothing to replace.
KEEP_FAMILIES = {
    "cudart", "curand", "cusolver", "cusolverMg", "nvrtc", "nvrtc-builtins", "nvjitlink",
    "cupti", "nvtx", "cufile", "nvshmem", "cusparseLt",
}

# What the workload loses without ZLUDA's library for an optional family (the release has no stand-in,
# or its stand-in is not bound: plan.unbound): the family's name as users know it, and what fails.
OPTIONAL_LOSSES: dict[str, tuple[str, str]] = {
    "cublasLt": ("cuBLASLt", "torch's addmm fast path must be switched off (DISABLE_ADDMM_CUDA_LT=1: an "
                 "applied default, see 'applied for you')"),
    "cudnn": ("cuDNN", "convolutions through cuDNN would fail unless torch's cuDNN is switched off inside "
              "the workload (torch.backends.cudnn.enabled = False: the cudnn-off default; 'applied for "
              "you' says whether it is)"),
    "cufft": ("cuFFT", "torch.fft on the GPU fails"),
    "cufftw": ("cuFFTW", "FFTW-style FFT calls fail"),
    "cusparse": ("cuSPARSE", "sparse tensor ops on the GPU fail"),
    "nccl": ("NCCL", "distributed training with the nccl backend (torchrun) fails; use the gloo backend"),
    "nvml": ("NVML", "GPU memory/utilisation queries (torch.cuda.mem_get_info via NVML, nvidia-smi style "
             "tools) fail or report nothing"),
}

# What the workload loses when a release has no stand-in for a family, and how bad that is: fatal only
# for the driver and cuBLAS, without which a CUDA torch does nothing on an AMD GPU.
MISSING_CONSEQUENCE: dict[str, tuple[Verdict, str]] = {
    "driver": (FATAL, "no ZLUDA driver library: every CUDA call would go to NVIDIA's driver, which is "
               "not there on an AMD machine"),
    "cublas": (FATAL, "matrix multiplies (torch.mm, nn.Linear, attention) would run NVIDIA's cuBLAS "
               "kernels, which cannot run on an AMD GPU"),
    **{family: (WARN, f"no {name} stand-in: {lost}") for family, (name, lost) in OPTIONAL_LOSSES.items()},
}


def is_optional(family: str) -> bool:
    """Does a CUDA torch run without ZLUDA's library for ``family`` (everything but the driver and
    cuBLAS)? Such a stand-in whose own host library is missing is not bound rather than fatal."""
    return MISSING_CONSEQUENCE.get(family, (WARN, ""))[0] != FATAL


ADDMM_LT_ENV = "DISABLE_ADDMM_CUDA_LT"

# What child processes (torchrun workers, subprocesses) inherit from the launch.
INHERITED_VARIABLES = (
    "LD_LIBRARY_PATH", "LD_AUDIT", "LD_PRELOAD", "ZLUDA_RUNNER_REDIRECT_MAP", "PATH",
    ADDMM_LT_ENV, "ZLUDA_NVRTC_LIB", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
)

# How a replacement reaches the loader: Linux (links first on LD_LIBRARY_PATH, an LD_AUDIT redirector),
# Windows (a copy placed in torch/lib, loaded by full path first, the release's injector), or nothing.
Mechanism = Literal["ld_library_path", "ld_audit", "dll_placement", "path", "preload", "injector", "none"]
MECH_LD_LIBRARY_PATH: Final = "ld_library_path"
MECH_LD_AUDIT: Final = "ld_audit"
MECH_DLL_PLACEMENT: Final = "dll_placement"
MECH_PATH: Final = "path"
MECH_PRELOAD: Final = "preload"  # loaded by full path before the workload (launch.windows.preload)
MECH_INJECTOR: Final = "injector"  # the release's zluda.exe starts the program with ZLUDA loaded
MECH_NONE: Final = "none"

# How zluda-run's start-up code runs inside a Windows Python workload (StartupHook.kind).
HookKind = Literal["sitecustomize", "pth"]
HOOK_SITECUSTOMIZE: Final = "sitecustomize"  # a private folder first on PYTHONPATH (in the cache)
HOOK_PTH: Final = "pth"  # an inert .pth line in a site-packages folder the ._pth lists


def worst(verdicts: tuple[Verdict, ...] | list[Verdict]) -> Verdict:
    """The most severe of ``verdicts`` (``ok`` for none)."""
    return max(verdicts, key=lambda v: SEVERITY[v], default=OK)


@dataclass(frozen=True)
class Binding(JsonMixin):
    """One needed library and what the plan does about it."""

    need: str
    family: str
    action: Action
    shim: str | None
    load_name: str | None
    mechanism: Mechanism
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    requested_by: tuple[str, ...] = ()
    found_now: str | None = None  # where the loader takes it from without ZLUDA
    found_now_via: str | None = None
    problems: tuple[str, ...] = ()  # the reasons behind a warn/fatal verdict
    stub: str | None = None  # the shim stands in by name only: what fails, and the source (the manifest's)


@dataclass(frozen=True)
class WindowsPlacement(JsonMixin):
    """A shim copied into torch/lib under the needed name (original kept for restore)."""

    source: str
    dest_name: str
    backup_name: str | None = None


@dataclass(frozen=True)
class StartupHook(JsonMixin):
    """Windows, a Python workload: how zluda-run's start-up code runs before the workload's first line
    (it loads ``preload`` by full path; with ``--verify-load`` it lists the process's modules at exit).

    ``kind``: ``sitecustomize`` (a private folder first on ``PYTHONPATH``, in the cache) or ``pth`` (an
    inert ``.pth`` file in ``folder``, a site-packages folder the interpreter's ``._pth`` lists, acting
    only while zluda-run's variable is set; journaled, ``zluda-run restore`` removes it)."""

    kind: HookKind
    folder: str | None = None
    preload: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class AppliedDefault(JsonMixin):
    """One setting a ZLUDA launch needs that zluda-run applies for the user (``plan.defaults``), with
    the fact it follows and where that fact comes from; ``applied`` is False where the user's own
    setting wins or the defaults are switched off (``--no-defaults``), so the plan still shows it."""

    name: str  # stable key, e.g. "sdpa-fused-off", "cudnn-off", "addmm-lt-off", "dedicated-gpu"
    setting: str  # what is set, as the workload sees it: "DISABLE_ADDMM_CUDA_LT=1", "torch.backends..."
    vehicle: str  # "env" (launch environment), "startup" (start-up code inside the Python workload), "info"
    reason: str  # the fact that calls for it, in words
    source: str  # where the fact comes from (a URL, an issue, a manifest field)
    applied: bool = True
    why_not: str | None = None  # when not applied: the user's own value, "defaults off", ...


@dataclass(frozen=True)
class ReleaseRef(JsonMixin):
    id: str | None
    version: str | None
    flavour: str | None
    asset: str | None
    root: str


@dataclass(frozen=True)
class PlanTarget(JsonMixin):
    """What the plan was made for: an interpreter's torch, or one binary (or an uninspected command)."""

    python: str | None = None
    torch: str | None = None  # torch's version
    cuda: str | None = None  # the CUDA version torch was built for
    torch_path: str | None = None
    binary: str | None = None


@dataclass(frozen=True)
class RecordRefs:
    """What the results store files a run under, from the run's own context: its release and target
    (:func:`recorded_refs`) and the host it ran on (``QuickFacts.fingerprint``)."""

    release: dict[str, object] | None
    target: dict[str, object] | None
    host: dict[str, str | None]


def recorded_refs(release: ReleaseRef | None, target: PlanTarget,
                  argv: Sequence[str] = ()) -> tuple[dict[str, object] | None, dict[str, object]]:
    """A run's release (a ``--zluda-dir`` has no id: ``zluda-dir``) and target (its torch's version and CUDA
    major, else the binary), as the results store records them."""
    named: dict[str, object] | None = None
    if release is not None:
        named = {"id": release.id or "zluda-dir", "asset": release.asset}
    major = (target.cuda or "").split(".")[0]
    if target.torch:
        return named, {"torch_version": target.torch, "cuda_major": int(major) if major.isdigit() else None}
    return named, {"binary": target.binary or (argv[0] if argv else None)}


@dataclass(frozen=True)
class ShimPlan(JsonMixin):
    """Everything ``zluda-run`` will do, and why, before it does it. Frozen: a variant (a traced launch,
    a provisional plan) is made with ``dataclasses.replace``."""

    schema: int = JSON_SCHEMA_VERSION
    release: ReleaseRef | None = None
    target: PlanTarget = field(default_factory=PlanTarget)
    os: str = "linux"
    bindings: tuple[Binding, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    link_map: Mapping[str, str] = field(default_factory=dict)  # name -> shim, for the LD_LIBRARY_PATH folder
    redirect_map: Mapping[str, str] = field(default_factory=dict)  # name -> shim, for the LD_AUDIT redirector
    audit_library: str | None = None  # "ours" or the release's zluda_ld path
    audit_why: str | None = None  # why that audit library (the release's zluda_ld only where it works)
    library_path: tuple[str, ...] = ()  # ROCm folders the shims need, after the links
    path_prepend: tuple[str, ...] = ()
    placements: tuple[WindowsPlacement, ...] = ()
    startup_hook: StartupHook | None = None  # Windows Python workloads (plan.windows)
    defaults: tuple[AppliedDefault, ...] = ()  # applied for the user
    inherited: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    provisional: bool = False  # made from the manifest alone: the release is not downloaded yet

    @property
    def verdict(self) -> Verdict:
        return worst([b.verdict for b in self.bindings])

    def refs(self) -> tuple[dict[str, object] | None, dict[str, object]]:
        """The release and the target, as the results store records them (:func:`recorded_refs`)."""
        return recorded_refs(self.release, self.target, self.argv)

    @property
    def fatal(self) -> list[Binding]:
        return [b for b in self.bindings if b.verdict == FATAL]

    def to_dict(self) -> dict[str, object]:
        data = super().to_dict()
        data["verdict"] = self.verdict
        return data


