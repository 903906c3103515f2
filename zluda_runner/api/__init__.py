"""The public API launchers embed (SD.Next, ComfyUI-Zluda, StabilityMatrix), one module per subject:
``zluda_runner``'s table of public names (``_PUBLIC``, its ``__all__``) says which module defines each
name, and re-exports it; docs/api.md states the promise.

One options record (:class:`~zluda_runner.core.settings.Options`) for every call; errors are the
:class:`~zluda_runner.core.errors.ZludaRunnerError` family, with hints worded for a Python caller.
Each call imports the stages it needs: ``import zluda_runner`` (and a ``zluda-run`` launch, which
uses a few of these modules) stays cheap. The ``zluda-run`` command line is a front end over these
calls (and :mod:`zluda_runner.api.terms`, its option words).
"""
