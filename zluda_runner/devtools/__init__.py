"""Developer tools: not used by ``zluda-run`` itself (stand-in releases for tests and manual checks)."""
