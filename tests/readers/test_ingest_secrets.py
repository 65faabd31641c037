"""Credentials in messages are masked at ingest by default (`[secret sk-…2f9a]`): the file,
its WAL, exports and packed contexts never hold them. `ingest.mask_secrets: false` keeps
them verbatim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcli.ops.redact import mask_secrets
from memcli.text import hide_secret, hide_userinfo
from tests.cli_runner import Memcli
from tests.reliability import raw_bytes, write_config

OPENAI = "sk-proj-Zk8q2LmN4pR7sT1vW3xY5aB6cD2f9a"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
PRIVATE_KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----"
PASSWORD = "Tr0ub4dor&3"
TURNS = [
    f"Here is the key for the staging bot: {OPENAI}",
    f"The AWS access key id is {AWS}, the token {GITHUB}.",
    f"My deploy key:\n{PRIVATE_KEY}\nplease keep it",
    f"wifi password: {PASSWORD}",
    "The risk-assessment meeting is on Friday.",
]
SECRETS = [OPENAI, AWS, GITHUB, KEY_BODY, PASSWORD]


def write_chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    rows = [{"text": t, "speaker": "Ann", "session": "ops"} for t in TURNS]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_marks() -> None:
    assert mask_secrets(TURNS[0]) == ("Here is the key for the staging bot: [secret sk-…2f9a]", 1)
    assert mask_secrets(TURNS[1])[0] == (
        "The AWS access key id is [secret AKIA…MPLE], the token [secret ghp_…2345]."
    )
    assert mask_secrets(TURNS[2])[0] == "My deploy key:\n[secret private key]\nplease keep it"
    assert mask_secrets(TURNS[3]) == ("wifi password: [secret]", 1)
    assert mask_secrets(TURNS[4]) == (TURNS[4], 0)
    assert mask_secrets("Authorization: Bearer abcdefghijklmnopqrstuvwx.yz12")[0] == (
        "Authorization: [secret Bearer …yz12]"
    )
    masked, _ = mask_secrets(TURNS[0])
    assert mask_secrets(masked) == (masked, 0)  # a mark is never masked again


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "export AWS_SECRET_ACCESS_KEY=[secret]",
        ),
        ('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG"', "aws_secret_access_key = [secret]"),
        (
            "DB_PASSWORD=hunter2 and GITHUB_TOKEN: abc123",
            "DB_PASSWORD=[secret] and GITHUB_TOKEN: [secret]",
        ),
        (
            "the store is postgresql://mem:Tr0ub4dor@db.example.org:5432/memdb, use it",
            "the store is postgresql://mem:[secret]@db.example.org:5432/memdb, use it",
        ),
        (
            "mirror https://ann:pw%40x@git.example.org/r.git",
            "mirror https://ann:[secret]@git.example.org/r.git",
        ),
        ("charge with sk_live_4eC39HqLyjWDarjtT1zdp7dc", "charge with [secret sk_live_…p7dc]"),
        ("restricted rk_test_51HfGq2eZvKYlo2C0aBcDeFgH", "restricted [secret rk_test_…eFgH]"),
        # not credentials: a URL without a password, a host:port, a public key, prose
        ("see https://ann@example.org/x and http://host:8080/a@b", None),
        ("pk_live_4eC39HqLyjWDarjtT1zdp7dc is the publishable key", None),
        ("the token: a bus token. A secret: none. next_page=2", None),
    ],
)
def test_the_shapes_found_on_a_probe(text: str, shown: str | None) -> None:
    masked, count = mask_secrets(text)
    assert masked == (shown or text) and (count == 0) == (shown is None)
    assert mask_secrets(masked) == (masked, 0)  # a mark is never masked again


def test_ingest_export_and_context_never_carry_them(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    cli = Memcli(config=write_config(tmp_path), db=db)
    result = cli.ok("ingest", write_chat(tmp_path))
    assert "5 secrets masked" in result.stdout
    stored = raw_bytes(db)
    exported = cli.ok("export").stdout
    context = cli.ok("ask", "--context-only", "what is the key for the staging bot?").stdout
    add = cli.ok("add", f"new key {OPENAI[:-4]}beef")
    for secret in SECRETS:
        assert secret.encode() not in stored and secret not in exported
        assert secret not in context
    assert "[secret sk-…2f9a]" in context and "[secret sk-…2f9a]" in exported
    assert OPENAI[:-4].encode() not in raw_bytes(db) and add.exit_code == 0
    assert cli.ok("ingest", write_chat(tmp_path)).stdout.startswith("0 new episodes")


@pytest.mark.parametrize("setting", ["file", "env"])
def test_a_switch_keeps_them_verbatim(tmp_path: Path, setting: str) -> None:
    db = tmp_path / "m.db"
    if setting == "file":
        cli = Memcli(config=write_config(tmp_path, ingest={"mask_secrets": False}), db=db)
    else:
        cli = Memcli(config=write_config(tmp_path), db=db,
                     env={"MEMCLI_INGEST_MASK_SECRETS": "false"})  # fmt: skip
    result = cli.ok("ingest", write_chat(tmp_path))
    assert "masked" not in result.stdout
    stored = raw_bytes(db)
    assert all(secret.encode() in stored for secret in SECRETS)


# Masking in messages: credentials in a URL and API keys are hidden, and nothing else is
# garbled (an e-mail address, a word that holds a short key).


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
