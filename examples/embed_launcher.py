"""What SD.Next's zluda_installer.py does (pick, fetch, place or launch, report), through zluda_runner's API.

    python examples/embed_launcher.py -- python launch.py                  # Linux: run it under ZLUDA
    python examples/embed_launcher.py --torch-lib venv/Lib/site-packages/torch/lib -- python launch.py
    python examples/embed_launcher.py --zluda-dir ~/zluda -- ./app         # a ZLUDA you unpacked or built
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import zluda_runner as zr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zluda-dir", type=Path, help="use this ZLUDA folder instead of fetching a release")
    parser.add_argument("--cache-dir", type=Path, help="where releases are kept (default: the user cache)")
    parser.add_argument("--hip", help="the HIP SDK / ROCm version to pick for (default: found here)")
    parser.add_argument("--torch-lib", type=Path, help="Windows: place into this torch/lib, start, put back")
    parser.add_argument("command", nargs="+", help="the app to start, e.g. python launch.py")
    args = parser.parse_args(argv)
    options = zr.Options(zluda_dir=args.zluda_dir, cache_dir=args.cache_dir)
    try:
        if args.zluda_dir is None:  # pick and fetch, as zluda_installer.py downloads its ZLUDA
            choice = zr.choose_release(options, hip=args.hip, os="windows" if args.torch_lib else None)
            print(f"ZLUDA {choice.release} ({choice.asset}): needs {choice.needs}")
            for note in choice.notes:
                print(f"  note: {note}")
            fetched = zr.fetch(options, version=choice.release, os=choice.os)
            print(f"  {fetched.action}, verified ({fetched.hash_source}): {fetched.path}")
            options = zr.Options(release=choice.release, cache_dir=args.cache_dir)
        plan = zr.plan_command(args.command, options, torch_lib=args.torch_lib)
        for binding in plan.bindings:  # the report: what binds to what, and how sure that is
            print(f"  {binding.verdict:5} {binding.need} -> {binding.shim or '(kept)'}")
        if args.torch_lib is not None:  # Windows: the app starts itself, with ZLUDA's DLLs in torch/lib
            with zr.placed(args.torch_lib, options) as done:
                print(f"placed {len(done.placed)} DLL(s) in {done.torch_lib}")
                status = subprocess.run(args.command, check=False).returncode
            print(f"restored {done.torch_lib}")
        else:
            status = zr.run(args.command, options)
    except zr.ZludaRunnerError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    print(f"{args.command[0]} exited with {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
