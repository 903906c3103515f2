"""The fork's Windows builds (lshqqytiger/ZLUDA) ship their CUDA 11 libraries un-renamed (``cublas.dll``):
the name torch loads each under, what NVRTC needs, what stands in by name only. What a ``--zluda-dir``
folder holding the fork's DLLs is read with (:func:`~zluda_runner.release.layout.scan_release_dir`), the
manifest untouched: file by file, by name, whether or not the folder is one of the manifest's zips (an
older or trimmed fork folder has no cuFFT or NVRTC). Every fork Windows asset of the packaged manifest
lists the same files (tests/release/test_fork_names.py holds the two together)."""

from __future__ import annotations

from dataclasses import dataclass

#: the launchers every fork zip ships
FORK_LAUNCHERS = ("zluda.exe", "zluda_redirect.dll")
#: what tells a folder of the fork's un-renamed DLLs from another: the fork's injector, and not
#: upstream v4/v5's (which ship a CUDA 12 ``cublas.dll`` under ``zluda_with.exe``)
FORK_INJECTOR = "zluda.exe"
NOT_THE_FORK = "zluda_with.exe"


@dataclass(frozen=True)
class ForkFile:
    family: str
    load_name: str
    cuda_major: int | None = 11
    optional: bool = False  # not in every fork build (cuFFTW since 3.9.2; cuBLASLt and cuDNN in the nightly)
    needs_env: tuple[tuple[str, str], ...] = ()
    original_saved_as: str | None = None
    stub: str | None = None


FORK_FILES = {
    "nvcuda.dll": ForkFile("driver", "nvcuda.dll", None),
    "nvml.dll": ForkFile("nvml", "nvml.dll", None),
    "cublas.dll": ForkFile("cublas", "cublas64_11.dll"),
    "cusparse.dll": ForkFile("cusparse", "cusparse64_11.dll"),
    "cufft.dll": ForkFile("cufft", "cufft64_10.dll"),
    "cufftw.dll": ForkFile("cufftw", "cufftw64_10.dll", optional=True, stub=(
        "every cuFFTW function is unimplemented!(): the first call panics and aborts the process (it does "
        "not return an error) (publisher: lshqqytiger/ZLUDA:zluda_fftw/src/cufftw.rs"
        "@5e717459179dc272b7d7d23391f0fad66c7459cf)")),
    "nvrtc.dll": ForkFile("nvrtc", "nvrtc64_112_0.dll", original_saved_as="nvrtc_cuda.dll", needs_env=(
        ("ZLUDA_NVRTC_LIB", "path of torch's original NVIDIA nvrtc64_112_0.dll, saved as nvrtc_cuda.dll "
         "(the fork finds nvrtc_cuda.dll next to itself without the variable)"),)),
    "cublasLt.dll": ForkFile("cublasLt", "cublasLt64_11.dll", optional=True),
    "cudnn.dll": ForkFile("cudnn", "cudnn64_9.dll", optional=True),
}
