"""Invalid JSON is reported in one readable phrase: json's own "starting at" messages get
no second "at"."""

from __future__ import annotations

from memcli.models import BadRecord
from memcli.readers.jsonl import load_document


def test_an_unterminated_string_names_its_column_once() -> None:
    assert load_document('{"text": "never closed}') == BadRecord(
        1, "invalid JSON: Unterminated string starting at column 10"
    )


def test_other_messages_keep_their_at() -> None:
    assert load_document('{"a": 1,}') == BadRecord(
        1, "invalid JSON: Expecting property name enclosed in double quotes at column 9"
    )
