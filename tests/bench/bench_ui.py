"""How fast `memcli ui` answers each page on a large store, over real HTTP.

    nice -n 5 .venv/bin/python tests/bench/bench_ui.py --db /tmp/memcli-bench/scaled-100x.db
    .venv/bin/python tests/bench/bench_ui.py --db STORE --questions 50 --runs 3 --json-out ui.json

Build the 100x store first with `tests/bench/bench_retrieval.py scale --factors 100
--workdir /tmp/memcli-bench`. The script starts `memcli ui --port 0 --no-browser` on the
store (the configured embedder, as a user would), waits for its first page (the warm-up),
then fetches every page kind several times over one keep-alive connection and reports
the wall time per page kind (p50, p95, max) with the machine's load average before and
after. Search uses the dev questions (as bench_retrieval does). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memcli.memory import Memory  # noqa: E402
from memcli.ops import browse  # noqa: E402
from memcli.ops.listing import ListQuery  # noqa: E402
from tests.bench.synthetic import dev_questions  # noqa: E402

DEV = Path(os.environ.get("LOCOMO_DEV") or ROOT.parent / "shared" / "data" / "locomo-dev.json")
BUDGET_MS = 300.0


def _ids(mem: Memory, kind: str, n: int) -> list[str]:
    """n nodes of a kind spread over the store (first, middle, last...)."""
    total = mem.list_memories(ListQuery(kinds=(kind,), limit=1)).total
    if not total:
        return []
    offsets = sorted({int(i * (total - 1) / max(n - 1, 1)) for i in range(n)})
    return [
        mem.list_memories(ListQuery(kinds=(kind,), limit=1, offset=o)).items[0].node_id
        for o in offsets
    ]


def _hub(mem: Memory) -> list[str]:
    """The concept with the most edges: the heaviest node page there is."""
    concepts = mem.list_memories(ListQuery(kinds=("concept",), limit=0)).items
    degree = mem.store.degrees([c.id for c in concepts])
    best = max(concepts, key=lambda c: degree.get(c.id, 0), default=None)
    return [best.node_id] if best is not None else []


def targets(db: Path, questions: int) -> dict[str, list[str]]:
    """The addresses to time, by page kind."""
    with Memory.open(db, create=False) as mem:
        sessions = browse.sessions(mem, 1, 0).total
        middle = browse.sessions(mem, 1, sessions // 2).items
        entities = _ids(mem, "entity", 3)
        nodes = [n for kind in ("episode", "segment", "fact") for n in _ids(mem, kind, 3)]
        pages = {
            "overview": ["/"],
            "search": [f"/search?{urlencode({'q': q})}" for q in dev_questions(DEV)[:questions]],
            "timeline": ["/timeline", f"/timeline?offset={sessions // 2}"],
            "session": [f"/session?{urlencode({'name': s['session']})}" for s in middle],
            "node": [f"/node/{n}" for n in nodes],
            "node (hub concept)": [f"/node/{n}" for n in _hub(mem)],
            "entities": ["/entities", "/entities?offset=1000"],
            "entity": [f"/entity/{quote(e)}" for e in entities],
            "runs": ["/runs"],
        }
    return {k: v for k, v in pages.items() if v}


def start(db: Path) -> tuple[subprocess.Popen[str], int, str]:
    """`memcli ui` on the store; its port and token, from its first line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memcli", "--db", str(db), "ui", "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
    )  # fmt: skip
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    address, _, token = line.partition("/?token=")
    return proc, int(address.rsplit(":", 1)[1]), token


def connect(port: int) -> http.client.HTTPConnection:
    """A keep-alive connection with Nagle's algorithm off, as browsers and curl have it:
    http.client leaves it on, and a reused connection then waits ~40 ms on delayed ACKs."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def fetch(conn: http.client.HTTPConnection, path: str, cookie: str) -> tuple[float, int, int]:
    """(seconds, status, bytes) of one GET."""
    started = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": cookie})
    answer = conn.getresponse()
    body = answer.read()
    return time.perf_counter() - started, answer.status, len(body)


def summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in seconds)
    return {
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
        "max_ms": round(ms[-1], 1),
        "requests": len(ms),
    }


def side_by_side(port: int, cookie: str, db: Path, questions: int) -> dict[str, Any]:
    """Each question as a search page and, right after it, as a plain warm `recall` in
    this process (what `memcli mcp` serves): the ratio is the page's cost over retrieval
    alone, and holds whatever the machine's load."""
    page, recall = [], []
    with Memory.open(db, create=False) as mem:
        mem.warm_up()
        for q in dev_questions(DEV)[:questions]:
            mem.recall(q)  # the first recall of a question embeds its new words
        # A new connection: the server closes one left idle while this process warmed up.
        conn = connect(port)
        for q in dev_questions(DEV)[:questions]:
            page.append(fetch(conn, f"/search?{urlencode({'q': q})}", cookie)[0])
            started = time.perf_counter()
            mem.recall(q)
            recall.append(time.perf_counter() - started)
    pages, recalls = summary(page), summary(recall)
    return {
        "page": pages,
        "recall": recalls,
        "p50_ratio": round(pages["p50_ms"] / recalls["p50_ms"], 2),
    }


def bench(db: Path, questions: int, runs: int) -> dict[str, Any]:
    """Every page kind timed `runs` times per address, after the server's warm-up."""
    pages = targets(db, questions)
    load_before = os.getloadavg()
    proc, port, token = start(db)
    try:
        conn = connect(port)
        cookie = f"memcli_ui_{port}={token}"
        started = time.perf_counter()
        fetch(conn, "/", cookie)  # waits for the warm-up (model, vectors, read cache)
        warm_up = time.perf_counter() - started
        fetch(conn, pages["search"][0], cookie)  # the first search loads the word vectors
        out: dict[str, Any] = {}
        for kind, paths in pages.items():
            times = []
            for _ in range(runs):
                for path in paths:
                    seconds, status, _ = fetch(conn, path, cookie)
                    assert status == 200, (path, status)
                    times.append(seconds)
            out[kind] = summary(times)
        out["search vs recall"] = side_by_side(port, cookie, db, questions)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {
        "db": str(db),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "warm_up_s": round(warm_up, 2),
        "pages": out,
        "slowest_p50_ms": max(v["p50_ms"] for k, v in out.items() if "p50_ms" in v),
        "budget_ms": BUDGET_MS,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path("/tmp/memcli-bench/scaled-100x.db"))
    parser.add_argument("--questions", type=int, default=30, help="search: dev questions")
    parser.add_argument("--runs", type=int, default=3, help="fetches of each address")
    parser.add_argument("--json-out", type=Path, help="write the results here as JSON")
    opts = parser.parse_args(argv)
    results = bench(opts.db, opts.questions, opts.runs)
    text = json.dumps(results, indent=1)
    print(text)
    if opts.json_out:
        opts.json_out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
