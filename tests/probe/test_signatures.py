"""The probe's function table agrees with the packaged header facts (cudaTypedefs.h)."""

from __future__ import annotations

from zluda_runner.data.driver_api import driver_api
from zluda_runner.probe.bindings import make_ffi
from zluda_runner.probe.cases import CATALOGUE
from zluda_runner.probe.signatures import FUNCTIONS


def _count(params: str) -> int:
    params = params.strip()
    if params in ("", "void"):
        return 0
    depth, count = 0, 1
    for ch in params:
        depth += ch == "("
        depth -= ch == ")"
        count += ch == "," and depth == 0
    return count


def test_each_function_matches_a_header_typedef() -> None:
    api = driver_api()
    keys = {(e.name, e.version): e.params for e in api.entry_points if not e.variant}
    symbols = set(api.symbols)
    wrong = []
    for name, symbol, version, params in FUNCTIONS:
        header = keys.get((name, version))
        if header is None or symbol not in symbols or _count(header) != _count(params):
            wrong.append((name, symbol, version, params, header))
    assert wrong == []
    assert len({f[1] for f in FUNCTIONS}) == len(FUNCTIONS) >= 150


def test_declarations_parse_and_cases_are_well_formed() -> None:
    make_ffi()
    ids = [c.id for c in CATALOGUE]
    assert len(ids) == len(set(ids))
    for case in CATALOGUE:  # a case needs only earlier cases, so a skip always has its reason
        assert all(ids.index(n) < ids.index(case.id) for n in case.needs), case.id
