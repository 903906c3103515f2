"""``warmup --heartbeat`` takes a positive finite number of seconds: on 7732311 ``nan`` passed the
``<= 0`` check and gave no heartbeat at all, silently (``inf`` the same)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from zluda_runner.core.errors import HostError
from zluda_runner.launch.warmup import warmup


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 0.0, -1.0])
def test_a_heartbeat_that_is_no_interval_is_refused(value: float, tmp_path: Path) -> None:
    with pytest.raises(HostError) as info:
        warmup(["true"], None, [tmp_path], heartbeat_s=value)
    assert info.value.kind == "host" and f"(got {value})" in info.value.message
