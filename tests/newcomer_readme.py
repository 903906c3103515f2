"""A newcomer, by the README: its two set-up commands in a fresh clone, then the Quick start.

Not collected by pytest (it installs two virtual environments, minutes with torch from local
disk); run it by hand before a release:

    python tests/newcomer_readme.py [--keep]

The README's commands run as written (split at ``&&``, never through a shell). The ZLUDA release is
a stand-in in the real upstream v6 shape (``zluda_runner.devtools.standin --layout v6``) given through
``ZLUDA_RUNNER_ZLUDA_DIR``, with its stub ROCm libraries on ``LD_LIBRARY_PATH``: this machine has no
AMD GPU and no network. Each command must exit as the README documents for a machine without a GPU.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# What the README documents for a machine without an AMD GPU (Set up, Quick start, Exit codes).
QUICK_START_EXPECTED = {
    "zluda-run doctor": {3},  # a check failed: no GPU here
    "zluda-run releases": {0, 3},  # 3 when nothing fits this host (no HIP here)
    "zluda-run inspect --python python": {0},
    "zluda-run plan -- python examples/infer.py": {0},
    "zluda-run python examples/infer.py --device cuda": {2},  # torch sees no device: infer.py exits 2
    'zluda-run --verify-load -- python -c "import torch"': {0},
}


def setup_commands(readme: str) -> list[str]:
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)[:2]


def quick_start_commands(readme: str) -> list[str]:
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```sh\n(.+?)\n```", section, re.S)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def run_chain(command: str, cwd: Path, env: dict[str, str]) -> int:
    """``a && b && c`` as a shell would run it, each part an argv list."""
    for part in command.split(" && "):
        argv = shlex.split(part)
        print(f"$ {part}", flush=True)
        code = subprocess.run(argv, cwd=cwd, env=env, check=False).returncode
        if code != 0:
            return code
    return 0


DEBIAN_HIP = Path("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5")  # Debian's libamdhip64-5: HIP 5.2


def distribution_hip_main_job(launch: str, clone: Path, env: dict[str, str]) -> list[str]:
    """On a host with Debian's HIP 5.2 (this script, unlike the tests, reads the real host: it is the
    newcomer's machine), the main job without a ZLUDA folder of one's own: the host check first, one
    short message naming what was found and how to get further, exit 3 (nothing fits)."""
    if not DEBIAN_HIP.exists():
        print("(no Debian libamdhip64-5 on this host: the distribution-HIP main job is not checked)")
        return []
    print("$ (Debian's HIP 5.2 is installed) " + launch, flush=True)
    proc = subprocess.run(shlex.split(launch), cwd=clone, env=env, capture_output=True, text=True,
                          check=False)
    print(proc.stderr.rstrip())
    problems = []
    if proc.returncode != 3:
        problems.append(f"main job on a HIP 5.2 host: exit {proc.returncode}, the README documents 3")
    error = next((line for line in proc.stderr.splitlines() if line.startswith("error:")), "")
    if "HIP 5.2" not in error or "libamdhip64-5" not in error:
        problems.append(f"main job on a HIP 5.2 host: the error does not say what was found: {error!r}")
    if len(proc.stderr) > 1500 or "doctor" not in proc.stderr:
        problems.append("main job on a HIP 5.2 host: the message is not short or does not point to doctor")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary clone")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zluda-newcomer-"))
    clone = work / "zluda-runner"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    readme = (clone / "README.md").read_text(encoding="utf-8")
    main_job, tests = setup_commands(readme)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZLUDA_RUNNER_")}
    env["ZLUDA_RUNNER_CACHE"] = str(work / "cache")
    failures: list[str] = []

    install, _, launch = main_job.rpartition(" && ")
    if run_chain(install, clone, env) != 0:
        print("FAILED: the main job's install", file=sys.stderr)
        return 1
    venv_python = clone / ".venv" / "bin" / "python"
    release = work / "zluda-v6"
    standin = [str(venv_python), "-m", "zluda_runner.devtools.standin", "--from-python", str(venv_python),
               "--layout", "v6", "--out", str(release)]
    subprocess.run(standin, check=True, cwd=clone, env=env)
    run_env = dict(env, ZLUDA_RUNNER_ZLUDA_DIR=str(release),
                   LD_LIBRARY_PATH=f"{release}-rocm-stubs")
    code = run_chain(launch, clone, run_env)
    if code != 2:
        failures.append(f"main job: exit {code}, the README documents 2 (no GPU: infer.py says so)")
    failures += distribution_hip_main_job(launch, clone, env)

    code = run_chain(tests, clone, env)
    if code != 0:
        failures.append(f"test command: exit {code}")

    path_env = dict(run_env, PATH=f"{clone / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                    VIRTUAL_ENV=str(clone / ".venv"))
    for command in quick_start_commands(readme):
        if command.startswith(". "):
            continue  # activation: PATH above does what it does
        expected = QUICK_START_EXPECTED.get(command)
        code = run_chain(command, clone, path_env)
        if expected is not None and code not in expected:
            failures.append(f"quick start `{command}`: exit {code}, expected {sorted(expected)}")
        elif expected is None:
            failures.append(f"quick start `{command}`: not in this script's table (exit {code})")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(failures) or "every README command exited as documented")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
