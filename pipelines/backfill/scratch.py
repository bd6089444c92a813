"""A backfill's scratch directory: named after its process; ones left by killed backfills go."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

_SCRATCH_PREFIX = "receipts-backfill-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def scratch_directory(parent: Path | None) -> Iterator[Path | None]:
    """A scratch directory in ``parent``, named after this process (ones left there by
    killed backfills go); without a parent, none: the scratch database is kept in memory and
    spills where the warehouse does."""
    if parent is None:
        yield None
        return
    base = Path(parent)
    base.mkdir(parents=True, exist_ok=True)
    for stale in base.glob(f"{_SCRATCH_PREFIX}*"):
        pid = stale.name.removeprefix(_SCRATCH_PREFIX)
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    directory = base / f"{_SCRATCH_PREFIX}{os.getpid()}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
