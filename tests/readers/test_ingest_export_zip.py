"""A ChatGPT or Claude export is downloaded as a .zip holding conversations.json: ingest
reads it directly, and refuses any other zip archive with the fix."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from memcli.errors import InvalidInput
from memcli.readers import read_source
from tests.cli_runner import Memcli
from tests.paths import DATA
from tests.reliability import write_config

DATA = DATA / "readers"


def export_zip(path: Path, member: Path, inside: str = "conversations.json") -> Path:
    """A zip like the services' exports: conversations.json beside other files."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("user.json", '{"id": "someone"}')
        archive.write(member, inside)
        archive.writestr("chat.html", "<html></html>")
    return path


@pytest.mark.parametrize(
    ("member", "fmt"),
    [("chatgpt-conversations.json", "chatgpt"), ("claude-conversations.json", "claude")],
)
def test_an_export_zip_reads_like_its_conversations_json(
    tmp_path: Path, member: str, fmt: str
) -> None:
    plain = read_source(str(DATA / member))
    packed = read_source(str(export_zip(tmp_path / "export.zip", DATA / member)))
    assert packed.format == plain.format == fmt
    assert packed.records == plain.records and packed.records
    assert packed.sha256 == plain.sha256  # the same source, zipped or not
    assert packed.name == str(tmp_path / "export.zip")


def test_ingesting_the_zip_then_the_json_stores_nothing_twice(tmp_path: Path) -> None:
    archive = export_zip(tmp_path / "export.zip", DATA / "chatgpt-conversations.json")
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    [first] = cli.json("ingest", archive)
    [again] = cli.json("ingest", DATA / "chatgpt-conversations.json")
    assert first["new"] > 0 and again["new"] == 0


def test_a_zip_in_a_folder_and_on_stdin(tmp_path: Path) -> None:
    nested = export_zip(
        tmp_path / "n.zip", DATA / "claude-conversations.json", "data/conversations.json"
    )
    assert read_source(str(nested)).format == "claude"
    raw = export_zip(tmp_path / "s.zip", DATA / "claude-conversations.json").read_bytes()
    source = read_source("-", stdin=io.BytesIO(raw))
    assert source.format == "claude" and source.records


def test_another_zip_is_refused_with_the_fix(tmp_path: Path) -> None:
    other = tmp_path / "photos.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("notes.jsonl", '{"text": "hi"}\n')
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    result = cli("ingest", other)
    assert result.exit_code == 4 and result.stdout == ""
    assert f"{other}: this is a zip archive without a conversations.json in it" in result.stderr
    assert "unzip" in result.stderr and "latin1" not in result.stderr
    assert not (tmp_path / "m.db").exists()


def test_a_damaged_zip_is_reported(tmp_path: Path) -> None:
    whole = export_zip(tmp_path / "x.zip", DATA / "chatgpt-conversations.json").read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InvalidInput) as info:
        read_source(str(cut))
    assert "damaged zip archive" in info.value.problems[0]
