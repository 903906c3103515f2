"""Turn each of our reports into per-item rows, from its ``to_dict()`` (duck-typed).

* ``probe`` (ProbeReport, kind driver): one item per case; ok = status "pass".
* ``torch-ops`` (ProbeReport, kind torch): one item per op; numbers max_abs_err/max_rel_err.
* ``trace`` (TraceReport): one item per driver function; ok = no failing call;
  numbers calls/failures.
* ``ab`` (AbReport): ``output:<name>`` items (ok = "agree") and ``timing:<name>``
  items (numbers median_a_s/median_b_s/ratio_a_over_b; ok None).
* ``verify-load`` (VerifyResult or a list of BindingEvidence): one item per need;
  status taken / not-taken; detail the file the loader took.
* ``doctor`` (DoctorReport): one item per check; ok = status "ok", warn is neither.
* ``poc`` (PocReport): one item per criterion (ran, right, on the GPU, stable, speed); ok = "pass";
  detail its summary; "on the GPU" carries the runs' busy peak as a number.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zluda_runner.results.fingerprint import Scrubber
from zluda_runner.results.schema import KINDS, MAX_ITEMS_PER_RUN, MAX_NAME, ItemRecord, ResultsStoreError

NEUTRAL = frozenset({"skipped", "unavailable"})


def as_dict(report: object) -> dict[str, Any]:
    if isinstance(report, dict):
        return report
    to_dict = getattr(report, "to_dict", None)
    if callable(to_dict):
        data = to_dict()
        if isinstance(data, dict):
            return data
    raise ResultsStoreError(
        f"cannot record a {type(report).__name__}: it has no to_dict()",
        "pass one of zluda-runner's report objects (or its to_dict())",
    )


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _probe(data: dict[str, Any], s: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    items = []
    for case in data.get("cases") or []:
        status = str(case.get("status", "?"))
        detail = " ".join(str(x) for x in (case.get("result_name"), case.get("detail")) if x)
        numbers = {"duration_s": _num(case.get("duration_s"))}
        for key in ("max_abs_err", "max_rel_err"):
            if case.get(key) is not None:
                numbers[key] = _num(case.get(key))
        ok = None if status in NEUTRAL else status == "pass"
        items.append(
            ItemRecord(s.text(str(case.get("id", "?")), MAX_NAME), status, ok, s.text(detail), numbers)
        )
    load = data.get("load") or {}
    return items, {"load": load.get("status")} if load else {}


def _trace(data: dict[str, Any], s: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    items = []
    for call in data.get("calls") or []:
        results = call.get("results") or {}
        failures = sum(int(n) for name, n in results.items() if name != "CUDA_SUCCESS" and isinstance(n, int))
        first = call.get("first_failure") or {}
        detail = ""
        if first:
            detail = f"first failure {first.get('result')} at call {first.get('call_number')}"
        if call.get("missing_in_driver"):
            detail = (detail + "; " if detail else "") + "missing in driver"
        status = "fail" if failures else "pass"
        items.append(
            ItemRecord(
                s.text(str(call.get("function", "?")), MAX_NAME),
                status,
                not failures,
                s.text(detail),
                {"calls": _num(call.get("count")), "failures": float(failures)},
            )
        )
    return items, {"exit_code": data.get("exit_code")}


def _ab(data: dict[str, Any], s: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    items = []
    for out in data.get("outputs") or []:
        status = str(out.get("status", "?"))
        numbers = {k: _num(out.get(k)) for k in ("max_abs_error", "max_rel_error", "argmax_agreement")}
        items.append(
            ItemRecord(s.text(f"output:{out.get('name')}", MAX_NAME), status, status == "agree", "", numbers)
        )
    for timing in data.get("timings") or []:
        a, b = timing.get("a") or {}, timing.get("b") or {}
        numbers = {
            "median_a_s": _num(a.get("median_s")),
            "median_b_s": _num(b.get("median_s")),
            "ratio_a_over_b": _num(timing.get("ratio_a_over_b")),
        }
        faster = timing.get("faster")
        items.append(
            ItemRecord(
                s.text(f"timing:{timing.get('name')}", MAX_NAME), f"faster:{faster}", None, "", numbers
            )
        )
    agree, faster = data.get("agree"), data.get("faster")
    short = "agree" if agree is True else "differ" if agree is False else "no outputs"
    if faster:
        short += ", same speed" if faster == "same" else f", {faster} faster"
    extra = {
        "verdict": short,
        "verdict_text": s.text(str(data.get("verdict", ""))),
        "agree": agree,
        "faster": faster,
    }
    return items, extra


def _verify_load(data: Any, s: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    if isinstance(data, dict):
        bindings, extra = data.get("bindings") or [], {"exit_code": data.get("exit_code")}
    else:
        bindings, extra = data, {}
    items = []
    for b in bindings:
        b = as_dict(b)
        taken = bool(b.get("taken"))
        where = b.get("actual") or "not loaded"
        items.append(
            ItemRecord(
                s.text(str(b.get("name", "?")), MAX_NAME),
                "taken" if taken else "not-taken",
                taken,
                s.text(str(where)),
                {},
            )
        )
    return items, extra


def _doctor(data: dict[str, Any], s: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    items = []
    for check in data.get("checks") or []:
        status = str(check.get("status", "?"))
        ok = {"ok": True, "fail": False}.get(status)
        items.append(
            ItemRecord(
                s.text(str(check.get("id", "?")), MAX_NAME),
                status,
                ok,
                s.text(str(check.get("message", ""))),
                {},
            )
        )
    return items, {"exit_code": data.get("exit_code")}


def _poc(data: dict[str, Any], s: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    runs = [r for r in data.get("runs") or [] if isinstance(r, dict)]
    busy = [g.get("busy_peak") for r in runs if isinstance(g := r.get("gpu"), dict)]
    items = []
    for c in data.get("criteria") or []:
        status = str(c.get("status", "?"))
        numbers: dict[str, float | None] = {}
        if c.get("name") == "on the GPU":
            numbers["busy_peak"] = max((b for b in map(_num, busy) if b is not None), default=None)
        items.append(ItemRecord(s.text(f"criterion:{c.get('name')}", MAX_NAME), status, status == "pass",
                                s.text(str(c.get("summary", ""))), numbers))
    extra = {"verdict": data.get("verdict"), "verdict_text": s.text(str(data.get("summary", ""))),
             "mode": data.get("mode"), "runs": len(runs)}
    return items, extra


_CONVERTERS: dict[str, Callable[[Any, Scrubber], tuple[list[ItemRecord], dict[str, Any]]]] = {
    "probe": _probe,
    "torch-ops": _probe,
    "trace": _trace,
    "ab": _ab,
    "verify-load": _verify_load,
    "doctor": _doctor,
    "poc": _poc,
}


def report_items(kind: str, report: object, scrubber: Scrubber) -> tuple[list[ItemRecord], dict[str, Any]]:
    """The items of ``report`` and extra summary fields (verdict, exit code)."""
    if kind not in _CONVERTERS:
        raise ResultsStoreError(f"unknown kind of run {kind!r}", f"one of: {', '.join(KINDS)}")
    if kind == "verify-load" and isinstance(report, list | tuple):
        data: Any = list(report)
    else:
        data = as_dict(report)
    items, extra = _CONVERTERS[kind](data, scrubber)
    if len(items) > MAX_ITEMS_PER_RUN:
        raise ResultsStoreError(
            f"a {kind} run with {len(items)} items is more than the store keeps ({MAX_ITEMS_PER_RUN})",
            "record a smaller run",
        )
    return items, {k: v for k, v in extra.items() if v is not None}
