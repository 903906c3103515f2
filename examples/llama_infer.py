"""The field guide's proof-of-concept workload in miniature: Hugging Face's real Llama, tiny and seeded.

``transformers``' own ``LlamaForCausalLM`` (RMSNorm, rotary embeddings, grouped-query attention,
SwiGLU: the kernels a real Llama runs) at a tiny size, with random weights from
``torch.manual_seed`` -- no download, no tokenizer files: tokens are bytes (vocabulary 256).
``model.generate()`` decodes greedily a fixed number of tokens from a fixed prompt and prints
tokens/s.

    python examples/llama_infer.py --device cpu
    zluda-run python examples/llama_infer.py                   # on the GPU, through ZLUDA
    zluda-run poc --runs 3 --reference cpu -- python examples/llama_infer.py

Precision: float16 on the GPU (what people run), float32 on the CPU (``--dtype auto``): the
CPU's float16 kernels exist in torch but are slow and not what a CPU user would run; the
verdict compares the two with float16's tolerance, the looser of the two dtypes.

Under ``zluda-run ab`` / ``zluda-run poc`` it records the logits of every generated step
("logits", in the model's dtype), the generated token ids ("tokens") and the time of
``generate`` ("generate").  ``transformers`` is an optional extra: ``pip install
'zluda-runner[examples]'``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import torch

try:
    from zluda_runner import ab
except ImportError:  # a python without zluda-runner, run outside `zluda-run ab`/`poc`: record nothing

    class ab:  # type: ignore[no-redef]  # stands in for the module
        enabled = staticmethod(lambda: False)
        record = staticmethod(lambda name, value, **kw: None)
        timer = staticmethod(lambda name: contextlib.nullcontext())


PROMPT = "ZLUDA runs CUDA on AMD. "
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def build_model(args: argparse.Namespace) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=256,  # bytes
        hidden_size=args.hidden,
        intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=max(1, args.heads // 2),  # grouped-query attention, as Llama 2/3
        max_position_embeddings=max(128, len(PROMPT) + args.tokens),
        # wider than the default 0.02, so the random model's next-token choice is clear-cut: a
        # near tie would make float16 and float32 pick different tokens without anything wrong
        initializer_range=0.2,
        bos_token_id=None,
        eos_token_id=None,  # never stop early: every run generates exactly --tokens
        pad_token_id=0,
    )
    torch.manual_seed(args.seed)  # weights from the CPU generator: identical on every device
    return LlamaForCausalLM(config).eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu"
    )
    parser.add_argument("--dtype", choices=["auto", *DTYPES], default="auto",
                        help="auto: float16 on cuda, float32 on cpu")
    parser.add_argument("--tokens", type=int, default=24, help="tokens to generate (at least 1)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        release = os.environ.get("ZLUDA_RUNNER_RELEASE")
        why = (f"it runs through zluda-run (ZLUDA {release}), so the GPU or its HIP runtime is missing: "
               "`zluda-run doctor` says what to fix" if release else "run it through zluda-run")
        print(f"error: --device cuda but torch sees no CUDA device ({why})", file=sys.stderr)
        return 2
    if args.hidden % args.heads or min(args.tokens, args.layers, args.hidden, args.heads) < 1:
        parser.error("--tokens, --layers, --hidden, --heads: at least 1; --hidden: a multiple of --heads")
    try:
        model = build_model(args)
    except ImportError:
        print("error: this example needs transformers: pip install 'zluda-runner[examples]'", file=sys.stderr)
        return 2
    dtype = DTYPES.get(args.dtype) or (torch.float16 if args.device == "cuda" else torch.float32)
    model = model.to(device=args.device, dtype=dtype)
    prompt = torch.tensor([list(PROMPT.encode())], dtype=torch.long, device=args.device)
    settings = {"attention_mask": torch.ones_like(prompt), "do_sample": False, "pad_token_id": 0,
                "max_new_tokens": args.tokens, "min_new_tokens": args.tokens}

    with torch.no_grad():
        model.generate(prompt, **{**settings, "max_new_tokens": 1, "min_new_tokens": 1})  # warm-up
        if args.device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        with ab.timer("generate"):
            out = model.generate(prompt, output_logits=True, return_dict_in_generate=True, **settings)
        if args.device == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    tokens = out.sequences[:, prompt.shape[1]:]
    # generate() hands logits back in float32; in the model's dtype they say what precision they have
    ab.record("logits", torch.stack(out.logits, dim=1).to(dtype))
    ab.record("tokens", tokens)
    text = bytes(tokens[0].tolist()).decode("latin-1")
    print(
        f"device={args.device} dtype={str(dtype).replace('torch.', '')} llama layers={args.layers} "
        f"hidden={args.hidden}: generated {args.tokens} tokens in {elapsed:.3f} s: "
        f"{args.tokens / max(elapsed, 1e-9):.1f} tokens/s"
    )
    print(f"output: {text!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
