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
