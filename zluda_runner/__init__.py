"""zluda-runner: run unmodified CUDA builds on AMD GPUs through ZLUDA, and prove how well."""

__version__ = "0.1.0"
JSON_SCHEMA_VERSION = 1
