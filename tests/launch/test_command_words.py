"""A command's words reach the system as text without NUL: the public API says which word is not, before
anything is planned or started (on 313b340 a NUL ended zr.run/zr.start in posix_spawn's ValueError, a
bytes word or a pathlib.Path first word in a TypeError, and None became the word "None")."""

from __future__ import annotations

from pathlib import Path

import pytest

import zluda_runner as zr
from zluda_runner.launch.process import command_words, run_process


@pytest.mark.parametrize(("argv", "said"), [
    (["sh", "-c", "exit 7\0"], "word 2 of the command holds a NUL character"),
    ([b"sh", "-c", "true"], "word 0 of the command is b'sh'"),
    (["sh", None], "word 1 of the command is None"),
    ([Path("/bin") / "sh\0"], "word 0 of the command holds a NUL character"),
])
def test_the_api_names_the_word(argv: list[object], said: str, tmp_path: Path) -> None:
    options = zr.Options(zluda_dir=tmp_path / "never-read", cache_dir=tmp_path / "cache")
    for call in (lambda: zr.run(argv, options), lambda: zr.prepare_launch(argv, options),
                 lambda: zr.plan_command(argv, options)):
        with pytest.raises(zr.ZludaRunnerError) as caught:
            call()
        assert said in caught.value.message and caught.value.hint
    assert not (tmp_path / "cache").exists()  # refused before anything was planned


def test_paths_and_numbers_are_written_as_text() -> None:
    assert command_words([Path("/bin/sh"), "-c", "exit $0", 7]) == ["/bin/sh", "-c", "exit $0", "7"]
    assert run_process([Path("/bin/sh"), "-c", "exit $0", 7], {"PATH": "/usr/bin:/bin"}) == 7  # type: ignore[list-item]


def test_one_string_is_not_a_list_of_words() -> None:
    with pytest.raises(zr.ZludaRunnerError, match=r"\('python infer\.py'\)"):
        command_words("python infer.py")
