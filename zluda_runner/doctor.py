"""``zluda-run doctor``: what this machine has (GPU, HIP/ROCm, driver, libraries) and what to fix.

Every filesystem read goes through :class:`HostFs`, which can be pointed at a fake
root (``--root DIR`` or ``$ZLUDA_RUNNER_ROOT``) so tests can build trees such as
``opt/rocm/.info/version`` and ``sys/class/kfd/kfd/topology/nodes/1/properties``.
Anything that runs code of the host (the HIP runtime, ``rocminfo``, the target
python) is skipped under a fake root unless injected.

Exit code contract (see :data:`EXIT_OK`, :data:`EXIT_FAILED`): 0 when no check
failed (warnings allowed; ``strict`` makes warnings count as failures), 3 when at
least one check failed.  1 stays "the doctor itself could not run" (a
:class:`~zluda_runner.core.errors.ZludaRunnerError`) and 2 is click's usage error.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import platform as _platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.core.errors import HostError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.units import format_bytes
from zluda_runner.host.compile_cache import CompileCacheInfo, compile_cache_dirs, inspect_compile_cache
from zluda_runner.host.gfx import (
    generation,
    gfx_from_target_version,
    hsa_version_to_gfx,
    is_rdna_or_newer,
    looks_integrated,
    normalize_gfx,
    override_for,
)
from zluda_runner.host.hip import HipInfo, format_hip_version, query_hip_isolated

ROOT_ENV = "ZLUDA_RUNNER_ROOT"
EXIT_OK = 0
EXIT_FAILED = 3
TOOL_TIMEOUT_S = 15.0
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
ENV_OF_INTEREST = (
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "HSA_OVERRIDE_GFX_VERSION",
    "ROCM_PATH",
    "HIP_PATH",
    "DISABLE_ADDMM_CUDA_LT",
    "ZLUDA_NVRTC_LIB",
    "AMD_LOG_LEVEL",
)


class Status(str, enum.Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass
class Check(JsonMixin):
    id: str
    status: Status
    message: str
    fix: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class GpuAgent(JsonMixin):
    index: int
    name: str
    gfx: str | None
    source: str  # "hip", "kfd", "rocminfo", "rocm_agent_enumerator", "registry"
    memory_bytes: int | None = None
    integrated: bool = False
    compute_units: int | None = None
    driver_version: str | None = None  # Windows registry only

    def label(self) -> str:
        bits = [self.gfx or "gfx unknown"]
        if self.memory_bytes:
            bits.append(format_bytes(self.memory_bytes))
        if self.integrated:
            bits.append("integrated")
        return f"[{self.index}] {self.name or 'AMD GPU'} ({', '.join(bits)})"


@dataclass
class RocmInstall(JsonMixin):
    kind: str  # "rocm" (Linux) or "hip-sdk" (Windows)
    path: Path
    version: str | None = None
    version_source: str | None = None

    @property
    def major_minor(self) -> tuple[int, int] | None:
        m = re.match(r"(\d+)\.(\d+)", self.version or "")
        return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass
class HostFacts(JsonMixin):
    os: str
    arch: str
    os_version: str
    python: str
    root: Path | None = None
    gpus: list[GpuAgent] = field(default_factory=list)
    gpu_source: str | None = None
    rocm: RocmInstall | None = None
    hip: HipInfo | None = None
    driver_version: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    gpu_search: list[str] = field(default_factory=list)
    compile_cache: CompileCacheInfo | None = None


@dataclass
class DoctorReport(JsonMixin):
    facts: HostFacts
    checks: list[Check] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    exit_code: int = EXIT_OK
    schema: int = JSON_SCHEMA_VERSION

    def count(self, status: Status) -> int:
        return sum(1 for c in self.checks if c.status is status)

    def check(self, check_id: str) -> Check | None:
        return next((c for c in self.checks if c.id == check_id), None)


# --------------------------------------------------------------------------- filesystem view


class HostFs:
    """Absolute host paths (POSIX or Windows) mapped under an optional fake root."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root

    def path(self, host_path: str | Path) -> Path:
        if self.root is None:
            return Path(host_path)
        text = str(host_path)
        pure = PureWindowsPath(text) if re.match(r"^[A-Za-z]:[\\/]", text) else PurePosixPath(text)
        parts = pure.parts[1:] if pure.anchor else pure.parts
        return self.root.joinpath(*parts)

    def read_text(self, host_path: str | Path) -> str | None:
        try:
            return self.path(host_path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def is_dir(self, host_path: str | Path) -> bool:
        return self.path(host_path).is_dir()

    def exists(self, host_path: str | Path) -> bool:
        return self.path(host_path).exists()

    def glob(self, host_dir: str | Path, pattern: str) -> list[Path]:
        folder = self.path(host_dir)
        try:
            return sorted(folder.glob(pattern)) if folder.is_dir() else []
        except OSError:
            return []


# --------------------------------------------------------------------------- options


HipQuery = Callable[[], HipInfo]
ToolRunner = Callable[[list[str]], str | None]


@dataclass
class DoctorOptions:
    root: Path | None = None
    env: Mapping[str, str] | None = None
    platform: str | None = None  # sys.platform value
    machine: str | None = None
    hip_query: HipQuery | None = None  # default: the real runtime, unless root is set
    run_tools: bool | None = None  # rocminfo / hipconfig; default: not under a fake root
    check_torch: bool | None = None  # default: not under a fake root
    python: str | None = None
    settings: Any = None  # zluda_runner.core.settings.Settings, for the release and cache checks
    strict: bool = False
    home: Path | None = None

    def resolved(self) -> DoctorOptions:
        fake = self.root is not None
        env = dict(os.environ) if self.env is None else dict(self.env)
        return DoctorOptions(
            root=self.root,
            env=env,
            platform=self.platform or sys.platform,
            machine=self.machine or _platform.machine(),
            hip_query=self.hip_query
            if self.hip_query is not None
            else (None if fake else functools.partial(query_hip_isolated, env=env)),
            run_tools=(not fake) if self.run_tools is None else self.run_tools,
            check_torch=(not fake) if self.check_torch is None else self.check_torch,
            python=self.python,
            settings=self.settings,
            strict=self.strict,
            home=self.home,
        )


def root_from_env(value: str | None = None) -> Path | None:
    raw = value if value is not None else os.environ.get(ROOT_ENV)
    if not raw:
        return None
    root = Path(raw).expanduser()
    if not root.is_dir():
        raise HostError(
            f"fake root {root} is not a folder", hint=f"pass an existing folder to --root (or {ROOT_ENV})"
        )
    return root


# --------------------------------------------------------------------------- GPU discovery


def gpus_from_hip(info: HipInfo) -> list[GpuAgent]:
    return [
        GpuAgent(
            index=d.index,
            name=d.name,
            gfx=d.gfx,
            source="hip",
            memory_bytes=d.total_memory_bytes,
            integrated=looks_integrated(d.gfx, d.name),
        )
        for d in info.devices
    ]


def _properties(text: str) -> dict[str, int]:
    props: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            props[parts[0]] = int(parts[1])
    return props


def gpus_from_kfd(fs: HostFs) -> list[GpuAgent]:
    """GPU agents of the KFD topology, in node order (the order ROCr enumerates them)."""
    nodes = [p for p in fs.glob(KFD_NODES, "*") if p.name.isdigit()]
    agents: list[GpuAgent] = []
    for node in sorted(nodes, key=lambda p: int(p.name)):
        try:
            props = _properties((node / "properties").read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        simd = props.get("simd_count", 0)
        gfx = gfx_from_target_version(props.get("gfx_target_version", 0))
        if simd <= 0 or gfx is None:
            continue  # a CPU node
        try:
            name = (node / "name").read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            name = ""
        per_cu = props.get("simd_per_cu", 0)
        memory = _kfd_local_memory(node)
        agents.append(
            GpuAgent(
                index=len(agents),
                name=name,
                gfx=gfx,
                source="kfd",
                memory_bytes=memory or None,
                # an APU's node has no VRAM bank (its memory is carved out of system RAM)
                integrated=looks_integrated(gfx, None, props.get("cpu_cores_count", 0)) or memory == 0,
                compute_units=simd // per_cu if per_cu else None,
            )
        )
    return agents


def _kfd_local_memory(node: Path) -> int | None:
    """Size of the node's VRAM banks (heap_type 1 = FB public, 2 = FB private); 0 for an APU,
    None when the node lists no memory banks at all."""
    banks = sorted((node / "mem_banks").glob("*/properties"))
    if not banks:
        return None
    total = 0
    for bank in banks:
        try:
            props = _properties(bank.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if props.get("heap_type") in (1, 2):
            total += props.get("size_in_bytes", 0)
    return total


def parse_rocminfo(text: str) -> list[GpuAgent]:
    """GPU agents from ``rocminfo`` output (blocks with ``Device Type: GPU``)."""
    agents: list[GpuAgent] = []
    for block in re.split(r"\n\*+\s*\nAgent \d+\s*\n\*+", text)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if sep and key not in fields:
                fields[key.strip()] = value.strip()
        if fields.get("Device Type") != "GPU":
            continue
        gfx = normalize_gfx(fields.get("Name"))
        name = fields.get("Marketing Name") or fields.get("Name", "")
        agents.append(
            GpuAgent(
                index=len(agents),
                name=name,
                gfx=gfx,
                source="rocminfo",
                integrated=looks_integrated(gfx, name),
            )
        )
    return agents


def parse_agent_enumerator(text: str) -> list[GpuAgent]:
    """``rocm_agent_enumerator`` prints one gfx per agent; ``gfx000`` is the CPU."""
    agents: list[GpuAgent] = []
    for line in text.split():
        gfx = normalize_gfx(line)
        if gfx and gfx != "gfx000":
            agents.append(
                GpuAgent(
                    index=len(agents),
                    name="",
                    gfx=gfx,
                    source="rocm_agent_enumerator",
                    integrated=looks_integrated(gfx),
                )
            )
    return agents


def run_tool(argv: list[str]) -> str | None:
    """Run a host tool and return its stdout, or None when it is absent, fails or hangs."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def windows_registry_gpus() -> list[GpuAgent]:  # pragma: no cover - Windows only
    """AMD display adapters from the Windows registry (no gfx there; HIP is preferred)."""
    if sys.platform != "win32":
        return []
    import winreg

    key_path = r"SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
    agents: list[GpuAgent] = []
    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key_path) as cls:
            for i in range(winreg.QueryInfoKey(cls)[0]):
                sub = winreg.EnumKey(cls, i)
                if not sub.isdigit():
                    continue
                try:
                    with winreg.OpenKey(cls, sub) as dev:
                        provider = str(winreg.QueryValueEx(dev, "ProviderName")[0])
                        desc = str(winreg.QueryValueEx(dev, "DriverDesc")[0])
                        try:
                            memory = int(winreg.QueryValueEx(dev, "HardwareInformation.qwMemorySize")[0])
                        except OSError:
                            memory = None
                        try:
                            driver = str(winreg.QueryValueEx(dev, "DriverVersion")[0])
                        except OSError:
                            driver = None
                except OSError:
                    continue
                if "advanced micro devices" in provider.lower() or "amd" in desc.lower():
                    agents.append(
                        GpuAgent(
                            index=len(agents),
                            name=desc,
                            gfx=None,
                            source="registry",
                            memory_bytes=memory,
                            integrated=looks_integrated(None, desc),
                            driver_version=driver,
                        )
                    )
    except OSError:
        return []
    return agents


# --------------------------------------------------------------------------- ROCm / HIP SDK


def find_rocm(
    fs: HostFs, env: Mapping[str, str], platform: str, tools: ToolRunner | None
) -> RocmInstall | None:
    if platform == "win32":
        return _find_hip_sdk(fs, env)
    candidates: list[str] = []
    for var in ("ROCM_PATH", "HIP_PATH"):
        if env.get(var):
            candidates.append(env[var])
    candidates.append("/opt/rocm")
    versioned = sorted(fs.glob("/opt", "rocm-*"), key=lambda p: _version_key(p.name[5:]), reverse=True)
    candidates.extend(f"/opt/{p.name}" for p in versioned)
    for cand in candidates:
        if not fs.is_dir(cand):
            continue
        text = fs.read_text(f"{cand}/.info/version")
        if text and text.strip():
            return RocmInstall("rocm", Path(cand), text.strip().splitlines()[0], f"{cand}/.info/version")
        if tools is not None:
            out = tools([str(fs.path(f"{cand}/bin/hipconfig")), "--version"])
            if out and out.strip():
                return RocmInstall("rocm", Path(cand), out.strip().splitlines()[0], "hipconfig --version")
        m = re.search(r"rocm-(\d+\.\d+(?:\.\d+)?)", cand)
        return RocmInstall("rocm", Path(cand), m.group(1) if m else None, "folder name" if m else None)
    return None


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)) or (0,)


def _find_hip_sdk(fs: HostFs, env: Mapping[str, str]) -> RocmInstall | None:
    paths: list[tuple[str, str]] = []
    if env.get("HIP_PATH"):
        paths.append((env["HIP_PATH"], "HIP_PATH"))
    for var in sorted((k for k in env if re.fullmatch(r"HIP_PATH_\d+", k)), reverse=True):
        paths.append((env[var], var))
    program_files = env.get("ProgramFiles", r"C:\Program Files")
    base = f"{program_files}\\AMD\\ROCm"
    for folder in sorted(fs.glob(base, "*"), key=lambda p: _version_key(p.name), reverse=True):
        paths.append((f"{base}\\{folder.name}", "Program Files"))
    for raw, source in paths:
        if fs.is_dir(raw):
            folder_name = PureWindowsPath(raw.rstrip("\\/")).name
            m = re.match(r"\d+\.\d+", folder_name)
            return RocmInstall("hip-sdk", Path(raw), m.group(0) if m else None, source)
    return None


def library_dirs(rocm: RocmInstall) -> dict[str, str]:
    base = str(rocm.path).rstrip("\\/")
    if rocm.kind == "hip-sdk":
        return {
            "rocblas": f"{base}\\bin\\rocblas\\library",
            "hipblaslt": f"{base}\\bin\\hipblaslt\\library",
            "miopen_dir": f"{base}\\bin",
            "miopen_glob": "MIOpen*.dll",
            "hip_dir": f"{base}\\bin",
            "hip_glob": "amdhip64*.dll",
        }
    return {
        "rocblas": f"{base}/lib/rocblas/library",
        "hipblaslt": f"{base}/lib/hipblaslt/library",
        "miopen_dir": f"{base}/lib",
        "miopen_glob": "libMIOpen.so*",
        "hip_dir": f"{base}/lib",
        "hip_glob": "libamdhip64.so*",
    }


def _files_for_gfx(fs: HostFs, folder: str, gfx: str, prefix: str = "") -> list[str]:
    pattern = re.compile(re.escape(gfx) + r"(?![0-9a-f])")
    return [p.name for p in fs.glob(folder, f"{prefix}*") if pattern.search(p.name)]


# --------------------------------------------------------------------------- the doctor


def run_doctor(options: DoctorOptions | None = None) -> DoctorReport:
    """Gather host facts and run every check.  Never raises for a missing GPU/ROCm/torch."""
    opts = (options or DoctorOptions()).resolved()
    assert opts.env is not None and opts.platform is not None and opts.machine is not None
    env = opts.env
    fs = HostFs(opts.root)
    tools: ToolRunner | None = run_tool if opts.run_tools else None
    facts = HostFacts(
        os={"win32": "windows", "darwin": "macos"}.get(opts.platform, opts.platform),
        arch=opts.machine,
        os_version=_platform.release(),
        python=sys.version.split()[0],
        root=opts.root,
        env={k: env[k] for k in ENV_OF_INTEREST if env.get(k)},
    )
    report = DoctorReport(facts=facts)
    report.checks.append(_check_platform(facts))

    facts.rocm = find_rocm(fs, env, opts.platform, tools)
    _discover_gpus(report, fs, opts, tools)
    report.checks.append(_check_gpu(facts, fs, opts.platform))
    target = _target_gpu(facts.gpus, env) if facts.gpus else None
    if target is not None:
        report.checks.append(_check_arch(target))
        report.checks.append(_check_device_order(facts.gpus, target, opts.platform))
    elif facts.gpus:
        report.checks.append(_check_hidden_gpus(env))
        report.skipped.append("gpu_arch")
    else:
        report.skipped += ["gpu_arch", "device_order"]
    if opts.platform.startswith("linux"):
        report.checks.append(_check_driver(facts, fs))
    elif opts.platform == "win32":
        report.checks.append(_check_windows_driver(facts))
    report.checks.append(_check_hip_runtime(facts, fs))
    report.checks.append(_check_rocm(facts, opts.platform))
    _library_checks(report, fs, env, opts.platform)
    torch: Check | None = None
    if opts.check_torch:
        torch = _check_torch(opts)
        report.checks.append(torch)
    else:
        report.skipped.append("torch")
    report.checks.extend(_integration_checks(report, opts, torch))
    dirs = [fs.path(d) for d in compile_cache_dirs(opts.platform, env, opts.home)]
    facts.compile_cache = inspect_compile_cache(dirs)
    report.checks.append(_check_compile_cache(facts.compile_cache))

    failed = report.count(Status.FAIL) + (report.count(Status.WARN) if opts.strict else 0)
    report.exit_code = EXIT_FAILED if failed else EXIT_OK
    return report


def _discover_gpus(report: DoctorReport, fs: HostFs, opts: DoctorOptions, tools: ToolRunner | None) -> None:
    facts = report.facts
    tried: list[str] = []
    if opts.hip_query is not None:
        facts.hip = opts.hip_query()
        if facts.hip.devices:
            facts.gpus, facts.gpu_source = gpus_from_hip(facts.hip), "hip"
            return
        tried.append(f"HIP: {facts.hip.error or 'no devices'}")
    else:
        report.skipped.append("hip_query")
    if opts.platform.startswith("linux"):
        kfd = gpus_from_kfd(fs)
        if kfd:
            facts.gpus, facts.gpu_source = kfd, "kfd"
            return
        tried.append("KFD topology: no GPU node")
    if tools is not None:
        rocm_bin = f"{facts.rocm.path}/bin" if facts.rocm else None
        for tool, parser in (("rocminfo", parse_rocminfo), ("rocm_agent_enumerator", parse_agent_enumerator)):
            exe = shutil.which(tool, path=rocm_bin) if rocm_bin else None
            exe = exe or shutil.which(tool)
            if exe is None:
                tried.append(f"{tool}: not found")
                continue
            out = tools([exe])
            found = parser(out) if out else []
            if found:
                facts.gpus, facts.gpu_source = found, tool
                return
            tried.append(f"{tool}: no GPU agent")
    if opts.platform == "win32" and opts.root is None:
        found = windows_registry_gpus()
        if found:
            facts.gpus, facts.gpu_source = found, "registry"
            return
        tried.append("registry: no AMD display adapter")
    facts.gpu_search = tried


def visible_gpus(gpus: list[GpuAgent], env: Mapping[str, str]) -> list[GpuAgent]:
    """The devices HIP (and ZLUDA) will show, in order: ``ROCR_VISIBLE_DEVICES`` filters the
    agents, then ``HIP_VISIBLE_DEVICES`` (or ``CUDA_VISIBLE_DEVICES``) picks among those.
    Non-numeric entries (UUIDs) are not modelled: such a list leaves the order as it is."""
    visible = list(gpus)
    for value in (
        env.get("ROCR_VISIBLE_DEVICES"),
        env.get("HIP_VISIBLE_DEVICES") or env.get("CUDA_VISIBLE_DEVICES"),
    ):
        if not value:  # unset or empty: no selection
            continue
        entries = [e.strip() for e in value.split(",") if e.strip()]
        if not all(e.isdigit() for e in entries):
            continue
        picked: list[GpuAgent] = []
        for e in entries:
            # HIP stops at the first invalid index
            if int(e) >= len(visible):
                break
            picked.append(visible[int(e)])
        visible = picked
    return visible


def _target_gpu(gpus: list[GpuAgent], env: Mapping[str, str]) -> GpuAgent | None:
    """The device HIP (and ZLUDA) will use as device 0; None when the settings hide every GPU."""
    visible = visible_gpus(gpus, env)
    return visible[0] if visible else None


def _effective_gfx(gpu: GpuAgent, env: Mapping[str, str], platform: str) -> str | None:
    override = env.get("HSA_OVERRIDE_GFX_VERSION")
    if override and platform.startswith("linux"):
        return hsa_version_to_gfx(override) or gpu.gfx
    return gpu.gfx


def _check_platform(facts: HostFacts) -> Check:
    arch = facts.arch.lower()
    if facts.os == "macos":
        return Check(
            "platform",
            Status.FAIL,
            f"macOS ({facts.arch}): ZLUDA has no macOS support",
            "Use Linux or Windows on a machine with an AMD Radeon GPU.",
        )
    if facts.os not in ("linux", "windows"):
        return Check(
            "platform",
            Status.FAIL,
            f"{facts.os} is not a platform ZLUDA is built for",
            "Use Linux or Windows (x86-64).",
        )
    if arch not in ("x86_64", "amd64"):
        return Check(
            "platform",
            Status.FAIL,
            f"{facts.os} on {facts.arch}: ZLUDA builds are x86-64 only",
            "Use an x86-64 machine.",
        )
    return Check("platform", Status.OK, f"{facts.os} {facts.arch} (kernel/OS {facts.os_version})")


def _check_gpu(facts: HostFacts, fs: HostFs, platform: str) -> Check:
    if facts.gpus:
        labels = "; ".join(g.label() for g in facts.gpus)
        return Check(
            "gpu",
            Status.OK,
            f"{len(facts.gpus)} AMD GPU(s) via {facts.gpu_source}: {labels}",
            details={"gpus": [g.to_dict() for g in facts.gpus]},
        )
    searched = "; ".join(facts.gpu_search)
    if platform == "win32":
        fix = (
            "Install the current AMD Adrenalin driver and the AMD HIP SDK "
            "(https://www.amd.com/en/developer/resources/rocm-hub/hip-sdk.html)."
        )
    elif fs.exists("/dev/kfd"):
        fix = (
            "/dev/kfd exists but no GPU agent is visible: add your user to the render and video groups "
            "(sudo usermod -aG render,video $USER, then log in again) and check `rocminfo`."
        )
    else:
        fix = (
            "Install an AMD GPU with its amdgpu driver and ROCm "
            "(https://rocm.docs.amd.com/projects/install-on-linux/); in a container pass "
            "--device=/dev/kfd --device=/dev/dri."
        )
    return Check("gpu", Status.FAIL, f"No AMD GPU found ({searched or 'nothing to ask'})", fix)


def _check_arch(gpu: GpuAgent) -> Check:
    if gpu.gfx is None:
        return Check(
            "gpu_arch",
            Status.WARN,
            f"Could not tell the gfx target of {gpu.name or 'the GPU'}",
            "Install the HIP runtime (ROCm / HIP SDK) so the doctor can ask it for gcnArchName.",
        )
    gen = generation(gpu.gfx)
    if is_rdna_or_newer(gpu.gfx):
        return Check(
            "gpu_arch",
            Status.OK,
            f"{gpu.gfx} ({gen}): RDNA1 or newer, supported by the ZLUDA rewrite",
            details={"gfx": gpu.gfx, "generation": gen},
        )
    return Check(
        "gpu_arch",
        Status.FAIL,
        f"{gpu.gfx} ({gen}) is older than RDNA1: the upstream ZLUDA rewrite needs an RX 5000 (RDNA1) "
        "or newer Radeon",
        "Use an RX 5000 series or newer GPU; Vega/Polaris/Instinct cards are not ZLUDA targets "
        "(use a native ROCm build of torch where ROCm supports the card).",
        details={"gfx": gpu.gfx, "generation": gen},
    )


def _check_hidden_gpus(env: Mapping[str, str]) -> Check:
    names = [v for v in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if v in env]
    settings = ", ".join(f"{v}={env[v]!r}" for v in names)
    return Check(
        "device_order",
        Status.FAIL,
        f"{settings} hides every AMD GPU: HIP and ZLUDA will see no device",
        f"Unset {' / '.join(names)} or give it a device index that exists (0 is the first GPU).",
        details={var: env[var] for var in names},
    )


def _check_device_order(gpus: list[GpuAgent], target: GpuAgent, platform: str) -> Check:
    discrete = [g for g in gpus if not g.integrated]
    if target.integrated and discrete:
        best = discrete[0]
        setter = "set" if platform == "win32" else "export"
        return Check(
            "device_order",
            Status.WARN,
            f"Device {target.index} is the integrated {target.name or target.gfx}; HIP and ZLUDA use it "
            f"before the discrete {best.name or best.gfx} (device {best.index})",
            f"{setter} HIP_VISIBLE_DEVICES={best.index} before running (or disable the iGPU in the BIOS).",
            details={"integrated": target.index, "discrete": best.index},
        )
    if target.integrated:
        return Check(
            "device_order",
            Status.OK,
            f"Only an integrated GPU ({target.label()}): it works, with shared system memory",
        )
    return Check(
        "device_order", Status.OK, f"Device {target.index} ({target.name or target.gfx}) is used first"
    )


def _check_driver(facts: HostFacts, fs: HostFs) -> Check:
    if not fs.is_dir("/sys/module/amdgpu"):
        return Check(
            "driver",
            Status.FAIL,
            "The amdgpu kernel module is not loaded",
            "Install the amdgpu driver (in-tree or amdgpu-dkms with firmware) and `sudo modprobe amdgpu`.",
        )
    version = (fs.read_text("/sys/module/amdgpu/version") or "").strip()
    facts.driver_version = f"amdgpu {version or '(in-tree)'}"
    kfd = fs.path("/dev/kfd")
    if not kfd.exists():
        return Check(
            "driver",
            Status.FAIL,
            "amdgpu is loaded but /dev/kfd is missing (no compute support)",
            "Use a kernel built with CONFIG_HSA_AMD; in a container pass --device=/dev/kfd.",
        )
    if not os.access(kfd, os.R_OK | os.W_OK):
        return Check(
            "driver",
            Status.FAIL,
            "/dev/kfd is not readable and writable by this user",
            "sudo usermod -aG render,video $USER, then log in again.",
        )
    return Check(
        "driver",
        Status.OK,
        f"amdgpu {version or '(in-tree)'}; /dev/kfd accessible",
        details={"amdgpu_version": version or None},
    )


def _check_windows_driver(facts: HostFacts) -> Check:
    registry = next((g.driver_version for g in facts.gpus if g.driver_version), None)
    hip_driver = format_hip_version(facts.hip.driver_version) if facts.hip is not None else None
    facts.driver_version = registry or (f"HIP driver {hip_driver}" if hip_driver else None)
    if facts.driver_version:
        return Check("driver", Status.OK, f"AMD display driver {facts.driver_version}")
    return Check(
        "driver",
        Status.WARN,
        "Could not read the AMD display driver version",
        "Install the current AMD Adrenalin driver (it also provides the HIP runtime, amdhip64_6.dll).",
    )


def _check_hip_runtime(facts: HostFacts, fs: HostFs) -> Check:
    hip = facts.hip
    if hip is not None and hip.library:
        ver = hip.runtime_version_text or "unknown version"
        status = Status.OK if not hip.error else Status.WARN
        return Check(
            "hip_runtime",
            status,
            f"HIP runtime {hip.library} {ver}" + (f": {hip.error}" if hip.error else ""),
            None if not hip.error else "Check the driver (`dmesg | grep amdgpu`).",
            details={"runtime_version": hip.runtime_version, "driver_version": hip.driver_version},
        )
    found: list[Path] = []
    if facts.rocm is not None:
        dirs = library_dirs(facts.rocm)
        found = fs.glob(dirs["hip_dir"], dirs["hip_glob"])
    if found and hip is None:
        return Check(
            "hip_runtime",
            Status.OK,
            f"HIP runtime library present: {found[0].name}",
            details={"files": [p.name for p in found]},
        )
    why = hip.error if hip is not None and hip.error else "no libamdhip64 / amdhip64 DLL found"
    if found and facts.rocm is not None:
        # installed, but the loader does not find it by name -- nor will ZLUDA, which loads it that way
        where = library_dirs(facts.rocm)["hip_dir"]
        fix = (
            f"Add {where} to PATH (the HIP SDK installer normally does)."
            if facts.os == "windows"
            else f"echo {where} | sudo tee /etc/ld.so.conf.d/rocm.conf && sudo ldconfig "
            f"(or add {where} to LD_LIBRARY_PATH)."
        )
        return Check(
            "hip_runtime",
            Status.FAIL,
            f"{found[0].name} is installed in {where} but could not be loaded ({why})",
            fix,
            details={"files": [p.name for p in found]},
        )
    fix = (
        "Install the AMD HIP SDK (Windows) matching your ZLUDA build."
        if facts.os == "windows"
        else "Install the HIP runtime (e.g. `sudo apt install hip-runtime-amd` from the ROCm repository)."
    )
    return Check("hip_runtime", Status.FAIL, f"HIP runtime unavailable ({why})", fix)


def _check_rocm(facts: HostFacts, platform: str) -> Check:
    rocm = facts.rocm
    if rocm is None:
        if platform == "win32":
            return Check(
                "rocm",
                Status.FAIL,
                "No AMD HIP SDK found (HIP_PATH unset, no Program Files\\AMD\\ROCm)",
                "Install the HIP SDK: 6.x for ZLUDA-windows-rocm6 / the rewrite, 5.7 for "
                "ZLUDA-windows-rocm5 builds of the fork.",
            )
        return Check(
            "rocm",
            Status.FAIL,
            "No ROCm installation found (/opt/rocm, ROCM_PATH)",
            "Install ROCm 6.x (https://rocm.docs.amd.com/projects/install-on-linux/).",
        )
    label = "HIP SDK" if rocm.kind == "hip-sdk" else "ROCm"
    details = {"path": str(rocm.path), "version": rocm.version, "source": rocm.version_source}
    mm = rocm.major_minor
    if mm is not None and mm < (5, 7):
        return Check(
            "rocm",
            Status.WARN,
            f"{label} {rocm.version} at {rocm.path} is older than 5.7",
            f"Install {label} 6.x (or 5.7 for the fork's rocm5 build).",
            details,
        )
    note = ""
    if rocm.kind == "hip-sdk" and mm is not None:
        # the lshqqytiger fork's Windows builds: rocm5 for HIP SDK 5.7, rocm6 for 6.x
        asset = {5: "ZLUDA-windows-rocm5", 6: "ZLUDA-windows-rocm6"}.get(mm[0])
        note = f" (fork asset: {asset})" if asset else ""
    return Check(
        "rocm",
        Status.OK,
        f"{label} {rocm.version or '(version unknown)'} at {rocm.path}{note}",
        details=details,
    )


def _library_checks(report: DoctorReport, fs: HostFs, env: Mapping[str, str], platform: str) -> None:
    facts = report.facts
    if facts.rocm is None or not facts.gpus:
        report.skipped += ["rocblas", "hipblaslt", "miopen"]
        return
    dirs = library_dirs(facts.rocm)
    target = _target_gpu(facts.gpus, env)
    gfx = _effective_gfx(target, env, platform) if target is not None else None
    if gfx is None:
        report.skipped += ["rocblas", "hipblaslt"]
    else:
        report.checks.append(_check_rocblas(fs, dirs, target, gfx, facts.rocm, platform))
        report.checks.append(_check_hipblaslt(fs, dirs, gfx))
    miopen = fs.glob(dirs["miopen_dir"], dirs["miopen_glob"])
    if miopen:
        report.checks.append(Check("miopen", Status.OK, f"MIOpen present ({miopen[0].name})"))
    else:
        report.checks.append(
            Check(
                "miopen",
                Status.WARN,
                "MIOpen not found: cuDNN calls through ZLUDA will fail",
                "Install MIOpen (`sudo apt install miopen-hip`) or turn cuDNN off in the workload: "
                "torch.backends.cudnn.enabled = False.",
            )
        )


def _check_rocblas(
    fs: HostFs, dirs: dict[str, str], gpu: GpuAgent, gfx: str, rocm: RocmInstall, platform: str
) -> Check:
    files = _files_for_gfx(fs, dirs["rocblas"], gfx, "TensileLibrary")
    via = f" (via HSA_OVERRIDE_GFX_VERSION, device is {gpu.gfx})" if gfx != gpu.gfx else ""
    details: dict[str, Any] = {
        "gfx": gfx,
        "device_gfx": gpu.gfx,
        "folder": dirs["rocblas"],
        "files": len(files),
    }
    if files:
        return Check(
            "rocblas",
            Status.OK,
            f"rocBLAS has kernels for {gfx}{via} ({len(files)} TensileLibrary files)",
            details=details,
        )
    label = f"rocBLAS in {'HIP SDK' if rocm.kind == 'hip-sdk' else 'ROCm'} {rocm.version or ''}".rstrip()
    message = f"{label} has no kernels for {gfx}{via}: matrix multiplies will fail"
    override = override_for(gfx)
    if override is None:
        return Check(
            "rocblas",
            Status.FAIL,
            message,
            f"{gfx} is not a rocBLAS target of this release; install a ROCm/HIP SDK release that "
            "lists it, or rocBLAS kernels built for it.",
            details,
        )
    stand_in = _files_for_gfx(fs, dirs["rocblas"], override.stand_in, "TensileLibrary")
    details["override"] = override.hsa_version
    if platform == "win32":
        fix = (
            f"HSA_OVERRIDE_GFX_VERSION does not apply on Windows: put rocBLAS kernels built for {gfx} "
            f"into {dirs['rocblas']} (community ROCm library packages for {gfx})."
        )
    else:
        have = (
            f"{override.stand_in} kernels are present"
            if stand_in
            else f"{override.stand_in} kernels needed too"
        )
        fix = (
            f"export HSA_OVERRIDE_GFX_VERSION={override.hsa_version} to run {override.stand_in} kernels on "
            f"{gfx} ({have})."
        )
    return Check("rocblas", Status.FAIL, message, fix, details)


def _check_hipblaslt(fs: HostFs, dirs: dict[str, str], gfx: str) -> Check:
    files = _files_for_gfx(fs, dirs["hipblaslt"], gfx)
    if files:
        return Check("hipblaslt", Status.OK, f"hipBLASLt has kernels for {gfx} ({len(files)} files)")
    return Check(
        "hipblaslt",
        Status.WARN,
        f"hipBLASLt has no kernels for {gfx}: cuBLASLt calls will fail",
        "Set DISABLE_ADDMM_CUDA_LT=1 so torch does not route addmm/linear through cuBLASLt.",
        {"gfx": gfx, "folder": dirs["hipblaslt"]},
    )


# --------------------------------------------------------------------------- torch, releases, caches

_TORCH_PROBE = (
    "import json\n"
    "try:\n"
    "    import torch\n"
    "except Exception as e:\n"
    "    print(json.dumps({'torch': None, 'error': repr(e)}))\n"
    "else:\n"
    "    v = torch.version\n"
    "    print(json.dumps({'torch': torch.__version__, 'cuda': getattr(v, 'cuda', None),"
    " 'hip': getattr(v, 'hip', None)}))\n"
)


def _target_python(opts: DoctorOptions) -> str:
    return opts.python or getattr(opts.settings, "python", None) or sys.executable


def probe_torch(python: str, timeout: float = 120.0) -> dict[str, Any]:
    """torch version / CUDA / HIP of ``python`` (a child process; torch is never imported here)."""
    try:
        proc = subprocess.run(
            [python, "-c", _TORCH_PROBE], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"torch": None, "error": f"could not run {python}: {exc}"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"torch": None, "error": f"{python} exited {proc.returncode}: {proc.stderr.strip()[-300:]}"}


def _check_torch(opts: DoctorOptions) -> Check:
    """The target's torch: from ``target.inspect_python`` when that works, else a tiny probe."""
    python = _target_python(opts)
    info: dict[str, Any]
    try:
        from zluda_runner.target.inspect import inspect_python
    except ImportError:
        return _torch_verdict(python, probe_torch(python))
    try:
        profile = inspect_python(python)
    except Exception as exc:  # TargetError for CPU/ROCm builds or no torch: ask the probe why
        info = probe_torch(python)
        info["inspect_error"] = getattr(exc, "message", str(exc))
        return _torch_verdict(python, info)
    data = profile.to_dict()
    info = {
        "torch": _first(data, "torch_version", "version"),
        "cuda": _first(data, "cuda_version", "cuda"),
        "hip": _first(data, "hip_version", "hip"),
        "build": data.get("build"),
    }
    return _torch_verdict(python, info)


def _first(data: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if data.get(key):
            return data[key]
    torch = data.get("torch")
    if isinstance(torch, Mapping):
        return _first(torch, *keys)
    return None


def _torch_verdict(python: str, info: dict[str, Any]) -> Check:
    version = info.get("torch")
    if not version:
        return Check(
            "torch",
            Status.WARN,
            f"No usable torch in {python} ({info.get('error', 'not installed')})",
            "Point --python at the interpreter of your workload, or install a CUDA build of torch "
            "(cu118 wheels for the lshqqytiger fork, cu12x for the ZLUDA rewrite).",
            info,
        )
    if info.get("hip"):
        return Check(
            "torch",
            Status.WARN,
            f"torch {version} in {python} is a ROCm build (HIP {info['hip']}): "
            "it runs natively, without ZLUDA",
            "Use it as the B side of `zluda-run ab --b-python`; ZLUDA needs a CUDA build of torch.",
            info,
        )
    if not info.get("cuda"):
        return Check(
            "torch",
            Status.WARN,
            f"torch {version} in {python} is a CPU-only build",
            "Install a CUDA build: pip install torch --index-url https://download.pytorch.org/whl/cu118 "
            "(fork) or .../cu126 (rewrite).",
            info,
        )
    return Check("torch", Status.OK, f"torch {version} (CUDA {info['cuda']}) in {python}", details=info)


def _integration_checks(report: DoctorReport, opts: DoctorOptions, torch: Check | None) -> list[Check]:
    """Which manifest release fits, and which releases are cached (other areas' modules, guarded)."""
    return [_check_release(report, opts, torch), _check_cached_releases(opts)]


def _cuda_major(torch: Check | None) -> int | None:
    cuda = (torch.details.get("cuda") if torch is not None else None) or ""
    m = re.match(r"(\d+)", str(cuda))
    return int(m.group(1)) if m else None


def _check_release(report: DoctorReport, opts: DoctorOptions, torch: Check | None) -> Check:
    try:
        from zluda_runner.release.manifest import load_manifest
        from zluda_runner.release.selection import select_asset
    except ImportError:
        return Check(
            "release",
            Status.WARN,
            "Release selection is unavailable in this build",
            "Run `zluda-run releases` to list the manifest's releases.",
        )
    facts = report.facts
    if facts.os not in ("linux", "windows"):
        return Check(
            "release", Status.FAIL, f"No ZLUDA release is built for {facts.os}", "Use Linux or Windows."
        )
    rocm = facts.rocm
    hip = f"{rocm.major_minor[0]}.{rocm.major_minor[1]}" if rocm and rocm.major_minor else None
    cuda = _cuda_major(torch)
    try:
        manifest: Any = load_manifest(getattr(opts.settings, "manifest", None))
        selection = select_asset(
            manifest, os=facts.os, hip=hip, cuda=cuda, release=getattr(opts.settings, "release", None)
        )
    except Exception as exc:  # ManifestError / SelectionError carry their own hint
        return Check(
            "release",
            Status.WARN,
            f"Could not choose a release: {getattr(exc, 'message', exc)}",
            getattr(exc, "hint", None) or "Run `zluda-run releases` to see what exists.",
        )
    wanted = f"{facts.os}, HIP {hip or 'any'}, torch CUDA {cuda or 'any'}"
    chosen = selection.chosen
    if chosen is None:
        # what stands in the way on this OS (assets for the other OS are not news)
        found = {r for rej in selection.rejected for r in rej.reasons if not r.startswith("built for")}
        reasons = sorted(found, key=lambda r: (not r.startswith("needs "), r))  # HIP mismatches first
        label = "HIP SDK" if rocm is not None and rocm.kind == "hip-sdk" else "ROCm"
        wants = _hip_wanted(manifest, selection)
        fix = (
            f"Install the {label} version a build for your torch wants: {'; '.join(wants)}."
            if wants
            else "Install torch built for CUDA 11.8 (fork) or 12.x (rewrite), or pass --zluda-dir."
        )
        return Check(
            "release",
            Status.WARN,
            f"No manifest release fits ({wanted}): {'; '.join(reasons[:3])}",
            fix,
            {"rejected": [r.to_dict() for r in selection.rejected], "hip_wanted": wants},
        )
    return Check(
        "release",
        Status.OK,
        f"Release that fits ({wanted}): {chosen.release_id} / {chosen.asset.name}",
        details=chosen.summary(),
    )


def _hip_wanted(manifest: Any, selection: Any, limit: int = 3) -> list[str]:
    """Assets turned down only for the HIP version, one per distinct requirement (manifest order:
    newest first): ``"HIP SDK 5.7 (fork-3.9.5/ZLUDA-windows-rocm5-amd64.zip)"``."""
    wants: dict[str, str] = {}
    for rejection in selection.rejected:
        if not rejection.reasons or not all(r.startswith("needs ") for r in rejection.reasons):
            continue
        release = next((r for r in manifest.releases if r.id == rejection.release_id), None)
        asset = next((a for a in release.assets if a.name == rejection.asset_name), None) if release else None
        if asset is not None:
            wants.setdefault(asset.hip.describe(), f"{rejection.release_id}/{rejection.asset_name}")
    return [f"{need} ({where})" for need, where in list(wants.items())[:limit]]


def _check_cached_releases(opts: DoctorOptions) -> Check:
    cache_dir = getattr(opts.settings, "cache_dir", None)
    if cache_dir is None:
        from zluda_runner.core.paths import default_cache_dir

        cache_dir = default_cache_dir()
    try:
        from zluda_runner.release.cache import list_cache
    except ImportError:
        return Check("cached_releases", Status.OK, "Release cache listing is unavailable in this build")
    try:
        entries = list_cache(Path(cache_dir))
    except Exception as exc:  # a broken cache folder is reported, not raised
        return Check(
            "cached_releases",
            Status.WARN,
            f"Could not list cached releases: {exc}",
            f"Check the cache folder {cache_dir} (or `zluda-run cache clean`).",
        )
    names = [f"{e.release_id}/{e.asset}" for e in entries]
    details = {"cache_dir": str(cache_dir), "releases": names}
    if not names:
        return Check(
            "cached_releases", Status.OK, f"No ZLUDA release cached yet in {cache_dir}", details=details
        )
    return Check(
        "cached_releases", Status.OK, f"{len(names)} cached release(s): {', '.join(names)}", details=details
    )


def _check_compile_cache(info: CompileCacheInfo) -> Check:
    where = ", ".join(str(d) for d in info.dirs)
    details = {"dirs": [str(d) for d in info.dirs], "bytes": info.total_bytes, "files": info.file_count}
    if info.file_count == 0:
        return Check(
            "compile_cache",
            Status.OK,
            f"ZLUDA compile cache empty ({where}): the first run of a workload compiles "
            "its GPU code and can take minutes",
            details=details,
        )
    return Check(
        "compile_cache",
        Status.OK,
        f"ZLUDA compile cache: {info.file_count} file(s), {format_bytes(info.total_bytes)} ({where})",
        details=details,
    )


# --------------------------------------------------------------------------- text view

_MARK = {Status.OK: "ok  ", Status.WARN: "WARN", Status.FAIL: "FAIL"}


def render_text(report: DoctorReport) -> str:
    lines = [
        f"zluda-run doctor ({report.facts.os} {report.facts.arch}"
        + (f", root {report.facts.root}" if report.facts.root else "")
        + ")"
    ]
    for check in report.checks:
        lines.append(f"[{_MARK[check.status]}] {check.id}: {check.message}")
        if check.fix and check.status is not Status.OK:
            lines.append(f"       fix: {check.fix}")
    if report.skipped:
        lines.append(f"skipped: {', '.join(report.skipped)}")
    lines.append(
        f"{report.count(Status.OK)} ok, {report.count(Status.WARN)} warning(s), "
        f"{report.count(Status.FAIL)} failure(s); exit code {report.exit_code}"
    )
    return "\n".join(lines)
