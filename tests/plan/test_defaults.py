"""The applied defaults (issue 22), from their facts: each applied where its fact holds, absent where it
does not, listed as not applied with --no-defaults or where the user's own value wins; the facts read
from a fake host tree (KFD topology, MIOpen); the plan's view and JSON show them with reason and source."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from tests.conftest import put_elf
from tests.doctor.test_doctor import _kfd_node, _write
from tests.golden import assert_golden
from zluda_runner.core.wording import worded_for
from zluda_runner.host.fs import HostFs
from zluda_runner.host.libraries import find_library
from zluda_runner.plan.defaults import (
    ADDMM_LT_OFF,
    CUDNN_OFF,
    DEDICATED_GPU,
    DEVICE_IDENTITY,
    PINNED_OFF,
    SDPA_OFF,
    SRC_FORK_README,
    SWITCH_OFF_ENV,
    TORCH_DEFAULTS_ENV,
    ComputeIdentity,
    DefaultsFacts,
    HostGpu,
    compute_defaults,
    defaults_env,
    plan_with_defaults,
)
from zluda_runner.plan.defaults_facts import gather_facts, read_host
from zluda_runner.plan.model import AppliedDefault, Binding, PlanTarget, ReleaseRef, ShimPlan
from zluda_runner.release.manifest import load_manifest
from zluda_runner.report.plan_view import plan_lines

APU = HostGpu(0, "AMD Radeon 780M", "gfx1103", True, "KFD node 1: cpu_cores_count 16")
DGPU = HostGpu(1, "AMD Radeon RX 7900 XTX", "gfx1100", False, "KFD node 2: 24 GiB of VRAM")
TORCH = DefaultsFacts(python=True, torch_version="2.7.1+cu128", flavour="upstream", release_id="upstream-v6")


def _by_name(facts: DefaultsFacts) -> dict[str, AppliedDefault]:
    return {d.name: d for d in compute_defaults(facts)}


def _records(defaults: Iterable[AppliedDefault]) -> str:
    """The defaults' records whole (setting, vehicle, reason, source, why not), as --json has them."""
    return json.dumps([d.to_dict() for d in defaults], indent=2) + "\n"


def test_each_default_applied_where_its_fact_holds() -> None:
    facts = replace(TORCH, gpus=(APU, DGPU), gpu_source="KFD topology",
                    miopen_looked="/opt/rocm/lib/libMIOpen.so*",
                    identity=ComputeIdentity("8.8", "ZLUDA_CC", "manifest upstream-v6 compute_capability"))
    got = _by_name(facts)
    assert list(got) == [SDPA_OFF, CUDNN_OFF, ADDMM_LT_OFF, DEDICATED_GPU, DEVICE_IDENTITY]
    assert all(d.applied and d.reason and d.source for d in got.values())
    assert "vosen/ZLUDA#626" in got[SDPA_OFF].source and got[SDPA_OFF].vehicle == "startup"
    # the reasons name their facts: no cuDNN stand-in, MIOpen looked for where, the APU's cores, 8.8
    assert_golden("defaults_all_applied", _records(got.values()))
    assert got[ADDMM_LT_OFF].setting == "DISABLE_ADDMM_CUDA_LT=1" and got[ADDMM_LT_OFF].vehicle == "env"
    assert got[DEDICATED_GPU].setting == "HIP_VISIBLE_DEVICES=1"
    assert "cpu_cores_count 16" in got[DEDICATED_GPU].reason
    assert "vosen/ZLUDA#218" in got[DEDICATED_GPU].source and "ComfyUI-Zluda#231" in got[DEDICATED_GPU].source
    assert got[DEVICE_IDENTITY].vehicle == "info" and "8.8" in got[DEVICE_IDENTITY].setting
    assert "ZLUDA_CC" in got[DEVICE_IDENTITY].setting
    env = defaults_env(tuple(got.values()))
    assert env == {"DISABLE_ADDMM_CUDA_LT": "1", "HIP_VISIBLE_DEVICES": "1",
                   TORCH_DEFAULTS_ENV: f"{SDPA_OFF},{CUDNN_OFF}"}


def test_pinned_memory_off_only_where_the_release_lacks_it() -> None:
    """The manifest's data decides (the release's unimplemented pinned-memory functions), not its id; a
    startup default, so only inside a Python workload with torch; the user's switch and --no-defaults
    turn it off like the others."""
    lacking = replace(TORCH, unpinned=("cuMemAllocHost", "cuMemHostRegister"))
    got = _by_name(lacking)[PINNED_OFF]
    assert got.applied and got.vehicle == "startup"
    assert_golden("defaults_pinned_off", _records([got]))  # the functions and release named, its sources
    assert defaults_env((got,)) == {TORCH_DEFAULTS_ENV: PINNED_OFF}
    assert PINNED_OFF not in _by_name(TORCH)  # a release that implements them (or not recorded): nothing
    assert PINNED_OFF not in _by_name(replace(lacking, torch_version=None))  # no torch to switch
    assert _by_name(replace(lacking, enabled=False))[PINNED_OFF].why_not == "defaults off"
    assert not _by_name(replace(lacking, env={SWITCH_OFF_ENV: PINNED_OFF}))[PINNED_OFF].applied
    assert _by_name(replace(lacking, python=False)).get(PINNED_OFF, got).applied is False


def test_fork_sdpa_source_is_its_readme() -> None:
    assert _by_name(replace(TORCH, flavour="fork"))[SDPA_OFF].source == SRC_FORK_README


def test_no_default_where_its_fact_is_absent() -> None:
    served = replace(TORCH, served=("driver", "cublas", "cublasLt", "cudnn"),
                     miopen="/opt/rocm/lib/libMIOpen.so.1",
                     miopen_looked="/opt/rocm/lib/libMIOpen.so*", gpus=(DGPU,), gpu_source="KFD topology")
    assert list(_by_name(served)) == [SDPA_OFF]  # the release's cuDNN, MIOpen, cuBLASLt; one dedicated GPU
    assert list(_by_name(replace(served, miopen=None))) == [SDPA_OFF, CUDNN_OFF]  # MIOpen missing
    two_dgpus = replace(served, gpus=(DGPU, replace(DGPU, index=0)))
    assert DEDICATED_GPU not in _by_name(two_dgpus)
    assert list(_by_name(replace(served, torch_version="2.3.1+cu118"))) == [SDPA_OFF]  # no addmm Lt path
    assert list(_by_name(replace(TORCH, torch_version="1.13.1+cu117", served=("cudnn",)))) == []  # no SDPA
    assert list(_by_name(DefaultsFacts(python=False))) == []  # a program without torch: nothing


def test_no_defaults_lists_them_not_applied() -> None:
    facts = replace(TORCH, enabled=False, gpus=(APU, DGPU), gpu_source="KFD topology",
                    identity=ComputeIdentity("8.5", "ZLUDA_CC", "manifest"))
    got = _by_name(facts)
    assert [n for n, d in got.items() if d.applied] == [DEVICE_IDENTITY]  # shown only, nothing set
    # a neutral word in the record (no front end's flag): each view renders it for its reader
    assert all(d.why_not == "defaults off" for n, d in got.items() if n != DEVICE_IDENTITY)
    assert defaults_env(tuple(got.values())) == {}


def test_the_users_own_value_wins() -> None:
    facts = replace(TORCH, gpus=(APU, DGPU), gpu_source="KFD topology",
                    env={"DISABLE_ADDMM_CUDA_LT": "0", "ROCR_VISIBLE_DEVICES": "0", "ZLUDA_CC": "8.6"},
                    identity=ComputeIdentity("8.8", "ZLUDA_CC", "manifest"))
    got = _by_name(facts)
    assert not got[ADDMM_LT_OFF].applied and got[ADDMM_LT_OFF].why_not == "you set DISABLE_ADDMM_CUDA_LT=0"
    assert not got[DEDICATED_GPU].applied and got[DEDICATED_GPU].why_not == "you set ROCR_VISIBLE_DEVICES=0"
    assert "8.6" in got[DEVICE_IDENTITY].setting and "yours" in got[DEVICE_IDENTITY].setting
    assert defaults_env(tuple(got.values())) == {TORCH_DEFAULTS_ENV: f"{SDPA_OFF},{CUDNN_OFF}"}


def test_one_default_switched_off_by_name() -> None:
    got = _by_name(replace(TORCH, env={SWITCH_OFF_ENV: "cudnn-off"}))
    assert got[SDPA_OFF].applied and not got[CUDNN_OFF].applied
    assert got[CUDNN_OFF].why_not == f"switched off by {SWITCH_OFF_ENV}"


def test_a_gpu_list_not_in_hips_order_never_chooses() -> None:
    got = _by_name(replace(TORCH, os="windows", gpus=(APU, DGPU), gpu_source="Windows registry",
                           gpu_order_known=False))[DEDICATED_GPU]
    assert not got.applied and got.why_not is not None
    assert_golden("defaults_gpu_order_unknown", got.why_not + "\n")  # the source named, and what to do
    assert "HIP_VISIBLE_DEVICES" not in defaults_env((got,))


def test_startup_defaults_need_a_start_up_hook() -> None:
    got = _by_name(replace(TORCH, os="windows", startup_hook=False))
    assert not got[SDPA_OFF].applied and got[SDPA_OFF].why_not is not None
    assert_golden("defaults_no_startup_hook", got[SDPA_OFF].why_not + "\n")
    assert got[ADDMM_LT_OFF].applied  # the environment still reaches it


def _two_gpu_host(root: Path, *, miopen: bool) -> Path:
    """ROCm 6.2 with an APU (Phoenix, gfx1103: its GPU node counts the CPU's cores, no VRAM bank) and an
    RX 7900 XTX (gfx1100, 24 GiB VRAM): the KFD topology as the kernel writes it (kfd_topology.c)."""
    _write(root, "opt/rocm/.info/version", "6.2.0-66\n")
    _write(root, "opt/rocm/lib/libamdhip64.so.6.2.60200")
    if miopen:
        put_elf(root / "opt/rocm/lib/libMIOpen.so.1")
    _kfd_node(root, 0, 0, simd=0, cpu_cores=16)
    _kfd_node(root, 1, 110003, simd=24, name="gfx1103", vram=0, cpu_cores=16)
    _kfd_node(root, 2, 110000, simd=192, name="gfx1100", vram=24 << 30)
    return root


def test_facts_from_a_fake_host(tmp_path: Path) -> None:
    root = _two_gpu_host(tmp_path / "host", miopen=False)
    gpus = read_host({"ZLUDA_RUNNER_ROOT": str(root)}, "linux").gpus
    assert [(g.index, g.integrated) for g in gpus] == [(0, True), (1, False)]
    assert "cpu_cores_count 16" in gpus[0].why and "VRAM" in gpus[1].why
    assert find_library("libMIOpen.so.1", {}, "linux", fs=HostFs(root)).path is None
    _write(root, "opt/rocm/lib/libMIOpen.so.1")  # not an ELF file: the loader would not take it
    assert find_library("libMIOpen.so.1", {}, "linux", fs=HostFs(root)).path is None
    put_elf(root / "opt/rocm/lib/libMIOpen.so.1")
    assert find_library("libMIOpen.so.1", {}, "linux", fs=HostFs(root)).path == "/opt/rocm/lib/libMIOpen.so.1"


def _plan() -> ShimPlan:
    driver = Binding(need="libcuda.so.1", family="driver", action="replace", shim="/r/libcuda.so.1",
                     load_name="libcuda.so.1", mechanism="ld_library_path", verdict="ok")
    return ShimPlan(release=ReleaseRef("upstream-v6", "6", "upstream", "zluda-linux-a7bf2ba.tar.gz", "/r"),
                    target=PlanTarget(python="/venv/bin/python", torch="2.7.1+cu128", cuda="12.8",
                                      torch_path="/venv/site/torch"),
                    bindings=(driver,), env={"ZLUDA_NVRTC_LIB": "/x"})


def test_gathered_for_a_plan_and_shown(tmp_path: Path) -> None:
    root = _two_gpu_host(tmp_path / "host", miopen=True)
    env = {"ZLUDA_RUNNER_ROOT": str(root)}
    plan = _plan()
    facts = gather_facts(plan, read_host(env, "linux"), env, enabled=True, manifest=load_manifest())
    assert facts.served == ("driver",) and facts.miopen == "/opt/rocm/lib/libMIOpen.so.1"
    assert facts.identity is not None and facts.identity.text == "8.8"  # the manifest's upstream-v6
    assert facts.unpinned == ("cuMemAllocHost", "cuMemHostRegister")  # its unimplemented functions
    done = plan_with_defaults(plan, compute_defaults(facts))
    assert done.env["HIP_VISIBLE_DEVICES"] == "1" and done.env["DISABLE_ADDMM_CUDA_LT"] == "1"
    assert done.env["ZLUDA_NVRTC_LIB"] == "/x" and "HIP_VISIBLE_DEVICES" in done.inherited
    again = plan_with_defaults(done, compute_defaults(replace(facts, enabled=False)))
    assert "HIP_VISIBLE_DEVICES" not in again.env and "DISABLE_ADDMM_CUDA_LT" not in again.env
    assert "HIP_VISIBLE_DEVICES" not in again.inherited and again.env["ZLUDA_NVRTC_LIB"] == "/x"
    text = "\n".join(plan_lines(done))
    assert "HIP_VISIBLE_DEVICES=1" in text and "vosen/ZLUDA#626" in text
    assert_golden("defaults_plan_applied", text + "\n")  # each default, its setting, reason and source
    with worded_for("command line"):
        assert_golden("defaults_plan_off_command_line", "\n".join(plan_lines(again)) + "\n")  # --no-defaults
    # a Python caller's words: Options(defaults=False)
    assert_golden("defaults_plan_off_python", "\n".join(plan_lines(again)) + "\n")
    off = {d["name"]: d for d in json.loads(json.dumps(again.to_dict()))["defaults"]}
    assert off[DEDICATED_GPU]["why_not"] == "defaults off"  # --json: the record's word
    data = json.loads(json.dumps(done.to_dict()))
    listed = {d["name"]: d for d in data["defaults"]}
    assert listed[DEDICATED_GPU]["reason"] and listed[DEDICATED_GPU]["source"]
    assert listed[SDPA_OFF]["applied"] is True and listed[SDPA_OFF]["vehicle"] == "startup"
    assert ShimPlan.from_dict(data).defaults == done.defaults  # the plan cache reads them back
