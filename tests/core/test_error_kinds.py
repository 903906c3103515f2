"""Every error has a stable ``kind`` (issue 27, point 10): what a program (and a test) tells errors
apart by, where the message is English that may be reworded. ``--json`` carries it."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

from click.testing import CliRunner

import zluda_runner
from zluda_runner.cli import main_group
from zluda_runner.core import errors

# the kinds are an interface: a renamed error class changes its kind, and this table says so
KINDS = {
    "ZludaRunnerError": "error", "UsageFault": "usage", "CheckFailedError": "check-failed",
    "LockError": "lock", "LockDriftError": "lock-drift",
    "ManifestError": "manifest", "SelectionError": "selection", "NothingFitsError": "nothing-fits",
    "FetchError": "fetch", "TransferError": "transfer", "ChecksumError": "checksum",
    "UnsafeArchiveError": "unsafe-archive", "ArchiveError": "archive",
    "UnusableArchiveError": "unusable-archive",
    "CacheError": "cache", "BinaryFormatError": "binary-format", "TargetError": "target", "PlanError": "plan",
    "FatalPlanError": "fatal-plan", "LaunchError": "launch", "CommandNotFoundError": "command-not-found",
    "CommandNotExecutableError": "command-not-executable", "PlacementError": "placement",
    "NothingToRestoreError": "nothing-to-restore",
    "FileInUseError": "file-in-use", "NotWritableError": "not-writable", "NativeBuildError": "native-build",
    "ProbeError": "probe",
    "TraceError": "trace", "HostError": "host", "ArgumentTypeError": "argument-type",
    "ArgumentValueError": "argument-value", "ResultsStoreError": "results-store",
    "NoResultsStoreError": "no-results-store", "StoreBusyError": "store-busy",
    "StoreUnreachableError": "store-unreachable", "StoreRefusedValueError": "store-refused-value",
    "ReadOnlyStoreError": "read-only-store", "ForeignDatabaseError": "foreign-database",
    "StoreWriteFailedError": "store-write-failed", "BundleError": "bundle", "OutputFileError": "output-file",
    "UnsupportedArchError": "unsupported-arch",
}


def _every_error() -> dict[str, type[errors.ZludaRunnerError]]:
    for info in pkgutil.walk_packages(zluda_runner.__path__, "zluda_runner."):
        if info.name.rsplit(".", 1)[-1] in ("torch_ops", "torch_opinfo", "__main__"):
            continue  # scripts for the target interpreter; the CLI entry point
        importlib.import_module(info.name)
    found: dict[str, type[errors.ZludaRunnerError]] = {"ZludaRunnerError": errors.ZludaRunnerError}
    todo = [errors.ZludaRunnerError]
    while todo:
        for sub in todo.pop().__subclasses__():
            found[sub.__qualname__] = sub
            todo.append(sub)
    return found


def test_every_error_class_has_its_own_stable_kind() -> None:
    kinds = {name: cls.kind for name, cls in _every_error().items()}
    assert kinds == KINDS
    assert len(set(kinds.values())) == len(kinds)  # no two classes share a kind


def test_an_instance_carries_its_class_kind() -> None:
    assert errors.ChecksumError("x").kind == "checksum"
    assert errors.UsageFault("x", exit_code=2).kind == "usage"


def test_the_json_error_names_its_kind(tmp_path: Path) -> None:
    bad = tmp_path / "manifest.json"
    bad.write_text("{ not json")
    out = CliRunner().invoke(main_group, ["--json", "--manifest", str(bad), "--cache-dir", str(tmp_path),
                                          "releases"])
    error = json.loads(out.stdout)
    assert (out.exit_code, error["exit_code"], error["kind"]) == (1, 1, "manifest"), out.output


def test_an_errors_details_reach_json_as_data(capsys) -> None:  # type: ignore[no-untyped-def]
    """``details`` (stable data beside the message) is the ``details`` object of the --json error."""
    import json

    from zluda_runner.cli import report_error
    from zluda_runner.core.errors import LockDriftError

    report_error(LockDriftError("x", details={"changed": [{"path": "/r/libcuda.so.1", "change": "sha256"}]}),
                 as_json=True)
    shown = json.loads(capsys.readouterr().out)
    assert shown["kind"] == "lock-drift" and shown["details"] == {
        "changed": [{"path": "/r/libcuda.so.1", "change": "sha256"}]}
