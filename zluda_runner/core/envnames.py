"""The names of the environment variables that stand in for zluda-run's global options (no imports: the
command line's help names them before anything else is loaded)."""

CACHE_ENV = "ZLUDA_RUNNER_CACHE"
MANIFEST_ENV = "ZLUDA_RUNNER_MANIFEST"
MIRROR_ENV = "ZLUDA_RUNNER_MIRROR"
