"""The shim plan's records: bindings, placements, the release it came from, verdict words."""

from __future__ import annotations

from dataclasses import dataclass, field

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.core.serial import JsonMixin

OK, WARN, FATAL = "ok", "warn", "fatal"
SEVERITY = {OK: 0, WARN: 1, FATAL: 2}

REPLACE, KEEP, MISSING = "replace", "keep", "missing"

# NVIDIA's own library keeps working on top of ZLUDA's driver (it only calls the runtime/driver API
# or compiles on the CPU); nothing to replace.
KEEP_FAMILIES = {
    "cudart", "curand", "cusolver", "cusolverMg", "nvrtc", "nvrtc-builtins", "nvjitlink",
    "cupti", "nvtx", "cufile", "nvshmem", "cusparseLt",
}

# What the workload loses when a release has no stand-in for a family, and how bad that is.
MISSING_CONSEQUENCE: dict[str, tuple[str, str]] = {
    "driver": (FATAL, "no ZLUDA driver library: every CUDA call would go to NVIDIA's driver, which is "
               "not there on an AMD machine"),
    "cublas": (FATAL, "matrix multiplies (torch.mm, nn.Linear, attention) would run NVIDIA's cuBLAS "
               "kernels, which cannot run on an AMD GPU"),
    "cublasLt": (WARN, "no cuBLASLt stand-in: torch's addmm fast path must be switched off "
                 "(DISABLE_ADDMM_CUDA_LT=1, set for you)"),
    "cudnn": (WARN, "no cuDNN stand-in: convolutions through cuDNN fail; put "
              "`torch.backends.cudnn.enabled = False` at the top of the workload"),
    "cufft": (WARN, "no cuFFT stand-in: torch.fft on the GPU fails"),
    "cufftw": (WARN, "no cuFFTW stand-in: FFTW-style FFT calls fail"),
    "cusparse": (WARN, "no cuSPARSE stand-in: sparse tensor ops on the GPU fail"),
    "nccl": (WARN, "no NCCL stand-in: distributed training with the nccl backend (torchrun) fails; use "
             "the gloo backend"),
    "nvml": (WARN, "no NVML stand-in: GPU memory/utilisation queries (torch.cuda.mem_get_info via NVML, "
             "nvidia-smi style tools) fail or report nothing"),
}

ADDMM_LT_ENV = "DISABLE_ADDMM_CUDA_LT"

# What child processes (torchrun workers, subprocesses) inherit from the launch.
INHERITED_VARIABLES = (
    "LD_LIBRARY_PATH", "LD_AUDIT", "LD_PRELOAD", "ZLUDA_RUNNER_REDIRECT_MAP", "PATH",
    ADDMM_LT_ENV, "ZLUDA_NVRTC_LIB", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
)

MECH_LD_LIBRARY_PATH = "ld_library_path"
MECH_LD_AUDIT = "ld_audit"
MECH_DLL_PLACEMENT = "dll_placement"
MECH_PATH = "path"
MECH_NONE = "none"


@dataclass
class Binding(JsonMixin):
    """One needed library and what the plan does about it."""

    need: str
    family: str
    action: str  # replace | keep | missing
    shim: str | None
    load_name: str | None
    mechanism: str
    verdict: str  # ok | warn | fatal
    reasons: list[str] = field(default_factory=list)
    requested_by: list[str] = field(default_factory=list)
    found_now: str | None = None  # where the loader takes it from without ZLUDA
    found_now_via: str | None = None
    problems: list[str] = field(default_factory=list)  # the reasons behind a warn/fatal verdict


@dataclass
class WindowsPlacement(JsonMixin):
    """A shim copied into torch/lib under the needed name (original kept for restore)."""

    source: str
    dest_name: str
    backup_name: str | None = None


@dataclass
class StartupHook(JsonMixin):
    """Windows, a Python workload: how zluda-run's start-up code runs before the workload's first line
    (it loads ``preload`` by full path; with ``--verify-load`` it lists the process's modules at exit).

    ``kind``: ``sitecustomize`` (a private folder first on ``PYTHONPATH``, in the cache) or ``pth`` (an
    inert ``.pth`` file in ``folder``, a site-packages folder the interpreter's ``._pth`` lists, acting
    only while zluda-run's variable is set; journaled, ``zluda-run restore`` removes it)."""

    kind: str
    folder: str | None = None
    preload: list[str] = field(default_factory=list)
    why: str = ""


@dataclass(frozen=True)
class AppliedDefault(JsonMixin):
    """One setting a ZLUDA launch needs that zluda-run applies for the user (``plan.defaults``), with
    the fact it follows and where that fact comes from; ``applied`` is False where the user's own
    setting wins or the defaults are switched off (``--no-defaults``), so the plan still shows it."""

    name: str  # stable key, e.g. "sdpa-fused-off", "cudnn-off", "addmm-lt-off", "dedicated-gpu"
    setting: str  # what is set, as the workload sees it: "DISABLE_ADDMM_CUDA_LT=1", "torch.backends..."
    vehicle: str  # "env" (the launch environment) or "startup" (start-up code inside the Python workload)
    reason: str  # the fact that calls for it, in words
    source: str  # where the fact comes from (a URL, an issue, a manifest field)
    applied: bool = True
    why_not: str | None = None  # when not applied: the user's own value, --no-defaults, ...


@dataclass
class ReleaseRef(JsonMixin):
    id: str | None
    version: str | None
    flavour: str | None
    asset: str | None
    root: str


@dataclass
class PlanTarget(JsonMixin):
    """What the plan was made for: an interpreter's torch, or one binary (or an uninspected command)."""

    python: str | None = None
    torch: str | None = None  # torch's version
    cuda: str | None = None  # the CUDA version torch was built for
    torch_path: str | None = None
    binary: str | None = None


@dataclass
class ShimPlan(JsonMixin):
    """Everything ``zluda-run`` will do, and why, before it does it."""

    schema: int = JSON_SCHEMA_VERSION
    release: ReleaseRef | None = None
    target: PlanTarget = field(default_factory=PlanTarget)
    os: str = "linux"
    bindings: list[Binding] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    link_map: dict[str, str] = field(default_factory=dict)  # name -> shim, for the LD_LIBRARY_PATH folder
    redirect_map: dict[str, str] = field(default_factory=dict)  # name -> shim, for the LD_AUDIT redirector
    audit_library: str | None = None  # "ours" or the release's zluda_ld path
    audit_why: str | None = None  # why that audit library (the release's zluda_ld only where it works)
    library_path: list[str] = field(default_factory=list)  # ROCm folders the shims need, after the links
    path_prepend: list[str] = field(default_factory=list)
    placements: list[WindowsPlacement] = field(default_factory=list)
    startup_hook: StartupHook | None = None  # Windows Python workloads (plan.windows)
    defaults: list[AppliedDefault] = field(default_factory=list)  # applied for the user
    inherited: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    provisional: bool = False  # made from the manifest alone: the release is not downloaded yet

    @property
    def verdict(self) -> str:
        worst = max((SEVERITY[b.verdict] for b in self.bindings), default=0)
        return {v: k for k, v in SEVERITY.items()}[worst]

    def refs(self) -> tuple[dict[str, object] | None, dict[str, object]]:
        """The release and the target, as the results store records them."""
        rel = self.release
        release: dict[str, object] | None = {"id": rel.id or "zluda-dir", "asset": rel.asset} if rel else None
        major = (self.target.cuda or "").split(".")[0]
        if self.target.torch:
            return release, {"torch_version": self.target.torch,
                             "cuda_major": int(major) if major.isdigit() else None}
        return release, {"binary": self.target.binary or (self.argv[0] if self.argv else None)}

    @property
    def fatal(self) -> list[Binding]:
        return [b for b in self.bindings if b.verdict == FATAL]

    def to_dict(self) -> dict[str, object]:
        data = super().to_dict()
        data["verdict"] = self.verdict
        return data


