"""Reading back a run's record folder: the workload writes it, so whatever is there is a problem of
that run (its line and why), never an exception, and reading it stays bounded in size."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from zluda_runner.ab import RECORDS_FILE
from zluda_runner.abtest.records import MAX_VALUES, read_records
from zluda_runner.abtest.run import ab_import_dir, run_recorded
from zluda_runner.core.fsutil import file_kind


def _write(folder: Path, *lines: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RECORDS_FILE).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return folder


def _output(name: object = "a", **fields: object) -> str:
    entry: dict[str, object] = {"kind": "output", "name": name, "dtype": "float64", "shape": [2],
                                "values": [1.0, 2.0]}
    entry.update(fields)
    return json.dumps(entry)


GOOD = _output("good")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("[1, 2]", "a JSON list, not an object"),
        ('"text"', "a JSON str, not an object"),
        ("[" * 100_000, "nested too deeply"),
        ("\x00garbage", "Expecting value"),
        (_output(5), "its name is not a string"),
        (_output(["a"]), "its name is not a string"),
        (_output(dtype={"x": 1}), "dtype must be a short string"),
        (_output(shape=[-2]), "shape must be a list of sizes >= 0"),
        (_output(shape="ab"), "shape must be a list of sizes >= 0"),
        (_output(shape=[5]), "shape [5] needs 5 values, the record has 2"),
        (_output(shape=[10**11, 10**11]), "record a slice of it"),
        (_output(values="12"), "values must be a list of numbers"),
        (_output(values=["1", "nan"]), "values must be a list of numbers"),
        (_output(values=[10**400, 1]), "beyond float64's range"),
        (_output(logits="yes"), "logits must be true, false or absent"),
        (_output(file="../../etc/passwd", shape=[1]), "a plain file name in the record folder"),
        (_output(file=".", shape=[1]), "a plain file name in the record folder"),
        (_output(file="x.bin", storage="u", shape=[1]), "storage must be one of"),
        ('{"kind": "timing", "name": "t", "seconds": NaN}', "seconds must be a number >= 0"),
        ('{"kind": "timing", "name": "t", "seconds": -1}', "seconds must be a number >= 0"),
        ('{"kind": "timing", "name": "t", "seconds": "1"}', "seconds must be a number >= 0"),
        ('{"kind": "timing", "name": 3, "seconds": 1}', "its name is not a string"),
    ],
)
def test_a_garbled_record_is_a_problem_of_its_line(tmp_path: Path, line: str, why: str) -> None:
    outputs, timings, problems = read_records(_write(tmp_path, line, GOOD))
    assert len(problems) == 1 and problems[0].startswith("unreadable record on line 1: ")
    assert why in problems[0]
    assert list(outputs) == ["good"] and timings == {}  # the other lines still count


def test_what_ab_writes_reads_back_whole(tmp_path: Path) -> None:
    (tmp_path / "t.bin").write_bytes(b"".join(v.to_bytes(8, "little", signed=True) for v in (1, -2, 3)))
    folder = _write(tmp_path, _output("plain"), _output("scalar", shape=[], values=[7], dtype="int64"),
                    _output("empty", shape=[2, 0], values=[]), _output("t", shape=[3], file="t.bin",
                                                                      storage="q", dtype="int64"),
                    '{"kind": "timing", "name": "work", "seconds": 0.5}', '{"kind": "later", "x": 1}')
    outputs, timings, problems = read_records(folder)
    assert problems == [] and timings == {"work": [0.5]}
    assert outputs["t"].values == (1.0, -2.0, 3.0) and outputs["scalar"].shape == ()
    assert outputs["empty"].values == () and outputs["plain"].values == (1.0, 2.0)


def test_a_tensor_file_that_is_no_regular_file_is_never_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.bin")  # opening it for reading would wait for a writer, forever
    (tmp_path / "sub.bin").mkdir()
    folder = _write(tmp_path, _output("p", shape=[1], file="pipe.bin"),
                    _output("d", shape=[1], file="sub.bin"), GOOD)
    outputs, _, problems = read_records(folder)
    assert list(outputs) == ["good"]
    assert [(p.count("pipe.bin"), p.count("sub.bin")) for p in problems] == [(1, 0), (0, 1)]
    assert file_kind(stat.S_IFIFO) in problems[0] and file_kind(stat.S_IFDIR) in problems[1]  # what it is


READ_UNDER_LIMIT = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))
    from zluda_runner.abtest.records import read_records
    outputs, timings, problems = read_records(Path(sys.argv[1]))
    print(sorted(outputs), problems)
    """
)


def test_reading_back_is_bounded_in_memory(tmp_path: Path) -> None:
    """A 4 GiB tensor file that claims to hold 2 values, and a 4 GiB records file: read under a
    768 MiB address-space limit, each is refused (or read up to its bound), never loaded whole."""
    tensor = tmp_path / "tensor"
    tensor.mkdir()
    with open(tensor / "big.bin", "wb") as fh:
        fh.truncate(4 << 30)  # sparse: no disk used
    _write(tensor, _output("big", file="big.bin"), GOOD)
    records = tmp_path / "records"
    records.mkdir()
    with open(records / RECORDS_FILE, "wb") as fh:
        fh.write((GOOD + "\n").encode())
        fh.truncate(4 << 30)
    for folder, want in ((tensor, "big.bin: it holds 4294967296 bytes"), (records, "the rest was not read")):
        done = subprocess.run([sys.executable, "-c", READ_UNDER_LIMIT, str(folder)], capture_output=True,
                              text=True, check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "['good']" in done.stdout and want in done.stdout


def test_too_many_values_in_one_run_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("zluda_runner.abtest.records.MAX_VALUES", 3)
    outputs, _, problems = read_records(_write(tmp_path, _output("a"), _output("b"), _output("c", shape=[1],
                                                                                          values=[1])))
    assert sorted(outputs) == ["a", "c"]
    assert problems == ["unreadable record on line 2: output 'b': 2 values are more than zluda-run "
                        "reads back from one run (3 in all): record a slice of it"]
    assert MAX_VALUES >= 1 << 24  # a real network's logits fit


def test_garbage_in_the_record_folder_fails_the_run_not_the_command(tmp_path: Path) -> None:
    script = tmp_path / "garbage.py"
    script.write_text("import os\nopen(os.path.join(os.environ['ZLUDA_RUNNER_AB_DIR'], 'records.jsonl'), 'w')"
                      ".write('[1]\\n' + '[' * 100000 + '\\n')\n")
    done = run_recorded([sys.executable, str(script)], dict(os.environ), tmp_path / "run", ab_import_dir(
        tmp_path / "import"))
    assert done.exit_code == 0 and done.outputs == {}
    assert done.error == ("unreadable record on line 1: a JSON list, not an object; "
                          "unreadable record on line 2: nested too deeply")
    assert not (tmp_path / "run").exists()  # read, then removed: N runs never keep N copies on disk


RECORDS_MANY = textwrap.dedent(
    """
    import sys
    from zluda_runner import ab

    ab.record("ints", list(range(200_000)))
    ab.record("floats", [[i / 7 for i in range(1000)] for _ in range(200)])
    ab.record("wide", [2**70, 1])  # beyond int64: stays inline, read as floats
    ab.record("mixed", [2**70] + [0.5] * 2000)
    """
)


def test_a_long_list_goes_to_a_file_and_reads_back_whole(tmp_path: Path) -> None:
    """Inline, 200 000 values made a records line of megabytes: the records file's bound would cut
    a list of a few million; like a tensor's, a long list's values now go to a .bin file."""
    script = tmp_path / "many.py"
    script.write_text(RECORDS_MANY)
    folder = tmp_path / "run"
    env = {**os.environ, "ZLUDA_RUNNER_AB_DIR": str(folder),
           "PYTHONPATH": str(ab_import_dir(tmp_path / "import"))}
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=300)
    assert (folder / RECORDS_FILE).stat().st_size < 2000
    outputs, _, problems = read_records(folder)
    assert problems == []
    assert outputs["ints"].values == tuple(float(i) for i in range(200_000))
    assert outputs["ints"].dtype == "int64" and outputs["ints"].shape == (200_000,)
    assert outputs["floats"].shape == (200, 1000) and outputs["floats"].values[1] == 1 / 7
    assert outputs["wide"].values == (float(2**70), 1.0)
    mixed = outputs["mixed"]
    assert mixed.values[:2] == (float(2**70), 0.5) and mixed.dtype == "float64"


WRITERS = textwrap.dedent(
    """
    import os, sys
    from zluda_runner import ab

    for i in range(20):
        ab.record(f"{sys.argv[1]}-{i}", [0.123456789] * 1000)  # a line of about 15 kB, inline
    """
)


def test_processes_recording_at_once_each_add_whole_lines(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITERS)
    folder = tmp_path / "run"
    folder.mkdir()
    env = {**os.environ, "ZLUDA_RUNNER_AB_DIR": str(folder),
           "PYTHONPATH": str(ab_import_dir(tmp_path / "import"))}
    writers = [subprocess.Popen([sys.executable, str(script), str(n)], env=env) for n in range(4)]
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0, 0]
    outputs, _, problems = read_records(folder)
    assert problems == [] and len(outputs) == 80
