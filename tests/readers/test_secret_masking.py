"""Masking in messages: credentials in a URL and API keys are hidden, and nothing else is
garbled (an e-mail address, a word that holds a short key)."""

from __future__ import annotations

import pytest

from memcli.text import hide_secret, hide_userinfo


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://user:pw@host:1/v1", "http://***@host:1/v1"),
        ("https://key@host/a@b", "https://***@host/a@b"),
        ("http://host/v1?to=me@example.org", "http://host/v1?to=me@example.org"),
        ("http://host/#top@x", "http://host/#top@x"),
        ("see //joe@example.org", "see //joe@example.org"),
        ("mail bob@example.org", "mail bob@example.org"),
        (
            "postgresql://h/db?user=mem&password=pw1&x=1",
            "postgresql://h/db?user=mem&password=***&x=1",
        ),
        ("postgresql://h/db?sslpassword=pw1", "postgresql://h/db?sslpassword=***"),
        ("https://h/v1?key=AIzaXYZ#f", "https://h/v1?key=***#f"),
        ("https://h/v1?api-key=k1&access_token=t1", "https://h/v1?api-key=***&access_token=***"),
        (
            "https://h/v1?api-version=2024-06-01&monkey=1",
            "https://h/v1?api-version=2024-06-01&monkey=1",
        ),
    ],
)
def test_userinfo_masking_touches_only_credentials(text: str, shown: str) -> None:
    assert hide_userinfo(text) == shown


def test_a_short_key_does_not_garble_words() -> None:
    assert hide_secret("the test passed; key test rejected", "test") == (
        "the *** passed; key *** rejected"
    )
    assert hide_secret("latest contest results", "test") == "latest contest results"
    assert hide_secret("bad key sk-abc123.", "sk-abc123") == "bad key ***."
    assert hide_secret("nothing to hide", "") == "nothing to hide"
