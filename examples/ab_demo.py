"""The smallest use of the ab API: record outputs and time a region.

    python examples/ab_demo.py                     # prints a line; records nothing
    zluda-run ab --b-python ~/rocm-venv/bin/python -- examples/ab_demo.py --device cuda
    zluda-run ab --a-cmd "python examples/ab_demo.py --offset 0.1" --b-cmd "python examples/ab_demo.py"

``--offset`` adds a constant to the recorded product, to see what a disagreement looks like. ``ab``
allows |A-B| <= 0.001 + 0.001*|B| per element (torch's own tolerance across backends), so an offset of
0.001 still agrees; 0.1 puts every element of the product outside it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import torch

try:
    from zluda_runner import ab
except ImportError:  # a python without zluda-runner, run outside `zluda-run ab`: record nothing

    class ab:  # type: ignore[no-redef]  # stands in for the module
        enabled = staticmethod(lambda: False)
        record = staticmethod(lambda name, value, **kw: None)
        timer = staticmethod(lambda name: contextlib.nullcontext())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--offset", type=float, default=0.0, help="planted error added to the product")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.size < 1 or args.repeat < 1:
        parser.error("--size and --repeat must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(args.size, args.size, generator=gen).to(args.device)
    w = torch.randn(args.size, 10, generator=gen).to(args.device)
    for _ in range(args.repeat):
        with ab.timer("matmul"):
            product = x @ x
    logits = product @ w
    ab.record("product", product.cpu() + args.offset)
    ab.record("logits", logits)
    ab.record("trace", float(product.trace()))
    print(f"ab_demo: {args.size}x{args.size} on {args.device}, recording={'on' if ab.enabled() else 'off'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
