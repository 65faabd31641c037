"""Input readers: every format's rules, format detection, and hostile input."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli import dates
from memcli.errors import InvalidInput, NotFound, UsageError
from memcli.models import BadRecord, Episode
from memcli.readers import (
    FORMATS,
    Source,
    chat,
    detect_format,
    jsonl,
    locomo,
    read_source,
    transcript,
)
from tests.paths import DATA
from tests.stores import LOCOMO_DEV

DATA = DATA / "readers"
ANNOTATIONS = ("qa", "event_summary", "observation", "session_summary")


def episodes(records: list[Episode | BadRecord]) -> list[Episode]:
    return [r for r in records if isinstance(r, Episode)]


def bad(records: list[Episode | BadRecord]) -> list[BadRecord]:
    return [r for r in records if isinstance(r, BadRecord)]


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return str(path)


# --- dates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),
        ("10:37 am on 27 June, 2023", "2023-06-27T10:37:00"),
        ("12:09 am on 13 September, 2023", "2023-09-13T00:09:00"),
        ("2023-05-08", "2023-05-08T00:00:00"),
        ("2023-05-08 14:03:09.123", "2023-05-08T14:03:09"),
        ("2024-03-01T09:15:00+02:00", "2024-03-01T09:15:00+02:00"),
        ("2024-03-01T09:15:00Z", "2024-03-01T09:15:00+00:00"),
        ("8 May 2023", "2023-05-08T00:00:00"),
        ("May 8, 2023 3:04 PM", "2023-05-08T15:04:00"),
        (1709284560, "2024-03-01T09:16:00"),
        (1709284560123, "2024-03-01T09:16:00"),
        (1709284560.5, "2024-03-01T09:16:00"),
        ("1709284560", "2024-03-01T09:16:00"),
    ],
)
def test_normalize_parses_common_formats(raw: object, expected: str) -> None:
    assert dates.normalize(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "yesterday",
        "May 2023",  # no day: any day we filled in would be invented
        "3:04 pm",  # a time alone
        "",
        "   ",
        "x" * 10_000,
        "2023-02-30",
        True,
        None,
        [2023, 5, 8],
        float("nan"),
        float("inf"),
        10**30,
    ],
)
def test_normalize_returns_none_for_unusable_values(raw: object) -> None:
    assert dates.normalize(raw) is None


def test_normalize_is_quiet_about_unknown_time_zones(recwarn: pytest.WarningsRecorder) -> None:
    dates.normalize("8 May 2023 10:00 XYZT")
    assert not recwarn.list


# --- JSON Lines -------------------------------------------------------------------------


def test_jsonl_maps_fields_and_keeps_the_rest_as_props() -> None:
    records = list(jsonl.read((DATA / "messages.jsonl").read_text(), "m.jsonl", "messages"))
    assert bad(records) == []
    first, second, third = records
    assert isinstance(first, Episode) and isinstance(second, Episode)
    assert isinstance(third, Episode)
    assert (first.text, first.speaker, first.session, first.ref, first.line) == (
        "I rescued a cat named Miso.",
        "user",
        "s1",
        "1",
        1,
    )
    assert first.timestamp == "2024-03-01T09:15:00+00:00"
    assert first.timestamp_raw == "2024-03-01T09:15:00Z"
    # `text`, `speaker` and `ts` are aliases; the unknown `mood` is kept.
    assert (second.text, second.speaker, second.ref, second.line) == (
        "Congratulations on Miso!",
        "assistant",
        "m2",
        3,
    )
    assert second.timestamp == "2024-03-01T09:16:00"
    assert second.timestamp_raw == "1709284560"
    assert second.props == {"mood": "happy"}
    # No session field: the default session (the file stem) applies.
    assert third.session == "messages"
    assert third.timestamp == "2024-03-03T00:00:00"


def test_jsonl_speaker_and_name_beat_role_which_stays_in_props() -> None:
    line = '{"role": "user", "name": "Dana", "content": "hi"}'
    (record,) = jsonl.read(line, "x.jsonl", "x")
    assert isinstance(record, Episode)
    assert record.speaker == "Dana"
    assert record.props == {"role": "user"}


def test_jsonl_unparseable_timestamp_keeps_the_raw_text() -> None:
    (record,) = jsonl.read('{"content": "hi", "time": "teatime"}', "x.jsonl", "x")
    assert isinstance(record, Episode)
    assert (record.timestamp, record.timestamp_raw) == (None, "teatime")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"content": "hi" "role": "user"}', "invalid JSON: Expecting ',' delimiter at column 18"),
        ('["content", "hi"]', "expected a JSON object, got an array"),
        ('"just a string"', "expected a JSON object, got a string"),
        ('{"role": "user"}', "missing 'content' (or 'text')"),
        ('{"content": 42}', "'content' must be a string, not a number"),
        ('{"text": ["a"]}', "'text' must be a string, not an array"),
        ('{"content": "   "}', "'content' is empty"),
        ('{"content": "hi", "speaker": {"n": 1}}', "'speaker' must be a string, not an object"),
        ('{"content": "hi", "session": true}', "'session' must be a string, not a boolean"),
        ('{"content": "hi", "id": [1]}', "'id' must be a string, not an array"),
        ('{"content": "hi", "ts": {}}', "'ts' must be a date string or a number, not an object"),
        ('{"content": "\\ud800"}', "invalid JSON: a \\u escape encodes half a surrogate pair"),
    ],
)
def test_jsonl_bad_lines_give_specific_reasons(line: str, reason: str) -> None:
    text = '{"content": "fine"}\n\n' + line + "\n"
    records = list(jsonl.read(text, "x.jsonl", "x"))
    assert isinstance(records[0], Episode)
    assert records[1:] == [BadRecord(3, reason)]


def test_jsonl_a_valid_surrogate_pair_is_fine() -> None:
    (record,) = jsonl.read('{"content": "smile \\ud83d\\ude00"}', "x.jsonl", "x")
    assert isinstance(record, Episode) and record.text == "smile \U0001f600"


def test_jsonl_crlf_line_endings() -> None:
    records = list(jsonl.read('{"content": "a"}\r\n{"content": "b"}\r\n', "x.jsonl", "x"))
    assert [r.text for r in episodes(records)] == ["a", "b"]


# --- OpenAI-style chat ------------------------------------------------------------------


def test_chat_object_with_parts_names_and_skipped_empty_messages() -> None:
    records = list(chat.read((DATA / "chat.json").read_text(), "chat.json", "chat"))
    assert bad(records) == []
    system, user, assistant = records
    assert isinstance(system, Episode) and isinstance(user, Episode)
    assert isinstance(assistant, Episode)
    assert {r.session for r in (system, user, assistant)} == {"support-42"}
    assert (system.speaker, system.line) == ("system", 5)
    # Text parts joined, the image part dropped, `name` preferred over `role`.
    assert user.text == "Here is my garden.\nThe tomatoes failed again."
    assert (user.speaker, user.line) == ("Dana", 6)
    # The tool-call message (null content) and the empty tool message are skipped.
    assert (assistant.text, assistant.speaker, assistant.line) == (
        "Try a sunnier spot.",
        "assistant",
        13,
    )


def test_chat_bare_list_uses_default_session_and_allows_missing_role() -> None:
    text = '[\n  {"role": "user", "content": "hello"},\n  {"content": "anyone?"}\n]'
    first, second = chat.read(text, "c.json", "c")
    assert isinstance(first, Episode) and isinstance(second, Episode)
    assert (first.session, first.line, second.line) == ("c", 2, 3)
    assert second.speaker is None


def test_chat_bad_messages_are_reported_where_they_are() -> None:
    text = '{"messages": [\n  "hi",\n  {"role": "user", "content": 7},\n  {"content": "ok"}\n]}'
    records = list(chat.read(text, "c.json", "c"))
    assert records[:2] == [
        BadRecord(2, "message 1 is a string, not an object"),
        BadRecord(3, "'content' must be a string or a list of parts, not a number"),
    ]
    assert isinstance(records[2], Episode) and records[2].line == 4


def test_chat_invalid_json_is_one_bad_record_at_the_right_line() -> None:
    text = '{"messages": [\n  {"role": "user", "content": "hi"}\n  {"role": "user"}\n]}'
    assert list(chat.read(text, "c.json", "c")) == [
        BadRecord(3, "invalid JSON: Expecting ',' delimiter at column 3")
    ]


def test_chat_wrong_shape_is_one_bad_record() -> None:
    (record,) = chat.read('{"msgs": []}', "c.json", "c")
    assert isinstance(record, BadRecord) and record.line == 1 and "messages" in record.reason


# --- LoCoMo -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def locomo_dev() -> tuple[list[dict[str, Any]], list[Episode | BadRecord]]:
    if LOCOMO_DEV is None:
        pytest.skip("LoCoMo dev data not found (shared/data/locomo-dev.json)")
    text = LOCOMO_DEV.read_text(encoding="utf-8")
    return json.loads(text), list(locomo.read(text, LOCOMO_DEV.name, "locomo-dev"))


def test_locomo_dev_yields_every_turn_and_nothing_else(
    locomo_dev: tuple[list[dict[str, Any]], list[Episode | BadRecord]],
) -> None:
    samples, records = locomo_dev
    assert bad(records) == []
    assert len(records) == 788
    refs = [r.ref for r in episodes(records)]
    assert "D1:3" in refs
    assert all(ref and re.fullmatch(r"D\d+:\d+", ref) for ref in refs)
    # Exactly the conversation turns, in order: nothing from the annotations got in.
    expected = [
        (turn["dia_id"], turn["text"], turn.get("blip_caption"))
        for sample in samples
        for key in sorted(
            (k for k in sample["conversation"] if re.fullmatch(r"session_\d+", k)),
            key=lambda k: int(k.split("_")[1]),
        )
        for turn in sample["conversation"][key]
    ]
    got = [(r.ref, r.text) for r in episodes(records)]
    assert got == [
        (ref, f"{text} [shares {caption}]" if caption else text) for ref, text, caption in expected
    ]
    assert all(r.props.keys() <= {"img_url"} for r in episodes(records))
    annotations = {json.dumps(s[k]) for s in samples for k in ANNOTATIONS}
    assert annotations and all(ann != "null" for ann in annotations)


def test_locomo_dev_sessions_in_numeric_order_with_dates(
    locomo_dev: tuple[list[dict[str, Any]], list[Episode | BadRecord]],
) -> None:
    _, records = locomo_dev
    order: list[tuple[str, int]] = []
    for record in episodes(records):
        assert record.session is not None and record.timestamp is not None
        sample, session = record.session.split(":session_")
        if not order or order[-1] != (sample, int(session)):
            order.append((sample, int(session)))
    for sample in {s for s, _ in order}:
        numbers = [n for s, n in order if s == sample]
        assert numbers == sorted(numbers) and len(numbers) == len(set(numbers))
    first = episodes(records)[0]
    assert (first.session, first.ref, first.timestamp, first.timestamp_raw) == (
        "conv-26:session_1",
        "D1:1",
        "2023-05-08T13:56:00",
        "1:56 pm on 8 May, 2023",
    )


def test_locomo_mini_fixture_rules() -> None:
    text = (DATA / "locomo-mini.json").read_text()
    records = list(locomo.read(text, "locomo-mini.json", "locomo-mini"))
    roses, lovely, trip = records[:3]
    assert isinstance(roses, Episode) and isinstance(lovely, Episode)
    assert isinstance(trip, Episode)
    # session_2 before session_10; session_3 has a date but no turns and is skipped.
    assert [r.session for r in (roses, lovely, trip)] == [
        "mini-1:session_2",
        "mini-1:session_2",
        "mini-1:session_10",
    ]
    assert roses.text == "Look at my roses! [shares a photo of red roses]"
    assert roses.props == {"img_url": ["https://example.org/roses.jpg"]}
    assert (roses.ref, roses.line, trip.line) == ("D2:1", 15, 11)
    assert "SHOULD-NOT-APPEAR" not in repr(records)
    # The second sample has no sample_id: its sessions are named after its position.
    assert records[3:5] == [
        BadRecord(
            29, "conv1 session_1: missing session_1_date_time, so its turns would have no date"
        ),
        BadRecord(34, "conv1 session_2 turn 1: missing 'speaker'"),
    ]
    last = records[5]
    assert isinstance(last, Episode)
    assert (last.session, last.ref, last.line) == ("conv1:session_2", "D2:2", 35)


def test_locomo_sample_episodes_directly() -> None:
    sample = {
        "conversation": {
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
        },
        "qa": [{"question": "q", "answer": "a"}],
    }
    (record,) = locomo.sample_episodes(sample, "conv7")
    assert isinstance(record, Episode)
    assert (record.session, record.line, record.timestamp) == (
        "conv7:session_1",
        1,
        "2023-05-08T13:56:00",
    )


def test_locomo_bad_shapes() -> None:
    assert list(locomo.read("[1]", "l.json", "l")) == [
        BadRecord(1, "sample 1 is a number, not an object")
    ]
    (record,) = locomo.read('{"conversation": 3}', "l.json", "l")
    assert isinstance(record, BadRecord) and "no 'conversation'" in record.reason
    (record,) = locomo.read('"text"', "l.json", "l")
    assert isinstance(record, BadRecord) and record.line == 1


# --- transcripts ------------------------------------------------------------------------


def test_transcript_turns_sessions_and_continuations() -> None:
    text = (DATA / "transcript.txt").read_text()
    records = list(transcript.read(text, "t.txt", "t"))
    assert bad(records) == []
    got = [(r.speaker, r.text, r.session, r.timestamp, r.timestamp_raw, r.line) for r in records]
    assert got == [
        (
            "Alice",
            "I started learning the cello.\nIt is harder than it looks.",
            "t:session_1",
            "2023-05-08T00:00:00",
            "8 May 2023",
            2,
        ),
        ("Bob", "Good luck with it!", "t:session_1", "2023-05-08T00:00:00", "8 May 2023", 4),
        ("Alice", "I played my first piece today.", "t:session_2", None, "someday", 7),
        ("Bob", "Nice.", "t:session_3", None, None, 9),
    ]


def test_transcript_text_outside_turns_and_empty_turns() -> None:
    text = "A preface line\nand another\nAnn:\nBob: see http://example.org\n---\norphan\nCy: ok"
    records = list(transcript.read(text, "t.txt", "t"))
    assert records[0] == BadRecord(1, "text outside any turn: no 'Speaker: text' line before it")
    assert records[1] == BadRecord(3, "turn by 'Ann' has no text")
    assert isinstance(records[2], Episode) and records[2].text == "see http://example.org"
    assert records[3] == BadRecord(6, "text outside any turn: no 'Speaker: text' line before it")
    assert isinstance(records[4], Episode) and records[4].session == "t:session_2"


def test_transcript_lines_that_are_not_speakers() -> None:
    text = "Ann: a list follows\n- item: one\nhttp://x.org/a:b\n" + "x" * 41 + ": long\n"
    (record,) = transcript.read(text, "t.txt", "t")
    assert isinstance(record, Episode)
    assert record.text.count("\n") == 3


# --- format detection -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.jsonl", "anything", "jsonl"),
        ("a.NDJSON", "anything", "jsonl"),
        ("a.txt", "{}", "transcript"),
        ("a.json", '{"messages": []}', "chat"),
        ("a.json", '[{"role": "user", "content": "hi"}]', "chat"),
        ("a.json", '{"conversation": {}}', "locomo"),
        ("a.json", '[{"conversation": {}, "qa": []}]', "locomo"),
        ("a.json", '{"messages": [', "chat"),  # broken: a JSON reader reports where
        ("-", '{"content": "a"}\n{"content": "b"}\n', "jsonl"),
        ("-", '{"content": "only one"}', "jsonl"),
        ("-", '{"messages": [{"role": "user", "content": "hi"}]}', "chat"),
        ("-", '[{"conversation": {}}]', "locomo"),
        ("-", "Ann: hi\nBob: hello\n", "transcript"),
        ("notes.log", "--- 1 May 2023\nAnn: hi\n", "transcript"),
    ],
)
def test_detect_format(name: str, text: str, expected: str) -> None:
    assert detect_format(name, text) == expected


@pytest.mark.parametrize(
    ("name", "text"),
    [("-", "just some words"), ("a.json", '{"foo": 1}'), ("a.dat", "[1, 2]"), ("-", "[" * 100_000)],
)
def test_detect_format_refuses_to_guess(name: str, text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        detect_format(name, text)
    assert info.value.problems == [
        f"{name}:1: cannot tell the format (not JSON Lines, chat JSON, LoCoMo, a ChatGPT or "
        "Claude export, or a transcript)"
    ]
    assert (
        info.value.fix == "pass --format one of: chat, chatgpt, claude, jsonl, locomo, transcript"
    )


def test_registry_names_match_modules() -> None:
    assert set(FORMATS) == {"jsonl", "chat", "locomo", "chatgpt", "claude", "transcript"}
    for name, module in FORMATS.items():
        assert name == module.NAME and all(s.startswith(".") for s in module.SUFFIXES)


# --- read_source ------------------------------------------------------------------------


def test_read_source_file(tmp_path: Path) -> None:
    raw = (DATA / "messages.jsonl").read_bytes()
    path = write(tmp_path, "day1.jsonl", raw)
    source = read_source(path)
    assert isinstance(source, Source)
    assert (source.name, source.format) == (path, "jsonl")
    assert source.sha256 == hashlib.sha256(raw).hexdigest()
    assert [r.session for r in episodes(source.records)] == ["s1", "s1", "day1"]


def test_read_source_stdin_with_bom_and_forced_format() -> None:
    raw = "\ufeffAnn: hi".encode()
    source = read_source("-", stdin=io.BytesIO(raw))
    assert (source.name, source.format, source.sha256) == (
        "<stdin>",
        "transcript",
        hashlib.sha256(raw).hexdigest(),
    )
    (record,) = source.records
    assert isinstance(record, Episode)
    assert (record.speaker, record.session) == ("Ann", "stdin:session_1")
    forced = read_source("-", fmt="jsonl", stdin=io.BytesIO(b"Ann: hi"))
    assert forced.format == "jsonl" and isinstance(forced.records[0], BadRecord)


def test_read_source_gzip_file_reads_like_the_plain_one(tmp_path: Path) -> None:
    raw = (DATA / "messages.jsonl").read_bytes()
    plain = read_source(write(tmp_path, "day1.jsonl", raw))
    packed = read_source(write(tmp_path, "day1.jsonl.gz", gzip.compress(raw)))
    assert packed.format == "jsonl", "the suffix under .gz decides the format"
    assert packed.sha256 == plain.sha256, "the same log, compressed or not, is one source"
    assert [r.session for r in episodes(packed.records)] == ["s1", "s1", "day1"]
    assert packed.records == plain.records


def test_read_source_gzip_on_stdin_is_sniffed() -> None:
    source = read_source("-", stdin=io.BytesIO(gzip.compress(b"Ann: hi\nBob: hello")))
    assert source.format == "transcript"
    assert [(r.speaker, r.text) for r in episodes(source.records)] == [
        ("Ann", "hi"),
        ("Bob", "hello"),
    ]


def test_read_source_damaged_gzip(tmp_path: Path) -> None:
    path = write(tmp_path, "cut.jsonl.gz", gzip.compress(b'{"content": "x"}\n' * 50)[:30])
    with pytest.raises(InvalidInput) as info:
        read_source(path)
    assert info.value.exit_code == 4
    assert info.value.problems[0].startswith(f"{path}:1: damaged gzip data")
    assert info.value.fix is not None and "uncompressed" in info.value.fix


def test_read_source_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(UsageError) as info:  # a bad option value, like any other
        read_source("whatever.txt", fmt="csv")
    assert info.value.exit_code == 2
    assert "csv" in info.value.message
    assert info.value.fix == (
        "pass --format one of: auto, chat, chatgpt, claude, jsonl, locomo, transcript"
    )


def test_read_source_missing_path(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.jsonl")
    with pytest.raises(NotFound) as info:
        read_source(path)
    assert info.value.message == f"{path}: no such file"
    assert info.value.exit_code == 4


def test_read_source_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        read_source(str(tmp_path))
    assert info.value.problems == [f"{tmp_path}: is a directory, not a file"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files whatever their mode")
def test_read_source_unreadable_path(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.jsonl", '{"content": "x"}')
    os.chmod(path, 0)
    with pytest.raises(NotFound) as info:
        read_source(path)
    assert info.value.message == f"{path}: cannot read the file (Permission denied)"


def test_read_source_other_os_errors_say_why(tmp_path: Path) -> None:
    path = write(tmp_path, "plain.txt", "Ann: hi") + "/child.jsonl"
    with pytest.raises(NotFound) as info:
        read_source(path)
    assert info.value.message == f"{path}: cannot read the file (Not a directory)"


@pytest.mark.parametrize("content", [b"", b"  \n\t\n", b"\xef\xbb\xbf\n"])
def test_read_source_empty_file_has_no_records(tmp_path: Path, content: bytes) -> None:
    path = write(tmp_path, "empty.jsonl", content)
    assert read_source(path).records == []  # ingest reports 0 new episodes (exit 0)


def test_read_source_latin1_text(tmp_path: Path) -> None:
    path = write(tmp_path, "old.txt", "Ann: hello\nBob: café au lait\n".encode("latin-1"))
    with pytest.raises(InvalidInput) as info:
        read_source(path)
    assert info.value.problems == [f"{path}:2: not UTF-8 text (byte 0xe9 at column 9)"]
    assert info.value.fix is not None and f"iconv -f latin1 -t utf-8 {path}" in info.value.fix


def test_read_source_binary_garbage(tmp_path: Path) -> None:
    garbage = bytes(range(1, 256)) * 64
    with pytest.raises(InvalidInput) as info:
        read_source(write(tmp_path, "blob.jsonl", garbage))
    # Byte 0x0a is a newline, so 0x80 sits on line 2, 118 bytes in.
    assert info.value.problems[0].endswith("blob.jsonl:2: not UTF-8 text (byte 0x80 at column 118)")
    # With a NUL byte among them, it is a binary file from the first chunk read.
    with pytest.raises(InvalidInput) as info:
        read_source(write(tmp_path, "nul.jsonl", bytes(range(256)) * 64))
    expected = "nul.jsonl:1: looks like a binary file (NUL byte at column 1)"
    assert info.value.problems[0].endswith(expected)


def test_read_source_nul_bytes_and_utf16(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        read_source(write(tmp_path, "nul.txt", b"Ann: hi\nBob: \x00\x01"))
    assert info.value.problems == [
        f"{tmp_path}/nul.txt:2: looks like a binary file (NUL byte at column 6)"
    ]
    with pytest.raises(InvalidInput) as info:
        read_source(write(tmp_path, "wide.txt", "Ann: hi".encode("utf-16")))
    assert "UTF-16" in info.value.problems[0] and "iconv -f utf-16" in (info.value.fix or "")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("huge.jsonl", "record is 10485760 bytes, over the 1 MiB limit"),
        ("huge.txt", "line is 10485760 bytes, over the 1 MiB limit"),
        ("huge.json", "invalid JSON: Expecting value at column 1"),
    ],
)
def test_ten_megabyte_garbage_line_is_one_clean_bad_record(
    tmp_path: Path, name: str, reason: str
) -> None:
    path = write(tmp_path, name, "x" * (10 * 1024 * 1024))
    started = time.perf_counter()
    source = read_source(path)
    assert source.records == [BadRecord(1, reason)]
    assert time.perf_counter() - started < 2


def test_ten_megabyte_line_of_unknown_kind_on_stdin() -> None:
    with pytest.raises(InvalidInput):
        read_source("-", stdin=io.BytesIO(b"x" * (10 * 1024 * 1024)))


def test_message_over_one_mebibyte(tmp_path: Path) -> None:
    path = write(tmp_path, "long.txt", "Ann: " + "é" * (600 * 1024) + "\nBob: short\n")
    records = read_source(path).records
    assert records[0] == BadRecord(1, "message is 1228800 bytes, over the 1 MiB limit")
    assert isinstance(records[1], Episode)
    chat_text = json.dumps([{"role": "user", "content": "a" * (1 << 20) + "b"}])
    (record,) = chat.read(chat_text, "c.json", "c")
    assert record == BadRecord(1, "message is 1048577 bytes, over the 1 MiB limit")


@pytest.mark.parametrize("name", ["deep.json", "deep.jsonl"])
def test_deeply_nested_json_is_a_bad_record_not_a_crash(tmp_path: Path, name: str) -> None:
    source = read_source(write(tmp_path, name, "[" * 100_000))
    (record,) = source.records
    assert isinstance(record, BadRecord) and record.line == 1
    assert record.reason.startswith("invalid JSON")


def test_locomo_file_with_missing_session_date_via_read_source(tmp_path: Path) -> None:
    sample = {
        "sample_id": "x",
        "conversation": {"session_4": [{"speaker": "A", "dia_id": "D4:1", "text": "hi"}]},
    }
    path = write(tmp_path, "conv.json", json.dumps([sample], indent=2))
    source = read_source(path)
    assert source.format == "locomo"
    assert source.records == [
        BadRecord(5, "x session_4: missing session_4_date_time, so its turns would have no date")
    ]


# --- property-based: readers never raise ------------------------------------------------

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELD_NAMES = st.sampled_from(
    ["content", "text", "role", "speaker", "name", "timestamp", "ts", "date", "session", "id",
     "messages", "conversation", "session_1", "session_1_date_time", "dia_id", "blip_caption",
     "img_url", "sample_id", "type"]
)  # fmt: skip
RECORDS = st.recursive(
    st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=6),
    lambda inner: st.dictionaries(FIELD_NAMES, inner | st.lists(inner, max_size=3), max_size=4),
    max_leaves=8,
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_only_records(module: Any, text: str) -> None:
    for record in module.read(text, "fuzz", "fuzz"):
        assert isinstance(record, (Episode, BadRecord))
        if isinstance(record, Episode):
            assert isinstance(record.text, str) and record.text.strip()
        else:
            assert record.line >= 1 and record.reason


@FAST
@given(text=st.text(max_size=300))
def test_every_reader_survives_random_text(text: str) -> None:
    for module in FORMATS.values():
        assert_only_records(module, text)
    with contextlib.suppress(InvalidInput):
        assert detect_format("fuzz", text) in FORMATS


@FAST
@given(records=st.lists(RECORDS | JSON_VALUES, max_size=5), indent=st.sampled_from([None, 2]))
def test_every_reader_survives_random_json(records: list[Any], indent: int | None) -> None:
    lines = "\n".join(json.dumps(r) for r in records)
    for module in FORMATS.values():
        assert_only_records(module, lines)
        assert_only_records(module, json.dumps(records, indent=indent))
        assert_only_records(module, json.dumps({"messages": records}, indent=indent))
        conversation = {"session_1_date_time": "8 May 2023", "session_1": records}
        assert_only_records(module, json.dumps([{"conversation": conversation}], indent=indent))
