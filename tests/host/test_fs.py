"""host/fs.py: the one fake-root filesystem every host reader goes through."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from zluda_runner.host.fs import MAX_SMALL_BYTES, HostFs


def test_posix_and_windows_paths_map_under_the_root(tmp_path: Path) -> None:
    fs = HostFs(tmp_path)
    assert fs.path("/opt/rocm/.info/version") == tmp_path / "opt" / "rocm" / ".info" / "version"
    assert fs.path("C:\\Program Files\\AMD\\ROCm") == tmp_path / "Program Files" / "AMD" / "ROCm"
    assert HostFs(None).path("/opt/rocm") == Path("/opt/rocm")


def test_reads_are_bounded_and_refuse_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fs = HostFs(tmp_path)
    (tmp_path / "opt" / "rocm" / ".info").mkdir(parents=True)
    (tmp_path / "opt" / "rocm" / ".info" / "version").write_text("6.4.0-15396\n")
    (tmp_path / "big").write_bytes(b"x" * (MAX_SMALL_BYTES + 1))
    assert fs.read_small("/opt/rocm/.info/version") == "6.4.0-15396\n"
    assert fs.read_small("/big") is None and fs.read_text("/big") == "x" * (MAX_SMALL_BYTES + 1)
    assert fs.read_small("/missing") is None and fs.read_small("/opt") is None
    if sys.platform != "win32":
        os.mkfifo(tmp_path / "fifo")  # no writer: a plain open would wait for ever
        assert fs.read_small("/fifo") is None and fs.read_text("/fifo") is None


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_names_and_link_targets(tmp_path: Path) -> None:
    fs = HostFs(tmp_path)
    lib = tmp_path / "usr" / "lib"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.5.2.21153").write_bytes(b"")
    os.symlink("libamdhip64.so.5.2.21153", lib / "libamdhip64.so.5")
    assert fs.names("/usr/lib") == ["libamdhip64.so.5", "libamdhip64.so.5.2.21153"]
    assert fs.readlink_name("/usr/lib", "libamdhip64.so.5") == "libamdhip64.so.5.2.21153"
    assert fs.readlink_name("/usr/lib", "libamdhip64.so.5.2.21153") is None
    assert fs.names("/nowhere") == [] and fs.is_dir("/usr/lib") and not fs.exists("/nowhere")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_the_kfd_topology_is_read_through_the_bounded_reader(tmp_path: Path) -> None:
    """host/gpus read a KFD node's files with a plain read_text (unbounded, and a FIFO there waited for a
    writer for ever): now through read_small, as every host file. A node whose ``name`` is a FIFO is
    listed without its name; one whose ``properties`` is larger than a sysfs attribute can be is not
    read. Run in a child so that the old hang ends (as a failure) instead of stopping the suite."""
    import subprocess
    import textwrap

    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes"
    for node, props in (("1", "simd_count 96\nsimd_per_cu 2\ngfx_target_version 110000\n"),
                        ("2", "simd_count 96\ngfx_target_version 110000\n" + "x" * MAX_SMALL_BYTES)):
        (nodes / node).mkdir(parents=True)
        (nodes / node / "properties").write_text(props)
    os.mkfifo(nodes / "1" / "name")
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        from zluda_runner.host.fs import HostFs
        from zluda_runner.host.gpus import gpus_from_kfd
        print([(g.gfx, g.name, g.compute_units) for g in gpus_from_kfd(HostFs(Path(sys.argv[1])))])
    """)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "[('gfx1100', '', 48)]"), done.stderr
