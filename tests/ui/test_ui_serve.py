"""`memcli ui` as a real process on a real loopback port: the first line it prints, the
token and Host rules over real HTTP, and the errors before it serves."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
from pathlib import Path

from tests.cli_runner import Memcli
from tests.ui_helpers import FIRST_LINE, build, served


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    answer = conn.getresponse()
    answer.body = answer.read()  # type: ignore[attr-defined]
    conn.close()
    return answer


def test_the_first_line_is_the_address_and_only_it_opens_the_page(tmp_path: Path) -> None:
    built = build(tmp_path)
    with served(built["db"], tmp_path) as (line, _):
        match = FIRST_LINE.match(line)
        assert match, line
        port, token = int(match[1]), match[2]
        assert _get(port, "/").status == 401
        assert _get(port, f"/?token={token}", {"Host": f"evil.example:{port}"}).status == 421
        first = _get(port, f"/search?q=Porto&token={token}", {"Sec-Fetch-Mode": "navigate"})
        assert first.status == 303
        assert first.getheader("location") == f"http://127.0.0.1:{port}/search?q=Porto"
        cookie = first.getheader("set-cookie").split(";")[0]
        page = _get(port, "/search?q=Porto", {"Cookie": cookie})
        assert page.status == 200
        assert "I moved to Porto in March" in page.body.decode()  # type: ignore[attr-defined]


def test_curl_and_wget_read_the_printed_address_as_it_is(tmp_path: Path) -> None:
    built = build(tmp_path)
    with served(built["db"], tmp_path) as (line, _):
        port, token = FIRST_LINE.match(line).groups()  # type: ignore[union-attr]
        search = line.replace("/?", "/search?q=Porto&")
        bearer = ["-H", f"Authorization: Bearer {token}", f"http://127.0.0.1:{port}/search?q=Porto"]
        commands = {
            "curl": ["curl", "-sS", "-f", search],
            "wget": ["wget", "-q", "-O", "-", search],
            "curl, bearer": ["curl", "-sS", "-f", *bearer],
        }
        for name, command in commands.items():
            if shutil.which(command[0]) is None:
                continue
            done = subprocess.run(command, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, (name, done.stderr)
            assert "I moved to Porto in March" in done.stdout, name
        assert _get(port, "/", {"Authorization": "Bearer not-the-token"}).status == 401
        assert _get(port, "/", {"Authorization": f"Basic {token}"}).status == 401


def test_it_listens_on_the_loopback_address_only(tmp_path: Path) -> None:
    built = build(tmp_path)
    with served(built["db"], tmp_path) as (line, _):
        port = int(FIRST_LINE.match(line)[1])  # type: ignore[index]
        outward = _outward_address()
        if outward is not None:  # a machine with a non-loopback address
            with socket.socket() as probe:
                probe.settimeout(5)
                assert probe.connect_ex((outward, port)) != 0


def _outward_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET: no packet is sent for UDP connect
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_json_mode_prints_the_address_as_a_record(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    from tests.cli_runner import REPO, clean_env

    built = build(tmp_path)
    cfg = tmp_path / "ui.yaml"
    cfg.write_text(f"db: {built['db']}\nembedding:\n  provider: none\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memcli", "--config", str(cfg), "--json", "ui", "--port", "0",
         "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=clean_env(), cwd=REPO,
    )  # fmt: skip
    try:
        record = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert FIRST_LINE.match(record["url"]) and record["port"] > 0


def test_a_missing_store_exits_4_and_creates_nothing(tmp_path: Path) -> None:
    cli = Memcli(db=tmp_path / "none.db")
    result = cli("ui", "--no-browser", "--port", "0")
    assert result.exit_code == 4, result.stderr
    assert "no memory store" in result.stderr and result.stdout == ""
    assert not (tmp_path / "none.db").exists()


def test_a_busy_port_exits_3_with_the_fix(tmp_path: Path) -> None:
    built = build(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"db: {built['db']}\nembedding:\n  provider: none\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = Memcli(config=cfg)("ui", "--no-browser", "--port", str(port))
    assert result.exit_code == 3, result.stderr
    assert f"cannot serve on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr
    assert result.stdout == ""


def test_help_has_examples() -> None:
    result = Memcli()("ui", "--help")
    assert result.exit_code == 0
    assert "--no-browser" in result.stdout and "memcli --db ~/memory.db ui" in result.stdout


def test_answers_are_not_held_back_by_nagles_algorithm(tmp_path: Path) -> None:
    # A response goes out as headers, then body; with Nagle on, the body of every
    # keep-alive answer waited ~40 ms for the client's delayed ACK.
    from memcli.ui.server import prepare
    from tests.ui_helpers import config

    built = build(tmp_path)
    server = prepare(config(built["db"]), 0)
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as client:
            accepted, _ = server.sock.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            assert client.fileno() > 0
    finally:
        server.sock.close()
        server.mem.close()


def test_a_space_the_store_does_not_hold_exits_4_naming_those_it_does(tmp_path: Path) -> None:
    built = build(tmp_path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"db: {built['db']}\nembedding:\n  provider: none\n")
    result = Memcli(config=cfg)("--space", "nope", "ui", "--no-browser", "--port", "0")
    assert result.exit_code == 4, result.stderr
    assert "no space 'nope'" in result.stderr and "default" in result.stderr
    assert result.stdout == ""
