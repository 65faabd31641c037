"""`memcli export -o PATH` writes into what PATH names: a regular file is replaced whole
(a new private file renamed over it), while a device, a FIFO or the caller's own stdout is
written into and left as it was; a symbolic link stays a link and its target gets the dump."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.cli_runner import REPO, Memcli, clean_env
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.stores import StoreCache


@pytest.fixture
def source(stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """The consolidation chat after `consolidate --no-llm`, in tmp_path/src."""
    folder = tmp_path / "src"
    folder.mkdir()
    stores.copy("chat-no-llm", folder / "memory.db")
    return Memcli(config=config_file(folder, fake_server, llm=False))


def records(text: str) -> list[dict[str, object]]:
    """The dump's records after its header (which carries the time of the export)."""
    found = [json.loads(line) for line in text.splitlines()]
    assert found[0]["record"] == "memcli-export" and found[-1]["record"] == "end"
    return found[1:]


def run_export(cli: Memcli, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`memcli export ARGS` as a process whose stdout is a pipe read by this test."""
    argv = [sys.executable, "-m", "memcli", *cli.argv("export", *args)]
    return subprocess.run(argv, capture_output=True, env=clean_env(), cwd=REPO, timeout=120)


def test_a_link_to_the_callers_stdout_is_written_through(source: Memcli, tmp_path: Path) -> None:
    # /dev/stdout is such a link; one of our own stands in for it, so that an export that
    # replaced the link instead of writing through it could not harm the machine's.
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")
    through = run_export(source, "-o", str(stdout))
    assert through.returncode == 0, through.stderr
    expected = records(source.ok("export").stdout)
    assert len(through.stdout) > 1000  # what `export -o ... | wc -c` counts
    assert records(through.stdout.decode()) == expected
    assert stdout.is_symlink() and os.readlink(stdout) == "/proc/self/fd/1"
    # As without -o, the summary goes to stderr: stdout holds the dump alone.
    assert through.stderr.decode().startswith("exported ")
    with_json = run_export(source, "-o", str(stdout), "--json")
    assert records(with_json.stdout.decode()) == expected
    stderr = tmp_path / "stderr"
    stderr.symlink_to("/proc/self/fd/2")
    to_stderr = run_export(source, "-o", str(stderr))
    assert to_stderr.returncode == 0 and stderr.is_symlink()
    assert records(to_stderr.stderr.decode()) == expected
    assert to_stderr.stdout.decode().startswith("exported ")


@pytest.mark.skipif(
    os.geteuid() == 0, reason="as root a regression would replace this machine's /dev/stdout"
)
def test_dev_stdout_itself(source: Memcli) -> None:
    through = run_export(source, "-o", "/dev/stdout")
    assert through.returncode == 0, through.stderr
    assert records(through.stdout.decode()) == records(source.ok("export").stdout)


def test_a_link_to_a_device_is_written_through(source: Memcli, tmp_path: Path) -> None:
    null = tmp_path / "null"
    null.symlink_to(os.devnull)
    source.ok("export", "-o", null)
    assert null.is_symlink() and stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_fifo_is_written_into(source: Memcli, tmp_path: Path) -> None:
    fifo = tmp_path / "dump.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as pipe:  # returns once the export opens it for writing
            received.append(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result = source("export", "-o", fifo)
    reader.join(60)
    assert result.exit_code == 0, result.stderr
    assert received, "the export never wrote into the FIFO"
    assert records(received[0].decode()) == records(source.ok("export").stdout)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_to_a_regular_file_replaces_its_target(source: Memcli, tmp_path: Path) -> None:
    target = tmp_path / "backups" / "memory.jsonl"
    target.parent.mkdir()
    target.write_text("an older dump\n")
    target.chmod(0o644)
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    source.ok("export", "-o", link)
    assert link.is_symlink() and link.resolve() == target
    assert records(target.read_text()) == records(source.ok("export").stdout)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["memory.jsonl"]  # no temp left
    dangling = tmp_path / "next.jsonl"
    dangling.symlink_to(tmp_path / "backups" / "new.jsonl")
    source.ok("export", "-o", dangling)
    assert dangling.is_symlink() and (tmp_path / "backups" / "new.jsonl").stat().st_size > 0
