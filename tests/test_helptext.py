"""Help paragraphs wrapped in the source come out as one paragraph; examples stay as written."""

from __future__ import annotations

from memcli.cli.helptext import paragraphs


def test_prose_is_joined_and_indented_blocks_are_kept() -> None:
    text = """First line
    of a paragraph.

    [b]Examples[/b]

      memcli a
      memcli b
    """
    assert (
        paragraphs(text)
        == "First line of a paragraph.\n\n[b]Examples[/b]\n\n  memcli a\n  memcli b"
    )


def test_every_command_shows_its_prose_as_paragraphs() -> None:
    import typer.main

    from memcli.cli import app

    def commands(group: object) -> list[object]:
        found = []
        for sub in getattr(group, "commands", {}).values():
            found += [sub, *commands(sub)]
        return found

    every = commands(typer.main.get_command(app))
    assert len(every) > 15
    for command in every:
        text = getattr(command, "help", None) or ""
        for block in text.split("\n\n"):
            if not block.startswith(" "):  # prose: one line per paragraph
                assert "\n" not in block, (command.name, block)
