"""The committed demo sessions are exactly what the generator records today."""

from __future__ import annotations

from pathlib import Path

from demo.run import CORPORA, DAYS, SESSIONS
from demo.sessions_gen import record_sessions


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_committed_sessions_equal_a_fresh_recording(tmp_path: Path) -> None:
    record_sessions(tmp_path)
    fresh = _files(tmp_path)
    committed = {
        name: body
        for name, body in _files(SESSIONS).items()
        if name.split("/")[0] in {c.name for c in CORPORA}
    }
    assert sorted(fresh) == sorted(committed), (
        "the committed sessions are stale: run `python -m demo.sessions_gen`"
    )
    changed = [name for name in fresh if fresh[name] != committed[name]]
    assert not changed, f"stale sessions (run `python -m demo.sessions_gen`): {changed}"


def test_every_corpus_has_a_session_for_every_day() -> None:
    for corpus in CORPORA:
        for day in DAYS:
            session = SESSIONS / corpus.name / day.name
            assert any(session.rglob("*.json")), f"no recorded exchange in {session}"


def test_sessions_hold_no_secret_header() -> None:
    for name, body in _files(SESSIONS).items():
        text = body.decode("utf-8").lower()
        for header in ('"authorization"', '"api-key"', '"cookie"'):
            assert header not in text, f"{name} records a {header} header"
