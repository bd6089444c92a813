"""``make demo``: the whole job, offline, from recorded upstream sessions.

Three bundled corpora (``cr-v-aeb`` from NHTSA, ``hyphae-atlas`` from GitHub pins,
``ask-the-record`` from dev.to) are refreshed from the sessions recorded in
``demo/sessions/<corpus>/day1`` into a fresh warehouse and published to NDJSON; then
from ``day2`` (a reissued bulletin, a new complaint, a deleted comment, a pinned file moved
to a new commit), the hyphae pins first moved with ``receipts pin`` on a working copy of its
manifest; then the drift report is written as text and HTML. The warehouse clock is frozen
per day (``RECEIPTS_NOW``), so two demos write the same warehouse rows (the run ledger's
``pid`` and ``host`` aside) and the same NDJSON bytes.

The demo owns its warehouse file (default ``./receipts.duckdb``) and its output files in
``out/demo/``: it deletes them and starts afresh every time. Every step is a ``receipts``
command, printed before it runs, so what the demo did can be typed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from pipelines.cli.exits import EXIT_OK
from sources import registry
from sources.http import ENV_RECORD, ENV_REPLAY
from warehouse import digests
from warehouse.store import ENV_WAREHOUSE, Warehouse

REPO = Path(__file__).resolve().parent.parent
MANIFESTS = REPO / "manifests"
SESSIONS = Path(__file__).resolve().parent / "sessions"
DEFAULT_WAREHOUSE = Path("receipts.duckdb")
DEFAULT_OUT = Path("out/demo")
ENV_NOW = "RECEIPTS_NOW"
# Whatever would send the demo anywhere but its recordings, or publish anywhere but NDJSON.
CLEARED_ENV = (
    *(endpoint.env_var for endpoint in registry.endpoints()),
    ENV_RECORD,
    ENV_REPLAY,
    "GITHUB_TOKEN",
    "FOREM_API_KEY",
    "SANITY_PROJECT_ID",
    "SANITY_DATASET",
    "SANITY_TOKEN",
    "SANITY_API_HOST",
)
# Ledger columns that say which process wrote a row: the only ones two demos differ in.
VOLATILE_COLUMNS: dict[str, frozenset[str]] = {"runs": frozenset({"pid", "host"})}


@dataclass(frozen=True)
class Day:
    """One point in time of the recorded upstreams: its session directory and clock."""

    name: str
    now: str


DAYS = (Day("day1", "2026-11-02T06:00:00Z"), Day("day2", "2026-11-03T06:00:00Z"))
# Midnight before day 2: the corpus as day 1 left it.
DRIFT_SINCE = "2026-11-03"


@dataclass(frozen=True)
class Corpus:
    """A bundled corpus; ``pinned`` ones have GitHub pins that follow ``main`` on day 2."""

    name: str
    pinned: bool = False


CORPORA = (Corpus("cr-v-aeb"), Corpus("hyphae-atlas", pinned=True), Corpus("ask-the-record"))


@dataclass(frozen=True)
class Step:
    """``receipts ARGS``, run with ``env`` set (and shown in front of the command)."""

    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    def shell(self) -> str:
        prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in self.env)
        return prefix + "receipts " + shlex.join(self.args)


class DemoFailed(Exception):
    """A step of the demo did not exit 0."""

    def __init__(self, step: Step, code: int) -> None:
        super().__init__(f"demo step failed with exit code {code}: {step.shell()}")
        self.step = step
        self.code = code


@dataclass
class Layout:
    """Where the demo reads and writes."""

    warehouse: Path = DEFAULT_WAREHOUSE
    out: Path = DEFAULT_OUT
    sessions: Path = SESSIONS
    manifests: Path = MANIFESTS

    def manifest(self, corpus: Corpus) -> Path:
        """The manifest a corpus is run from: a working copy in ``out`` when its pins move
        (``receipts pin`` rewrites it), the bundled file otherwise."""
        if corpus.pinned:
            return self.out / f"{corpus.name}.toml"
        return self.manifests / f"{corpus.name}.toml"

    def session(self, corpus: Corpus, day: Day) -> Path:
        return self.sessions / corpus.name / day.name

    def ndjson(self, corpus: Corpus) -> Path:
        return self.out / f"{corpus.name}.ndjson"

    def report(self, fmt: str) -> Path:
        return self.out / f"drift.{'txt' if fmt == 'text' else fmt}"

    def owned_files(self) -> list[Path]:
        """Every file the demo writes (and deletes before it starts)."""
        warehouse = [self.warehouse, self.warehouse.with_name(self.warehouse.name + ".wal")]
        outputs = [self.ndjson(c) for c in CORPORA]
        outputs += [self.manifest(c) for c in CORPORA if c.pinned]
        outputs += [self.report(fmt) for fmt in REPORT_FORMATS]
        return warehouse + outputs


REPORT_FORMATS = ("text", "html")


def _shown(path: Path) -> str:
    """A path as the user would type it from the current directory."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


# -- the plan (pure) -----------------------------------------------------------------------
def day_steps(layout: Layout, day: Day, *, record: bool = False) -> list[Step]:
    """Every command of one day: per corpus, its pins moved (after the first day), then a
    refresh (ingest from the day's session, publish to NDJSON, this run's drift).
    ``record`` records the session instead of replaying it (``demo.sessions_gen`` does
    that against the fakes)."""
    http_env = ENV_RECORD if record else ENV_REPLAY
    http_flag = "--record" if record else "--replay"
    steps = []
    for corpus in CORPORA:
        manifest = _shown(layout.manifest(corpus))
        session = _shown(layout.session(corpus, day))
        if corpus.pinned and day != DAYS[0]:
            steps.append(Step(("pin", manifest), ((http_env, session),)))
        out = _shown(layout.ndjson(corpus))
        steps.append(Step(("refresh", manifest, http_flag, session, "--out", out)))
    return steps


def report_steps(layout: Layout) -> list[Step]:
    """The drift report since day 1, as text and HTML, then the push ledger."""
    steps = [
        Step(
            ("drift", "--since", DRIFT_SINCE, "--format", fmt, "--out", _shown(layout.report(fmt)))
        )
        for fmt in REPORT_FORMATS
    ]
    steps.append(Step(("pushes",)))
    return steps


# -- running -------------------------------------------------------------------------------
@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` and clear :data:`CLEARED_ENV` for the block; restore afterwards."""
    names = set(values) | set(CLEARED_ENV)
    saved = {name: os.environ.get(name) for name in names}
    try:
        for name in CLEARED_ENV:
            os.environ.pop(name, None)
        os.environ.update(values)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_step(step: Step, echo: Callable[[str], None]) -> None:
    """Run one ``receipts`` command in this process; :class:`DemoFailed` unless it exits 0."""
    from pipelines.cli import main as cli_main

    echo(f"\n$ {step.shell()}")
    with environment(dict(step.env)) if step.env else contextlib.nullcontext():
        try:
            code = cli_main.main(list(step.args), prog_name="receipts", standalone_mode=False)
        except SystemExit as exc:
            code = exc.code
        except click.ClickException as exc:
            exc.show()
            code = exc.exit_code
    code = int(code or 0) if isinstance(code, int | None) else 1
    if code != EXIT_OK:
        raise DemoFailed(step, code)


@dataclass
class DemoResult:
    layout: Layout
    steps: list[Step] = field(default_factory=list)
    digest: str = ""


def run_demo(
    layout: Layout,
    *,
    record: bool = False,
    before_day: Callable[[Day], None] | None = None,
    echo: Callable[[str], None] = click.echo,
) -> DemoResult:
    """The demo: delete what an earlier demo wrote, then every day's steps and the report.

    With ``record`` the days' sessions are recorded (into ``layout.sessions``, emptied
    first) instead of replayed; ``before_day`` lets a recorder move its upstreams to the day.
    """
    for path in layout.owned_files():
        path.unlink(missing_ok=True)
    if record:
        for corpus in CORPORA:
            shutil.rmtree(layout.sessions / corpus.name, ignore_errors=True)
    layout.out.mkdir(parents=True, exist_ok=True)
    for corpus in CORPORA:
        if corpus.pinned:
            shutil.copyfile(layout.manifests / f"{corpus.name}.toml", layout.manifest(corpus))
    result = DemoResult(layout)
    base = {ENV_WAREHOUSE: str(layout.warehouse)}
    for day in DAYS:
        if before_day is not None:
            before_day(day)
        echo(
            f"\n## {day.name}: upstream as recorded on {day.now} "
            f"({ENV_NOW}={day.now} {ENV_WAREHOUSE}={_shown(layout.warehouse)})"
        )
        with environment({**base, ENV_NOW: day.now}):
            for step in day_steps(layout, day, record=record):
                run_step(step, echo)
                result.steps.append(step)
    echo(f"\n## what drifted since day 1 ({DRIFT_SINCE}), and the push receipts")
    with environment({**base, ENV_NOW: DAYS[-1].now}):
        for step in report_steps(layout):
            run_step(step, echo)
            result.steps.append(step)
    result.digest = warehouse_digest(layout.warehouse)
    return result


# -- what the warehouse holds --------------------------------------------------------------
def dump_tables(warehouse: Warehouse) -> dict[str, list[list[Any]]]:
    """Every row of every table, sorted, as plain JSON values, without
    :data:`VOLATILE_COLUMNS`: equal for two warehouses that recorded the same thing."""
    return digests.dump_tables(warehouse, leave_out=VOLATILE_COLUMNS)


def warehouse_digest(path: Path) -> str:
    """SHA-256 of :func:`dump_tables`: two demos print the same one."""
    with Warehouse.open(str(path), read_only=True) as wh:
        dump = dump_tables(wh)
    text = json.dumps(dump, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def summary(result: DemoResult) -> list[str]:
    """Where everything went."""
    layout = result.layout
    lines = ["", "## where everything went"]
    lines.append(f"  warehouse      {_shown(layout.warehouse)}")
    lines.append(f"                 digest {result.digest} (every table; runs.pid/host left out)")
    for corpus in CORPORA:
        lines.append(f"  NDJSON         {_shown(layout.ndjson(corpus))}")
    for fmt in REPORT_FORMATS:
        lines.append(f"  drift report   {_shown(layout.report(fmt))}")
    for corpus in CORPORA:
        if corpus.pinned:
            lines.append(f"  re-pinned copy {_shown(layout.manifest(corpus))} (day 2's commit)")
    lines.append("  explore        receipts runs | receipts history DOC_ID | receipts diff DOC_ID")
    lines.append('                 receipts verify-quote DOC_ID "QUOTE"   (README: the demo)')
    return lines


@click.command()
@click.option(
    "--warehouse",
    type=click.Path(path_type=Path, dir_okay=False),
    default=DEFAULT_WAREHOUSE,
    show_default=True,
    help="The warehouse file the demo creates afresh (it deletes an existing one).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_OUT,
    show_default=True,
    help="Directory of the NDJSON files, the drift reports and the re-pinned manifest.",
)
def demo(warehouse: Path, out: Path) -> None:
    """Refresh the three bundled corpora from recorded sessions (day 1, then day 2), publish
    them to NDJSON and write the drift report, offline and reproducibly."""
    try:
        result = run_demo(Layout(warehouse=warehouse, out=out))
    except DemoFailed as exc:
        click.echo(f"receipts demo: {exc}", err=True)
        sys.exit(exc.code)
    for line in summary(result):
        click.echo(line)


if __name__ == "__main__":
    sys.exit(demo())
