"""Record the offline demo's upstream sessions: ``python -m demo.sessions_gen [DIR]``.

Runs the demo itself (``demo.run.run_demo``, every step through the real CLI) with
``--record`` / ``RECEIPTS_RECORD`` instead of ``--replay``, against the stateful fakes of
``demo.upstreams`` (day 1 state, then moved to day 2 before the second day), so the
recordings hold exactly the requests the demo will replay. The scratch warehouse and NDJSON
files are thrown away. Two runs write byte-identical files (``tests/demo/test_demo_sessions.py``
checks that the committed sessions equal a fresh recording).
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

import respx

from demo.run import SESSIONS, Day, Layout, run_demo
from demo.upstreams import DemoUpstreams


def record_sessions(sessions: Path = SESSIONS) -> None:
    """(Re)write every corpus's ``day1`` and ``day2`` session under ``sessions``."""
    upstreams = DemoUpstreams()

    def before_day(day: Day) -> None:
        if day.name != "day1":
            upstreams.next_day()

    with (
        tempfile.TemporaryDirectory() as scratch,
        respx.mock(assert_all_mocked=True, assert_all_called=False) as router,
    ):
        upstreams.mount(router)
        layout = Layout(
            warehouse=Path(scratch) / "scratch.duckdb",
            out=Path(scratch) / "out",
            sessions=sessions,
        )
        with contextlib.redirect_stdout(io.StringIO()):
            run_demo(layout, record=True, before_day=before_day)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SESSIONS
    record_sessions(target)
    print(f"recorded the demo sessions under {target}")
