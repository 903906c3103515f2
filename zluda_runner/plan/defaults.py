"""The settings a ZLUDA launch needs, applied for the user (``plan.defaults``), each with its fact and
source: what SD.Next, ComfyUI-Zluda and the fork's README tell users to set by hand.

Pure: :func:`compute_defaults` maps :class:`DefaultsFacts` (the release, the target torch, the host's
GPUs and MIOpen, the user's environment; gathered by :mod:`zluda_runner.plan.defaults_facts`) to a
tuple of :class:`~zluda_runner.plan.model.AppliedDefault`. A default whose fact is absent is not
listed; one the user's own value overrides, or that ``--no-defaults`` (or
``ZLUDA_RUNNER_DEFAULTS_OFF=name,...``) switches off, is listed with ``applied=False`` and why.

Vehicles: ``env`` (the launch environment, through ``plan.env``), ``startup`` (zluda-run's start-up code
inside the Python workload applies torch's own switches once ``import torch`` has finished:
:mod:`zluda_runner.launch.startup`; it reads which from :data:`TORCH_DEFAULTS_ENV`), ``info`` (shown
only: the device identity the release reports).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from zluda_runner.core.serial import JsonMixin
from zluda_runner.plan.model import ADDMM_LT_ENV, INHERITED_VARIABLES, AppliedDefault, ShimPlan

TORCH_DEFAULTS_ENV = "ZLUDA_RUNNER_TORCH_DEFAULTS"  # the start-up defaults to apply, comma-separated
SWITCH_OFF_ENV = "ZLUDA_RUNNER_DEFAULTS_OFF"  # names of defaults the user switches off, comma-separated

SDPA_OFF, CUDNN_OFF, PINNED_OFF, ADDMM_LT_OFF, DEDICATED_GPU, DEVICE_IDENTITY = (
    "sdpa-fused-off", "cudnn-off", "pinned-memory-off", "addmm-lt-off", "dedicated-gpu", "device-identity")
VEHICLE_ENV, VEHICLE_STARTUP, VEHICLE_INFO = "env", "startup", "info"
STARTUP_NAMES = (SDPA_OFF, CUDNN_OFF, PINNED_OFF)  # what the start-up code knows how to apply

SRC_FORK_README = ("lshqqytiger/ZLUDA README (PyTorch: disable flash and memory-efficient SDPA, keep math: "
                   "torch.backends.cuda.enable_flash_sdp(False), enable_mem_efficient_sdp(False))")
SRC_626 = "vosen/ZLUDA#626 (fused scaled_dot_product_attention gives silently wrong results)"
SRC_CUDNN = ("the manifest's caveat of the fork releases (cuDNN must be disabled, "
             "torch.backends.cudnn.enabled = False, unless the nightly build and MIOpen are present); "
             "ZLUDA's cuDNN runs on MIOpen")
SRC_ADDMM = ("torch >= 2.4 routes addmm/linear through cuBLASLt unless DISABLE_ADDMM_CUDA_LT=1 "
             "(pytorch aten/src/ATen/native/cuda/Blas.cpp); the manifest's caveat of the fork releases "
             "(torch > 2.4 needs DISABLE_ADDMM_CUDA_LT=1 unless cuBLASLt is shimmed)")
SRC_PINNED = ("the manifest's unimplemented functions of the release (vosen/ZLUDA zluda/src/lib.rs: "
              "cuMemAllocHost, cuMemHostRegister are stubs); patientx/ComfyUI-Zluda comfyui-n.bat@8622f33e "
              "runs ComfyUI with --disable-pinned-memory (\"the cause of many recent problems with "
              "generation using zluda\"), whose pinning is torch.cuda.cudart().cudaHostRegister "
              "(comfy/model_management.py@8622f33e)")
SRC_GPU = ("vosen/ZLUDA#218, patientx/ComfyUI-Zluda#231 (an APU's integrated GPU is device 0 and the "
           "workload runs there, or fails)")
USER_GPU_VARS = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
# why_not of every default when the defaults are off (``--no-defaults``, ``Options(defaults=False)``): a
# neutral word in the record, which each front end renders in its own (report.plan_view: the flag)
DEFAULTS_OFF = "defaults off"


@dataclass(frozen=True)
class HostGpu(JsonMixin):
    """One AMD GPU as HIP numbers it, and the fact that says whether it is integrated."""

    index: int
    name: str
    gfx: str | None
    integrated: bool
    why: str  # e.g. "KFD node 1: cpu_cores_count 16 (an APU)"


@dataclass(frozen=True)
class ComputeIdentity(JsonMixin):
    """The compute capability a release reports, where that fact comes from, and its override."""

    text: str  # "8.8"
    override_env: str
    source: str


@dataclass(frozen=True)
class DefaultsFacts(JsonMixin):
    """Everything the defaults follow from (see the module doc)."""

    enabled: bool = True  # False: the defaults are off (--no-defaults, Options(defaults=False))
    os: str = "linux"
    python: bool = False  # a Python workload: start-up code can run in it
    startup_hook: bool = True  # (Windows) a start-up hook reaches this interpreter
    torch_version: str | None = None
    release_id: str | None = None
    flavour: str | None = None  # "upstream" | "fork" | None (a folder of one's own)
    served: tuple[str, ...] = ()  # families the release really serves this target (stubs excluded)
    served_files: Mapping[str, str] = field(default_factory=dict)  # family -> the release's file
    unbound: Mapping[str, str] = field(default_factory=dict)  # family -> the release's file, not bound
    miopen: str | None = None  # where MIOpen was found on the host
    miopen_looked: str | None = None  # what was looked at (None: not looked: another OS's plan)
    gpus: tuple[HostGpu, ...] = ()
    gpu_source: str | None = None  # "KFD topology" ...; None: not known on this host
    gpu_order_known: bool = True  # False: the list is not in HIP's device order (the Windows registry)
    identity: ComputeIdentity | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # the user's environment
    gpu_defaults: Mapping[str, str] = field(default_factory=dict)  # name -> why: the manifest's GPU rules
    # the pinned-memory functions the release does not implement (the manifest's ``unimplemented``)
    unpinned: tuple[str, ...] = ()


def _torch_at_least(version: str | None, want: tuple[int, int]) -> bool:
    parts = (version or "").split("+", 1)[0].split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= want
    except (ValueError, IndexError):
        return False


SWITCHABLE = (SDPA_OFF, CUDNN_OFF, PINNED_OFF, ADDMM_LT_OFF, DEDICATED_GPU)  # what SWITCH_OFF_ENV can name


def _names_switched_off(env: Mapping[str, str]) -> list[str]:
    return list(dict.fromkeys(n.strip() for n in env.get(SWITCH_OFF_ENV, "").split(",") if n.strip()))


def _switched_off(facts: DefaultsFacts) -> set[str]:
    return set(_names_switched_off(facts.env))


def switch_off_warning(env: Mapping[str, str]) -> str | None:
    """What is wrong with the user's ``ZLUDA_RUNNER_DEFAULTS_OFF``: a name no default has (a typo
    switches nothing off, and the default the user meant is still applied); None when nothing is."""
    unknown = [n for n in _names_switched_off(env) if n not in SWITCHABLE]
    if not unknown:
        return None
    named = ", ".join(repr(n) for n in unknown)
    return (f"{SWITCH_OFF_ENV} names no default that can be switched off: {named}; nothing was switched off "
            f"for it (the names: {', '.join(SWITCHABLE)})")


def _decide(facts: DefaultsFacts, entry: AppliedDefault, user_var: str | None = None) -> AppliedDefault:
    """``entry`` as decided: the user's own variable wins, then --no-defaults, then the per-name switch."""
    for var in (user_var,) if user_var else ():
        if var in facts.env:
            return replace(entry, applied=False, why_not=f"you set {var}={facts.env[var]}")
    if not facts.enabled:
        return replace(entry, applied=False, why_not=DEFAULTS_OFF)
    if entry.name in _switched_off(facts):
        return replace(entry, applied=False, why_not=f"switched off by {SWITCH_OFF_ENV}")
    return entry


def _startup_reach(facts: DefaultsFacts) -> str | None:
    """Why start-up code cannot run in this workload (None: it can)."""
    if not facts.python:
        return "the workload is not a Python program: zluda-run's start-up code cannot run in it"
    if facts.os == "windows" and not facts.startup_hook:
        return "nothing of zluda-run's runs inside this interpreter before the workload (see the plan)"
    return None


def _startup(facts: DefaultsFacts, entry: AppliedDefault) -> AppliedDefault:
    decided = _decide(facts, entry)
    blocked = _startup_reach(facts)
    if decided.applied and blocked:
        return replace(decided, applied=False, why_not=blocked)
    return decided


def _sdpa(facts: DefaultsFacts) -> AppliedDefault | None:
    if not _torch_at_least(facts.torch_version, (2, 0)):
        return None  # no torch, or one before scaled_dot_product_attention (2.0): nothing fused to switch off
    both = f"{SRC_FORK_README}; {SRC_626}"
    source = {"fork": SRC_FORK_README, "upstream": SRC_626}.get(facts.flavour or "", both)
    who = {"fork": "the fork's releases", "upstream": "the upstream releases"}.get(
        facts.flavour or "", "ZLUDA (the fork and upstream alike)")
    return _startup(facts, AppliedDefault(
        SDPA_OFF, "torch.backends.cuda.enable_flash_sdp(False), enable_mem_efficient_sdp(False), "
        "enable_cudnn_sdp(False); enable_math_sdp(True) kept", VEHICLE_STARTUP,
        f"{who} cannot run torch's fused attention kernels correctly: scaled_dot_product_attention uses "
        "the math path", source))


_UNBOUND = "a host library it needs is missing: see its binding in the plan"


def _cudnn(facts: DefaultsFacts) -> AppliedDefault | None:
    if not facts.torch_version:
        return None
    reasons = []
    if "cudnn" in facts.unbound:
        reasons.append(f"the release's {facts.unbound['cudnn']} is not bound ({_UNBOUND}): torch's "
                       "convolutions through NVIDIA's cuDNN would fail")
    elif "cudnn" not in facts.served:
        reasons.append("the release has no cuDNN stand-in for this torch: torch's convolutions through "
                       "NVIDIA's cuDNN would fail")
    if facts.miopen_looked is not None and facts.miopen is None:
        reasons.append(no_miopen_reason(facts.miopen_looked))
    if CUDNN_OFF in facts.gpu_defaults:
        reasons.append(facts.gpu_defaults[CUDNN_OFF])
    return cudnn_off(facts, reasons) if reasons else None


def no_miopen_reason(looked: str) -> str:
    """Why cuDNN goes off on a host without MIOpen (``looked``: where it was looked for)."""
    return f"this host has no MIOpen (looked for {looked}), which ZLUDA's cuDNN runs on"


def cudnn_off(facts: DefaultsFacts, reasons: Sequence[str]) -> AppliedDefault:
    """The ``cudnn-off`` default for ``reasons``, as decided for ``facts``: applied, or not and why (the
    user's switch, the defaults off, no start-up code in the workload)."""
    return _startup(facts, AppliedDefault(
        CUDNN_OFF, "torch.backends.cudnn.enabled = False", VEHICLE_STARTUP,
        "; ".join(reasons) + ": torch uses its own convolution kernels", SRC_CUDNN))


# What "pinned memory off" is inside torch (torch 2.13): ``Tensor.pin_memory()`` copies a CPU tensor into
# page-locked memory from the CUDA caching host allocator (aten/src/ATen/cuda/CachingHostAllocator.cpp:
# ``cudaHostAlloc``, or ``cudaHostRegister`` with PYTORCH_CUDA_ALLOC_CONF=pinned_use_cuda_host_register:True);
# ``DataLoader(pin_memory=True)`` calls it on every batch in a pinning thread
# (torch/utils/data/_utils/pin_memory.py). Off: ``pin_memory()`` returns the tensor as it is (pageable) and a
# DataLoader's ``pin_memory`` reads False. Values never change: pinning only lets a ``non_blocking=True``
# host-to-GPU copy overlap (from pageable memory the same copy is made synchronously).
def _pinned(facts: DefaultsFacts) -> AppliedDefault | None:
    if not facts.unpinned or not facts.torch_version:
        return None
    who = facts.release_id or "the release"
    return _startup(facts, AppliedDefault(
        PINNED_OFF, "Tensor.pin_memory() returns the tensor unpinned; DataLoader(pin_memory=True) runs "
        "unpinned", VEHICLE_STARTUP,
        f"{who} does not implement {' and '.join(facts.unpinned)}: pinned host memory made with them fails; "
        "unpinned copies give the same values, only without overlap", SRC_PINNED))


#: the first torch that routes addmm/linear through cuBLASLt (SRC_ADDMM)
ADDMM_LT_TORCH = "2.4"


def addmm_lt_off(facts: DefaultsFacts) -> AppliedDefault | None:
    """``addmm-lt-off`` for a torch from :data:`ADDMM_LT_TORCH` on that the release serves no cuBLASLt (or
    whose cuBLASLt stand-in is not bound), as decided for the user (None: it does not concern this run)."""
    if "cublasLt" in facts.served or not _torch_at_least(facts.torch_version, (2, 4)):
        return None
    serves = (f"the release's {facts.unbound['cublasLt']} is not bound ({_UNBOUND})" if "cublasLt" in
              facts.unbound else "the release serves no cuBLASLt for it")
    return _decide(facts, AppliedDefault(
        ADDMM_LT_OFF, f"{ADDMM_LT_ENV}=1", VEHICLE_ENV,
        f"torch {facts.torch_version} uses cuBLASLt for addmm and {serves}", SRC_ADDMM), ADDMM_LT_ENV)


def _gpu(facts: DefaultsFacts) -> AppliedDefault | None:
    integrated = [g for g in facts.gpus if g.integrated]
    dedicated = [g for g in facts.gpus if not g.integrated]
    if not integrated or not dedicated:
        return None
    chosen = ",".join(str(g.index) for g in dedicated)
    said = "; ".join(f"[{g.index}] {g.name or g.gfx or 'AMD GPU'}: {g.why}" for g in facts.gpus)
    entry = AppliedDefault(
        DEDICATED_GPU, f"HIP_VISIBLE_DEVICES={chosen}", VEHICLE_ENV,
        f"an integrated and a dedicated AMD GPU are both present ({facts.gpu_source or 'host'}: {said}): the "
        "dedicated one is shown to the workload as device 0", SRC_GPU)
    for var in USER_GPU_VARS:  # any of them is the user's own choice of device
        if var in facts.env:
            return replace(entry, applied=False, why_not=f"you set {var}={facts.env[var]}")
    if not facts.gpu_order_known:
        return replace(entry, setting="HIP_VISIBLE_DEVICES=<the dedicated GPU's index>", applied=False,
                       why_not=f"the {facts.gpu_source or 'host'} does not list GPUs in HIP's device order: "
                       "set HIP_VISIBLE_DEVICES yourself (`zluda-run doctor` lists HIP's devices)")
    return _decide(facts, entry)


def _identity(facts: DefaultsFacts) -> AppliedDefault | None:
    ident = facts.identity
    if ident is None:
        return None
    override = ident.override_env
    user = facts.env.get(override) if override else None
    if user:
        setting = f"compute capability {user} ({override}={user}, yours; the release's own is {ident.text})"
    else:
        hint = f" ({override}=MAJOR.MINOR overrides it)" if override else " (no override)"
        setting = f"compute capability {ident.text}{hint}"
    return AppliedDefault(
        DEVICE_IDENTITY, setting, VEHICLE_INFO,
        f"{facts.release_id or 'the release'} reports every AMD GPU as compute capability {ident.text} "
        "(torch.cuda.get_device_capability): a workload that checks capability sees that", ident.source)


def compute_defaults(facts: DefaultsFacts) -> tuple[AppliedDefault, ...]:
    """The defaults for ``facts``, in a fixed order (see the module doc)."""
    made = (_sdpa(facts), _cudnn(facts), _pinned(facts), addmm_lt_off(facts), _gpu(facts), _identity(facts))
    return tuple(d for d in made if d is not None)


def defaults_env(defaults: Sequence[AppliedDefault]) -> dict[str, str]:
    """The variables the applied defaults add to the launch: each ``env`` default's ``NAME=VALUE``, and
    :data:`TORCH_DEFAULTS_ENV` naming the ``startup`` ones for the start-up code."""
    env: dict[str, str] = {}
    for d in defaults:
        if d.applied and d.vehicle == VEHICLE_ENV:
            key, _, value = d.setting.partition("=")
            env[key] = value
    startup = [d.name for d in defaults if d.applied and d.vehicle == VEHICLE_STARTUP]
    if startup:
        env[TORCH_DEFAULTS_ENV] = ",".join(startup)
    return env


def plan_with_defaults(plan: ShimPlan, defaults: tuple[AppliedDefault, ...]) -> ShimPlan:
    """``plan`` with ``defaults`` and their variables in ``plan.env`` (the one place the launch
    environment comes from); what the plan's earlier defaults set is replaced, not kept."""
    earlier = defaults_env(plan.defaults)
    added = defaults_env(defaults)
    env = {k: v for k, v in plan.env.items() if k not in earlier or k in added}
    env.update(added)
    inherited = [v for v in plan.inherited if v in env or v not in earlier]
    inherited += [v for v in INHERITED_VARIABLES if v in added and v not in inherited]
    return replace(plan, defaults=tuple(defaults), env=env, inherited=tuple(inherited))
