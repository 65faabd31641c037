"""`memcli doctor`: the configured embedder and LLM, and the store's vectors (memcli.doctor)."""

from __future__ import annotations

import typer

from memcli.cli.common import State, with_state
from memcli.cli.root import app

_MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "skip"}


@app.command()
@with_state("db", "json_mode")
def doctor(state: State) -> None:
    """Check the configured embedder and LLM in seconds, each check with a fix.

    Reachable, model present, a reply that fits a JSON schema (and the form the server
    takes it in), the context window and where its size comes from, tokens per second on
    a short prompt. Run it after editing the config. When the store exists, SQLite's
    integrity check runs on its file (with the SQLite memcli uses), and a few of its turns
    are embedded again to see whether their vectors are made as ingest makes them now (a
    store ingested by an older memcli warns, with `memcli reindex` as the fix).

    Exit code: 0 when no check failed (warnings included), 3 for a configuration error,
    5 when a server cannot be reached or does not serve the model, 6 when the model's reply
    does not fit the schema, 7 when the store file is damaged.

    [b]Examples[/b]

      memcli doctor

      memcli --config local-llm.yaml doctor

      memcli doctor --db ~/notes/memory.db

      memcli --json doctor | jq -r 'select(.status != "ok") | .fix'
    """
    from memcli.doctor import run_doctor

    report = run_doctor(state.config_obj())
    for check in report.checks:
        if state.out.json:
            state.out.record(check.to_dict())
            continue
        state.out.text(f"{_MARKS[check.status]}  {check.name}: {check.detail}")
        if check.fix and check.status != "ok":
            state.out.text(f"      fix: {check.fix}")
    raise typer.Exit(report.exit_code)
