"""`config show` and `config init`: the settings with their sources, and the file written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.present.output import Output


def show_config(
    out: Output, values: dict[str, Any], sources: dict[str, str], file: str | None
) -> None:
    """The effective settings as YAML, each leaf followed by `# source`; or one JSON object
    with a `sources` map of dotted keys."""
    if out.json:
        out.record({"source_file": file, **values, "sources": sources})
        return
    out.info(f"# from {file}" if file else "# no config file found: defaults and environment")
    rows: list[tuple[str, str | None]] = []
    for key, value in values.items():
        if isinstance(value, dict) and all(f"{key}.{k}" in sources for k in value):
            rows.append((f"{key}:", None))
            rows += [(f"  {k}: {_yaml(v)}", sources[f"{key}.{k}"]) for k, v in value.items()]
        else:
            rows.append((f"{key}: {_yaml(value)}", sources.get(key, "default")))
    width = max(len(text) for text, source in rows if source)
    out.text("\n".join(f"{text:<{width}}  # {src}" if src else text for text, src in rows))


def _yaml(value: Any) -> str:
    """One value as inline YAML (`null`, `0.5`, `[a, b]`, `{x: 1}`)."""
    import yaml

    return yaml.safe_dump([value], default_flow_style=True, width=10**6).strip()[1:-1]


def show_config_written(out: Output, path: str) -> None:
    if out.json:
        out.record({"written": path})
    else:
        out.text(f"wrote {path}")
        out.info("edit it, then check with: memcli config show")
