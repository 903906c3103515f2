"""ZLUDA's DLLs in a Windows ``torch/lib``, placed and put back exactly: :func:`place`, :func:`restore`,
:func:`placement_status` and the context manager :func:`placed`. Works from any host (a wheel, a
mounted drive, a test fixture)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, to_settings
from zluda_runner.core.argcheck import checked

if TYPE_CHECKING:
    from zluda_runner.launch.windows.placing import PlacementResult
    from zluda_runner.launch.windows.restoring import PlacementStatus, RestoreResult
    from zluda_runner.plan.model import ShimPlan


# ``restore``'s force (this API's argument, the command's option), deprecated: what it does, since a file
# written since placement is never replaced
FORCE_CHANGES_NOTHING = ("is deprecated and changes nothing: a file written since placement (pip) is never "
                         "replaced; leave it out (it goes in the next major version)")


@dataclass(frozen=True)
class Placed:
    """A placement done by :func:`place`.

    Attributes:
        torch_lib: the folder placed into.
        plan: the plan placed (``plan.placements``: each DLL and the name it is placed under).
        placed: the files written by this call (empty when an intact placement was already there).
        already_placed: the same placement was already there, intact: nothing was written.
        warnings: what was found and put right first (an earlier placement drifted or quarantined).
        result: the placement as the library recorded it (None: nothing to place, or a dry run).
        defaults_hook: the placed-defaults hook written in torch's site-packages (it applies
            ``plan.defaults`` when python is started without zluda-run; :func:`restore` removes it),
            or None (no defaults to apply, ``Options(defaults=False)``, or nothing was placed).
    """

    torch_lib: Path
    plan: ShimPlan
    placed: tuple[str, ...]
    already_placed: bool
    warnings: tuple[str, ...]
    result: PlacementResult | None = None
    defaults_hook: Path | None = None


@checked
def place(torch_lib: Path | str, options: Options | None = None, *, dry_run: bool = False) -> Placed:
    """Plan for a Windows ``torch/lib`` folder and place ZLUDA's DLLs there, journaled.

    The release is ``options.zluda_dir`` or the manifest's Windows pick for that torch's CUDA (fetched
    when needed). :func:`restore` puts back exactly what was there. ``dry_run``: only plan (nothing
    is written, and a fatal verdict is not refused: ``placed.plan.fatal`` says).

    Raises:
        FatalPlanError: a verdict is fatal (unless ``Options(force=True)``); nothing was placed.
        FileInUseError: a file to replace is held by a running program; nothing was changed.
        NotWritableError: torch/lib (or torch's site-packages, for the defaults hook) is not writable by
            this user (a Python under Program Files); nothing was changed.
        TargetError: the folder holds no Windows torch. PlacementError: the journal is damaged.
    """
    from zluda_runner.conduct.plan import plan_for_torch_lib
    from zluda_runner.launch.prepare import refuse_if_fatal
    from zluda_runner.launch.windows import place as place_files
    from zluda_runner.launch.windows import placements_of
    from zluda_runner.launch.windows.hook import defaults_folder, place_defaults

    settings = to_settings(options)
    folder = Path(torch_lib)
    with caller_errors():
        the_plan = plan_for_torch_lib(folder, settings)
        if dry_run:
            return Placed(folder, the_plan, (), False, ())
        refuse_if_fatal(the_plan, settings.force)
        if not the_plan.placements:
            return Placed(folder, the_plan, (), False, ())
        result = place_files(folder, placements_of(the_plan), also_writes=defaults_folder(the_plan, folder))
        hook = place_defaults(the_plan, folder, settings.cache_dir)
    return Placed(folder, the_plan, tuple(result.placed), result.already_placed, tuple(result.warnings),
                  result, hook)


@checked
def restore(torch_lib: Path | str | None, options: Options | None = None, *,
            force: bool | None = None) -> RestoreResult:
    """Put back exactly the files that were in ``torch_lib`` before placement, of those still
    zluda-run's (and remove zluda-run's start-up hooks from that torch's site-packages once no
    placement remains). ``torch_lib`` None: the torch/lib of ``options.python`` (else this interpreter).

    A file another program wrote since placement (pip upgraded torch) is that program's: kept as it
    is and listed in ``kept``.

    Args:
        force: deprecated (a DeprecationWarning when given): it changes nothing, since a file written
            since placement is never replaced; it goes in the next major version.

    Raises:
        PlacementError: nothing was placed there, or the journal is damaged.
        FileInUseError: a file is held by a running program; nothing was changed.
    """
    from zluda_runner.launch.windows import restore as restore_files
    from zluda_runner.launch.windows import torch_lib_for

    settings = to_settings(options)
    if force is not None:  # the caller's line, past @checked
        warnings.warn(f"restore(force=...) {FORCE_CHANGES_NOTHING}", DeprecationWarning, stacklevel=3)
    with caller_errors():
        return restore_files(torch_lib_for(settings, torch_lib), cache_dir=settings.cache_dir)


@checked
def placement_status(torch_lib: Path | str | None, options: Options | None = None, *,
                     deep: bool = False) -> PlacementStatus:
    """Is ZLUDA still placed in ``torch_lib``, or did something (pip, an antivirus) undo it?
    ``torch_lib`` None: the torch/lib of ``options.python`` (else this interpreter).

    ``state`` is ``"none"``, ``"in-progress"`` or ``"placed"``; ``drift`` has one line per file that is
    not as placed; ``needs_replace`` says a run would place again. ``deep`` hashes every file instead
    of trusting size, time and inode.
    """
    from zluda_runner.launch.windows import status, torch_lib_for

    with caller_errors():
        return status(torch_lib_for(to_settings(options), torch_lib), deep=deep)


@checked
@contextmanager
def placed(torch_lib: Path | str, options: Options | None = None) -> Iterator[Placed]:
    """Place ZLUDA's DLLs into ``torch_lib`` for the ``with`` block; put back exactly what was there
    when it ends, also when it ends by an exception (which then goes on)::

        with zluda_runner.placed(torch_lib, options) as done:
            subprocess.run([python, "app.py"])

    A file another program wrote during the block (pip upgraded torch) is kept as it is, the rest is
    put back, and the block then ends with a :class:`PlacementError` saying which file was kept.
    """
    done = place(torch_lib, options)
    try:
        yield done
    except BaseException:
        if done.placed or done.already_placed:
            restore(done.torch_lib, options)
        raise
    if not (done.placed or done.already_placed):
        return
    result = restore(done.torch_lib, options)
    if result.kept:
        from zluda_runner.core.errors import PlacementError

        raise PlacementError(
            f"{', '.join(result.kept)} in {done.torch_lib} was written by another program while ZLUDA was "
            "placed (pip?): it is kept as it is; the rest was put back",
            hint="nothing of zluda-run's is left there; check that torch is the one you want "
                 "(pip show torch)",
        )

