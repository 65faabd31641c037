"""Credentials in conversation text, masked before anything is stored.

People paste API keys, tokens and private keys into chats with agents. Stored verbatim they
would be recalled into prompts, packed into contexts and written into exports, so by
default (`ingest.mask_secrets`) each is replaced by a mark that keeps what kind of secret
it was and, for tokens, the last four characters (as the providers' dashboards show them):
`[secret sk-…2f9a]`. A password or a private key keeps nothing of itself. Only shapes that
are credentials on sight are matched, so ordinary prose is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

ELLIPSIS = "…"


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    mark: Callable[[re.Match[str]], str]


def _token(prefix_group: str = "prefix") -> Callable[[re.Match[str]], str]:
    """`[secret PREFIX…LAST4]` for a token whose prefix names its issuer."""

    def mark(found: re.Match[str]) -> str:
        whole = found.group("token")
        return f"[secret {found.group(prefix_group)}{ELLIPSIS}{whole[-4:]}]"

    return mark


def _value(found: re.Match[str]) -> str:
    """`password: [secret]`: the label stays, the value goes."""
    return f"{found.group('label')}[secret]"


_RULES = (
    _Rule(
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|.*\Z)",
            re.DOTALL,
        ),
        lambda found: "[secret private key]",
    ),
    # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-) and others that use the sk- prefix.
    _Rule(re.compile(r"(?<![\w-])(?P<token>(?P<prefix>sk-)[A-Za-z0-9_-]{20,})"), _token()),
    # Stripe's secret and restricted keys, live and test (pk_ keys are public).
    _Rule(re.compile(r"\b(?P<token>(?P<prefix>[sr]k_(?:live|test)_)[A-Za-z0-9]{16,})"), _token()),
    _Rule(re.compile(r"\b(?P<token>(?P<prefix>AKIA|ASIA)[0-9A-Z]{16})\b"), _token()),
    _Rule(
        re.compile(r"\b(?P<token>(?P<prefix>gh[pousr]_|github_pat_)[A-Za-z0-9_]{30,})\b"),
        _token(),
    ),
    _Rule(re.compile(r"\b(?P<token>(?P<prefix>xox[abposr]-)[A-Za-z0-9-]{10,})"), _token()),
    _Rule(re.compile(r"\b(?P<token>(?P<prefix>AIza)[0-9A-Za-z_-]{35})"), _token()),
    _Rule(re.compile(r"\b(?P<token>(?P<prefix>glpat-)[A-Za-z0-9_-]{20,})"), _token()),
    # A JSON Web Token: three base64url parts, the first two JSON objects ("eyJ").
    _Rule(
        re.compile(r"\b(?P<token>(?P<prefix>eyJ)[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,})"),
        _token(),
    ),
    _Rule(re.compile(r"(?i)\b(?P<prefix>bearer )(?P<token>[A-Za-z0-9._~+/-]{20,}=*)"), _token()),
    # The password of a URL (postgresql://user:PASSWORD@host, https://user:PASSWORD@...).
    _Rule(
        re.compile(
            r"(?i)(?P<label>\b[a-z][a-z0-9+.-]*://[^\s:/?#@\[\]]+:)(?!\[secret)[^\s@/?#]+(?=@)"
        ),
        _value,
    ),
    # `password: hunter2`, `api_key = "…"`, `AWS_SECRET_ACCESS_KEY=…`, `GITHUB_TOKEN=…`: a
    # label that says the value is a secret, alone or the last word of an environment
    # variable's name.
    _Rule(
        re.compile(
            r"(?i)(?P<label>\b(?:[a-z0-9]+_)*"
            r"(?:password|passwd|passphrase|pwd|api[_-]?key|secret[_-]?(?:access[_-]?)?key|"
            r"access[_-]?token|auth[_-]?token|client[_-]?secret|(?<=_)(?:token|secret))"
            r"\b[\"']?\s*[:=]\s*)"
            r"(?P<value>\"[^\"\n]+\"|'[^'\n]+'|(?!\[secret)[^\s\"',;]+)"
        ),
        _value,
    ),
)


def mask_secrets(text: str) -> tuple[str, int]:
    """`text` with every credential replaced by its mark, and how many were masked."""
    total = 0
    for rule in _RULES:
        text, count = rule.pattern.subn(rule.mark, text)
        total += count
    return text, total
