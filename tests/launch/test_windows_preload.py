"""The Windows preload hook: written once outside the target, chained to the environment's own
sitecustomize, inert off Windows (what it does on Windows, loading a DLL first, is proven under Wine
by tests/windows: a module already loaded as nvcuda.dll is the one cudart uses)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.inspection.profile import PythonStartup
from zluda_runner.launch.windows.preload import (
    PRELOAD_ENV,
    SITECUSTOMIZE,
    STARTUP_ENV,
    preload_env,
    write_preload,
)
from zluda_runner.plan.model import MECH_DLL_PLACEMENT, MECH_NONE, StartupHook
from zluda_runner.plan.windows import (
    HOOK_PTH,
    HOOK_SITECUSTOMIZE,
    MECH_INJECTOR,
    MECH_PRELOAD,
    PTH_HOOK_NAME,
    WindowsContext,
    choose_startup_hook,
    windows_mechanism,
)


def test_preload_env_and_hook(tmp_path: Path) -> None:
    env = preload_env(["/z/nvcuda.dll", "/z/nvml.dll"], tmp_path, {"PYTHONPATH": "/user/site"}, sep=":")
    folder = write_preload(tmp_path)
    assert env["PYTHONPATH"] == f"{folder}:/user/site"
    assert env[PRELOAD_ENV] == "/z/nvcuda.dll:/z/nvml.dll"
    assert (folder / "sitecustomize.py").read_text() == SITECUSTOMIZE
    assert preload_env([], tmp_path, {}) == {}
    with pytest.raises(ValueError, match="separator"):
        preload_env(["C:\\a;b\\nvcuda.dll"], tmp_path, {})


def test_hook_chains_to_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    env = preload_env(["/z/nvcuda.dll"], tmp_path / "cache", {"PYTHONPATH": str(user)}, sep=":")
    code = ("import os, sys; "
            "print(os.environ.get('USER_SITECUSTOMIZE_RAN'), sys.modules['sitecustomize'].__file__)")
    out = subprocess.run([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin", **env},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", str(user / "sitecustomize.py")]


# --------------------------------------------------------------------------- the chain keeps what it runs


def test_chained_sitecustomize_keeps_its_sys_path_and_its_errors(tmp_path: Path) -> None:
    """Issue 20 item 8: the user's sitecustomize's sys.path additions survive; its own ImportError is
    reported by site, as without zluda-run (it was swallowed)."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import sys\nsys.path.append('/added-by-user')\n")
    env = preload_env(["/z/nvcuda.dll"], tmp_path / "cache", {"PYTHONPATH": str(user)}, sep=":")
    code = "import sys; print('/added-by-user' in sys.path, any('win-preload' in p for p in sys.path))"
    out = subprocess.run([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin", **env},
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]  # ours is off sys.path once it has run
    (user / "sitecustomize.py").write_text("import no_such_module_inside_sitecustomize\n")
    out = subprocess.run([sys.executable, "-c", "pass"], env={"PATH": "/usr/bin:/bin", **env},
                         capture_output=True, text=True, check=True)
    assert "no_such_module_inside_sitecustomize" in out.stderr


# --------------------------------------------------------------------------- the .pth hook


def test_pth_hook_is_inert_without_the_variable_and_runs_the_startup_code_with_it(tmp_path: Path) -> None:
    """CPython's own site processes the hook (the same code on Windows): nothing without the variable."""
    from zluda_runner.launch.windows.hook import install_pth_hook

    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    install_pth_hook(site_dir, tmp_path / "cache")
    startup = tmp_path / "startup.py"
    startup.write_text("import sys\nsys.stderr.write('startup ran as %s\\n' % __name__)\n")
    code = f"import site; site.addsitedir({str(site_dir)!r}); print('done')"
    base = {"PATH": "/usr/bin:/bin"}
    quiet = subprocess.run([sys.executable, "-S", "-c", code], env=base, capture_output=True, text=True,
                           check=True)
    assert quiet.stdout == "done\n" and quiet.stderr == ""
    ran = subprocess.run([sys.executable, "-S", "-c", code], env={**base, STARTUP_ENV: str(startup)},
                         capture_output=True, text=True, check=True)
    assert ran.stderr == "startup ran as __zluda_runner_startup__\n"


def test_pth_hook_is_journaled_refuses_a_foreign_file_and_is_removed_only_when_ours(tmp_path: Path) -> None:
    from zluda_runner.core.errors import LaunchError
    from zluda_runner.launch.windows.hook import (
        PTH_TEXT,
        hooks_present,
        install_pth_hook,
        read_hooks,
        remove_pth_hook,
    )

    cache = tmp_path / "cache"
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    hook = install_pth_hook(site_dir, cache)
    assert hook == site_dir / PTH_HOOK_NAME and hook.read_text() == PTH_TEXT
    assert install_pth_hook(site_dir, cache) == hook  # twice: one file, one journal entry
    assert [h.path for h in read_hooks(cache).hooks] == [str(hook)] and hooks_present(cache) == [hook]
    assert remove_pth_hook(hook, cache) and not hook.exists() and read_hooks(cache).hooks == []
    hook.write_text("import something_of_the_users\n")
    with pytest.raises(LaunchError) as info:
        install_pth_hook(site_dir, cache)
    assert info.value.message.startswith(f"{hook} ")  # the file it leaves alone
    assert not remove_pth_hook(hook, cache) and hook.read_text() == "import something_of_the_users\n"
    with pytest.raises(LaunchError, match="not a folder"):
        install_pth_hook(tmp_path / "missing", cache)
    (cache / "win-hooks" / "hooks.json").write_text("{not json")
    with pytest.raises(LaunchError) as info:
        read_hooks(cache)
    assert str(cache / "win-hooks" / "hooks.json") in info.value.message


# --------------------------------------------------------------------------- which hook, which mechanism


def _startup(**kw: object) -> PythonStartup:
    return PythonStartup(**kw)  # type: ignore[arg-type]


def test_the_hook_follows_the_way_python_starts() -> None:
    regular, why = choose_startup_hook(None, None)
    assert regular is not None and regular.kind == HOOK_SITECUSTOMIZE and why == ""
    pth = r"C:\py\python313._pth"
    sites = (r"C:\py", r"C:\py\Lib\site-packages")
    portable, _ = choose_startup_hook(_startup(pth_file=pth, honours_pythonpath=False, site_enabled=True,
                                               site_packages=sites), r"C:\py\Lib\site-packages\torch")
    assert portable is not None and portable.kind == HOOK_PTH and portable.folder == sites[1]
    assert rf"{sites[1]}\{PTH_HOOK_NAME}" in portable.why and "restore" in portable.why
    isolated = _startup(pth_file=pth, honours_pythonpath=False, site_enabled=False)
    none, why = choose_startup_hook(isolated, None)
    assert none is None and pth in why
    assert_golden("windows_hook_isolated_pth", why + "\n")  # the ._pth named, and its fix
    no_site, why = choose_startup_hook(_startup(site_enabled=False), None)
    assert no_site is None and "-S" in why


def _ctx(**kw: object) -> WindowsContext:
    base: dict[str, object] = {"torch_lib": None, "loop": None, "injector": None}
    return WindowsContext(**{**base, **kw})  # type: ignore[arg-type]


def test_mechanism_never_ok_for_something_that_will_not_act() -> None:
    from zluda_runner.loader.windows import TorchDllLoop

    hook = StartupHook(HOOK_PTH, folder=r"C:\py\Lib\site-packages", why="why the hook goes there")
    no_hook = r"C:\py\python313._pth has no active `import site` line (fix: uncomment `import site`)"
    loop = TorchDllLoop(present=True, flags=0x1100, where="torch/__init__.py:264")
    # a Python workload without torch (ctypes): preloaded through the hook
    mech, reasons, _ = windows_mechanism("nvcuda.dll", "driver", [], _ctx(python=True, hook=hook))
    assert mech == MECH_PRELOAD and hook.why in reasons  # the plan says where, and why
    assert hook.why not in windows_mechanism("nvml.dll", "nvml", [], _ctx(python=True, hook=hook))[1]  # once
    # ... through no hook: the injector, else fatal with the fix
    mech, _, problems = windows_mechanism("nvcuda.dll", "driver", [],
                                          _ctx(python=True, no_hook=no_hook, injector=r"C:\z\zluda.exe"))
    assert (mech, problems) == (MECH_INJECTOR, [])
    mech, _, problems = windows_mechanism("nvcuda.dll", "driver", [], _ctx(python=True, no_hook=no_hook))
    assert mech == MECH_NONE and no_hook in problems[0]  # the ._pth's fix, as the hook's choice said it
    assert_golden("windows_mechanism_no_hook_no_injector", "".join(p + "\n" for p in problems))
    # torch's loop loads the placed driver; a ctypes-first workload is told it would not get it
    mech, reasons, problems = windows_mechanism("nvcuda.dll", "driver", [], _ctx(
        torch_lib=r"C:\py\Lib\site-packages\torch\lib", loop=loop, python=True, no_hook=no_hook))
    assert mech == MECH_DLL_PLACEMENT and problems == [] and no_hook in reasons[-1]  # why no hook helps
    assert_golden("windows_mechanism_placed_driver_ctypes_first", "".join(r + "\n" for r in reasons))
    # no loop and no hook: placement would not act
    mech, _, problems = windows_mechanism("nvcuda.dll", "driver", [], _ctx(
        torch_lib=r"C:\py\Lib\site-packages\torch\lib", loop=TorchDllLoop(present=False), python=True,
        no_hook=no_hook))
    assert mech == MECH_NONE and problems


# --------------------------------------------------------------------------- --verify-load's evidence


def test_module_lists_decide_each_binding(tmp_path: Path) -> None:
    from zluda_runner.launch.verdict import VerifyResult
    from zluda_runner.launch.windows.verify import evidence_from_listings

    release = tmp_path / "ZLUDA"
    lib = tmp_path / "torch" / "lib"
    nvidia = tmp_path / "System32"
    for folder in (release, lib, nvidia):
        folder.mkdir(parents=True)
    (release / "nvcuda.dll").write_bytes(b"zluda driver")
    (release / "cublas.dll").write_bytes(b"zluda cublas")
    (lib / "nvcuda.dll").write_bytes(b"zluda driver")  # placed: the same bytes
    (lib / "cublas64_11.dll").write_bytes(b"nvidia cublas")  # placement undone by pip: NVIDIA's
    (nvidia / "nvml.dll").write_bytes(b"nvidia nvml")
    (release / "nvml.dll").write_bytes(b"zluda nvml")
    planned = {"nvcuda.dll": str(release / "nvcuda.dll"), "cublas64_11.dll": str(release / "cublas.dll"),
               "nvml.dll": str(release / "nvml.dll"), "cufft64_10.dll": str(release / "cufft.dll")}
    listing = {"pid": 7, "modules": [str(lib / "nvcuda.dll"), str(lib / "cublas64_11.dll"),
                                     str(nvidia / "nvml.dll")], "preload_failed": []}
    result = VerifyResult(0, evidence_from_listings([listing], planned), evidence="module list")
    states = {ev.name: result.state(ev) for ev in result.bindings}
    assert states == {"nvcuda.dll": "taken", "cublas64_11.dll": "not-taken", "nvml.dll": "not-taken",
                      "cufft64_10.dll": "unused"}
    assert result.failed and result.command_exit_code() == 3
    good = VerifyResult(0, evidence_from_listings([listing], {"nvcuda.dll": planned["nvcuda.dll"]}),
                        evidence="module list")
    assert not good.failed and good.command_exit_code() == 0
    blind = VerifyResult(0, evidence_from_listings([], planned), evidence="module list", unproven="no list")
    assert blind.failed and blind.command_exit_code() == 3
    assert {blind.state(ev) for ev in blind.bindings} == {"unproven"}
    interrupted = VerifyResult(130, list(result.bindings), evidence="module list")
    assert interrupted.command_exit_code() == 130  # Ctrl-C is the user's, whatever was proven by then


def test_ctrl_c_on_linux_is_not_a_load_that_died() -> None:
    from zluda_runner.launch.verdict import VerifyResult
    from zluda_runner.report.verify_view import render_verification as render

    result = VerifyResult(130, [], signal=2)
    assert not result.died_loading and result.command_exit_code() == 130
    assert "interrupted (Ctrl-C, exit 130)" in render(result)
    assert VerifyResult(139, [], signal=11).command_exit_code() == 3
