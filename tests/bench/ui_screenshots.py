"""The screenshots of docs/ui.md: each page of `memcli ui`, in Debian's headless Chromium.

    .venv/bin/python tests/bench/ui_screenshots.py --out docs/img

Builds a store from the project's own chats (examples/chat.jsonl and the consolidation
tests' chat), consolidated without an LLM with the configured embedder, serves it with
`memcli ui`, and saves one PNG per page (reduced to a small palette by pngquant when it
is installed, to keep the docs light). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memcli.memory import Memory  # noqa: E402
from memcli.ops.listing import ListQuery  # noqa: E402
from tests.conftest import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

CHATS = (ROOT / "examples" / "chat.jsonl", ROOT / "tests" / "data" / "consolidate" / "chat.jsonl")
QUESTION = "Which hotel did Priya recommend?"


def build(folder: Path) -> Path:
    """The two chats ingested and consolidated without an LLM."""
    db = folder / "memory.db"
    with Memory.open(db) as mem:
        mem.ingest([str(c) for c in CHATS])
        mem.consolidate(flush=True, no_llm=True)
    return db


def pages(db: Path) -> dict[str, str]:
    """The address of each page to shoot."""
    with Memory.open(db, create=False) as mem:
        hit = mem.recall(QUESTION, k=1).hits[0].node.node_id
        entities = mem.list_memories(ListQuery(kinds=("entity",), limit=0)).items
        degree = mem.store.degrees([e.id for e in entities])
        entity = max(entities, key=lambda e: degree.get(e.id, 0)).node_id
    return {
        "search": f"/search?{urlencode({'q': QUESTION, 'k': 5})}",
        "node": f"/node/{hit}",
        "timeline": "/timeline",
        "session": "/session?name=s2",
        "entity": f"/entity/{entity}",
        "runs": "/runs",
        "overview": "/",
    }


def shoot(db: Path, out: Path) -> list[Path]:
    """Serve the store and save a screenshot of each page."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    proc = subprocess.Popen(
        [sys.executable, "-m", "memcli", "--db", str(db), "ui", "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
    )  # fmt: skip
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="memcli-shots-")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    saved = []
    try:
        line = proc.stdout.readline().strip()  # type: ignore[union-attr]
        base = line.split("/?token=")[0]
        driver.set_window_size(1100, 820)
        driver.get(line)
        for name, path in pages(db).items():
            driver.get(base + path)
            target = out / f"ui-{name}.png"
            driver.save_screenshot(str(target))
            saved.append(target)
    finally:
        driver.quit()
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)
    return saved


def shrink(path: Path) -> None:
    """A 64-colour palette PNG (pngquant, when installed: apt-get install pngquant): text
    pages lose nothing visible and weigh about a third."""
    if shutil.which("pngquant"):
        subprocess.run(["pngquant", "--force", "--strip", "--output", str(path), "64", str(path)],
                       check=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memcli-shots-") as tmp:
        for path in shoot(build(Path(tmp)), opts.out):
            shrink(path)
            print(f"{path} {path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
