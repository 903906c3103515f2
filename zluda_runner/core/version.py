"""This package's version and its JSON schema version: the one place they are written (the package root
re-exports them; every stage imports them from here, never from the root)."""

__version__ = "0.1.0"
"""This package's version; the API in ``__all__`` follows semantic versioning (docs/api.md)."""
JSON_SCHEMA_VERSION = 1
