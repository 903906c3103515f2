"""A small causal transformer, built in code with seeded weights, generating greedily.

No download: the tokenizer is the 95 printable ASCII characters, one token each.  Prints
tokens/s and the generated text (gibberish from random weights, but varied: the output head
is not tied to the embedding, which would make a random model echo its last token forever).

    python examples/infer.py --device cpu
    zluda-run python examples/infer.py --device cuda        # the same model through ZLUDA
    zluda-run ab --b-python ~/rocm-venv/bin/python -- examples/infer.py --device cuda

Under ``zluda-run ab`` it records the logits of every generated step ("logits"), the
generated token ids ("tokens") and the time of the generation loop ("generate").
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch
from torch import nn

try:
    from zluda_runner import ab
except ImportError:  # runs without zluda-runner installed
    ab = None

FIRST_CHAR, VOCAB = 32, 95  # " " .. "~"


def encode(text: str) -> list[int]:
    """Printable ASCII -> token ids; anything else becomes "?"."""
    return [ord(c) - FIRST_CHAR if 0 <= ord(c) - FIRST_CHAR < VOCAB else ord("?") - FIRST_CHAR for c in text]


def decode(ids: list[int]) -> str:
    return "".join(chr(FIRST_CHAR + i) for i in ids)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, dim: int, heads: int, layers: int, context: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB, bias=False)
        self.context = context

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids[:, -self.context :]
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.embed(ids) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


@torch.no_grad()
def generate(model: TinyLM, prompt: torch.Tensor, tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = prompt
    step_logits = []
    for _ in range(tokens):
        logits = model(ids)[:, -1, :]
        step_logits.append(logits)
        ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return ids[:, prompt.shape[1] :], torch.stack(step_logits, dim=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu"
    )
    parser.add_argument("--tokens", type=int, default=32, help="tokens to generate (at least 1)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompt", default="ZLUDA runs CUDA on AMD. ")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        release = os.environ.get("ZLUDA_RUNNER_RELEASE")
        why = (f"it runs through zluda-run (ZLUDA {release}), so the GPU or its HIP runtime is missing: "
               "`zluda-run doctor` says what to fix" if release else "run it through zluda-run")
        print(f"error: --device cuda but torch sees no CUDA device ({why})", file=sys.stderr)
        return 2
    if args.dim % args.heads:
        parser.error("--dim must be a multiple of --heads")
    if min(args.tokens, args.layers, args.dim, args.heads) < 1:
        parser.error("--tokens, --layers, --dim and --heads must be at least 1")

    torch.manual_seed(args.seed)  # weights come from the CPU generator: identical on every device
    model = TinyLM(args.dim, args.heads, args.layers, context=max(64, args.tokens + len(args.prompt)))
    model = model.eval().to(args.device)
    prompt = torch.tensor([encode(args.prompt or " ")], dtype=torch.long, device=args.device)

    generate(model, prompt, 1)  # warm-up step (first-use kernel compiles, allocator)
    if args.device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    if ab is not None:
        with ab.timer("generate"):
            out, logits = generate(model, prompt, args.tokens)
    else:
        out, logits = generate(model, prompt, args.tokens)
    if args.device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    if ab is not None:
        ab.record("logits", logits)
        ab.record("tokens", out)
    print(
        f"device={args.device} layers={args.layers} dim={args.dim} generated {args.tokens} tokens "
        f"in {elapsed:.3f} s: {args.tokens / max(elapsed, 1e-9):.1f} tokens/s"
    )
    print(f"output: {decode(out[0].tolist())!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
