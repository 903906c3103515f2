"""Terminal views that still live beside their stage (the releases listing, warmup, ZLUDA's compile cache,
the loader's evidence), named here so a front end finds every view in :mod:`zluda_runner.report`.
Their home is this package: move each in when its stage is next touched."""

from __future__ import annotations

from zluda_runner.host.compile_cache import render_clean_text as render_compile_clean
from zluda_runner.host.compile_cache import render_text as render_compile_cache
from zluda_runner.launch.verify import render as render_verification
from zluda_runner.launch.warmup import heartbeat_text as warmup_heartbeat
from zluda_runner.launch.warmup import render_text as render_warmup
from zluda_runner.release.listing import render_for_terminal as render_releases

__all__ = ["render_compile_cache", "render_compile_clean", "render_releases", "render_verification",
           "render_warmup", "warmup_heartbeat"]
