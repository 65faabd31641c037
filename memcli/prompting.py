"""Prompt files: load `prompts/<name>.md` (or an override), check placeholders, render.

Placeholders are written `{{name}}`. A placeholder without a value, or a value the file
does not use, is a ConfigError: a prompt never goes out half-filled.
Memory text is always passed through `data_block`, which fences it in explicit delimiters;
every prompt tells the model that fenced text is data, never instructions.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from memcli.errors import ConfigError

_PLACEHOLDER = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
DATA_OPEN = "<memory_data>"
DATA_CLOSE = "</memory_data>"


def load(name: str, prompts_dir: str | None = None) -> str:
    """The text of prompt `name`, from `prompts_dir` when it has one, else the built-in."""
    if prompts_dir:
        folder = Path(prompts_dir).expanduser()
        if not folder.is_dir():  # a mistyped path would silently send the built-in prompts
            raise ConfigError(
                f"prompts_dir {prompts_dir} is not a directory",
                fix="point prompts_dir at a directory of prompt files named as in memcli's "
                "prompts/ (answer.md, extract.md …), or set it to null",
            )
        override = folder / f"{name}.md"
        if override.is_file():
            return override.read_text(encoding="utf-8")
    try:
        return resources.files("memcli.prompts").joinpath(f"{name}.md").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        raise ConfigError(
            f"no prompt named {name!r}",
            fix="reinstall memcli, or add the file to your prompts_dir",
        ) from None


def placeholders(text: str) -> set[str]:
    """Names of the `{{placeholders}}` in a prompt."""
    return set(_PLACEHOLDER.findall(text))


def render(name: str, prompts_dir: str | None = None, **values: object) -> str:
    """Fill a prompt's placeholders, refusing missing or unexpected values."""
    text = load(name, prompts_dir)
    wanted = placeholders(text)
    missing = wanted - set(values)
    unused = set(values) - wanted
    if missing or unused:
        parts = []
        if missing:
            parts.append(f"no value for {', '.join(sorted(missing))}")
        if unused:
            parts.append(f"the file does not use {', '.join(sorted(unused))}")
        raise ConfigError(
            f"prompt {name!r}: {'; '.join(parts)}",
            fix="compare your prompts_dir override with the built-in prompt",
        )
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


def data_block(text: str) -> str:
    """Memory text fenced as data; a forged closing tag inside it is defused."""
    safe = text.replace(DATA_CLOSE, "</memory-data>").replace(DATA_OPEN, "<memory-data>")
    return f"{DATA_OPEN}\n{safe}\n{DATA_CLOSE}"
