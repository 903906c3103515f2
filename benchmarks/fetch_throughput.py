"""Fetch throughput on loopback: our download (SHA-256 included) beside curl's.

Builds a ~200 MB release-like archive in a temporary folder, serves it from
127.0.0.1 with a sendfile()-based HTTP server, then times, best of N runs:

- the floors: ``curl -s -o /dev/null URL`` (no hashing, no disk writes: an upper bound),
  ``curl -s -o FILE URL`` (writes the file, like we do), where curl is on PATH, and always Python's
  own ``urllib.request`` reading the body into nothing,
- ``zluda_runner.release.fetch.download`` (streams to a file inside a temp cache, hashes while
  streaming, verifies),
- unpacking the verified archive (reported on its own, not part of the fetch).

Prints MB/s for each and the ratio to each floor. Never asserts on time. ``--smoke``: a 2 MB archive,
one run (seconds: CI checks that it runs).

    python benchmarks/fetch_throughput.py [--size-mb 200] [--runs 3] [--smoke]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from zluda_runner.release.fetch import RetryPolicy, download
from zluda_runner.release.unpack import safe_extract

MB = 1_000_000


def build_archive(folder: Path, size_mb: int) -> Path:
    """A stored (uncompressed) zip of random 'libraries': incompressible, quick to build."""
    archive = folder / "zluda-bench.zip"
    per_file = 16 * MB
    remaining = size_mb * MB
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        i = 0
        while remaining > 0:
            n = min(per_file, remaining)
            zf.writestr(f"zluda/lib{i:02d}.so", os.urandom(n))
            remaining -= n
            i += 1
    return archive


def serve(path: Path) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            size = path.stat().st_size
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            with path.open("rb") as src:
                self.connection.sendfile(src)
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/{path.name}"


def best_of(runs: int, fn) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.size_mb, args.runs = 2, 1
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(var, None)
    os.environ["NO_PROXY"] = "127.0.0.1"

    with tempfile.TemporaryDirectory(prefix="zr-bench-") as tmp:
        folder = Path(tmp)
        archive = build_archive(folder, args.size_mb)
        size = archive.stat().st_size
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        server, url = serve(archive)
        cache = folder / "cache"
        cache.mkdir()
        results: dict[str, float] = {}
        try:
            curl = shutil.which("curl")
            if curl:
                results["floor: curl -o /dev/null"] = best_of(
                    args.runs, lambda: subprocess.run([curl, "-s", "-o", os.devnull, url], check=True)
                )
                out = cache / "curl.zip"
                results["floor: curl -o FILE"] = best_of(
                    args.runs, lambda: subprocess.run([curl, "-s", "-o", str(out), url], check=True)
                )
                out.unlink(missing_ok=True)

            def read_only() -> None:
                with urllib.request.urlopen(url) as response:  # our own loopback server
                    while response.read(1 << 20):
                        pass

            results["floor: urllib read only"] = best_of(args.runs, read_only)
            dest = cache / "ours.zip"
            policy = RetryPolicy(attempts=1)
            results["zluda-run fetch (sha256 verified)"] = best_of(
                args.runs,
                lambda: download(url, dest, expected_sha256=digest, progress=False, retry=policy),
            )

            def unpack() -> None:
                target = cache / "unpacked"
                shutil.rmtree(target, ignore_errors=True)
                safe_extract(dest, "zip", target)

            unpack_s = best_of(1, unpack)
            data = memoryview(dest.read_bytes())

            def hash_only() -> None:
                hasher = hashlib.sha256()
                for i in range(0, len(data), 1 << 20):
                    hasher.update(data[i : i + (1 << 20)])

            hash_s = best_of(args.runs, hash_only)
        finally:
            server.shutdown()
            server.server_close()

    print(f"archive: {size / MB:.1f} MB on loopback, best of {args.runs} runs")
    for name, seconds in results.items():
        print(f"  {name:38s} {size / MB / seconds:8.1f} MB/s  ({seconds:.3f} s)")
    ours = results["zluda-run fetch (sha256 verified)"]
    for ref in ("floor: curl -o /dev/null", "floor: curl -o FILE", "floor: urllib read only"):
        if ref in results:
            goal = "  (goal >= 0.8)" if "curl" in ref else ""
            print(f"  ratio ours / {ref:25s} {results[ref] / ours:8.2f}{goal}")
    print(f"  sha256 alone, in memory (a ceiling)    {size / MB / hash_s:8.1f} MB/s  ({hash_s:.3f} s)")
    print(f"  unpack (separate, not in the fetch)    {size / MB / unpack_s:8.1f} MB/s  ({unpack_s:.3f} s)")


if __name__ == "__main__":
    main()
