"""Make st-reference.npz: all-MiniLM-L6-v2 vectors computed by sentence-transformers (torch),
which tests/llm/test_local_model.py compares the ONNX path with, so the tests need no torch.

Run once, in a separate environment that has torch and sentence-transformers (never the
project's own test environment), from the repository's root:

    python3 -m venv /tmp/st && /tmp/st/bin/pip install torch==2.13.0 sentence-transformers \\
        '.[model]' && /tmp/st/bin/python tests/data/embeddings/make_reference.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[2] / "examples" / "chat.jsonl"
_LONG = " ".join(
    f"Step {i}: the build copies files, runs the linter and uploads a report." for i in range(40)
)
FIDELITY_TEXTS = [
    "My dog loves long walks in the park.",
    "  Surrounding whitespace and a tab\t",
    "",
    "Ünïcödé, accents, CJK 東京 and an emoji 🚀 in one line.",
    "def add(a, b):\n    return a + b  # a short code snippet",
    "user: Can you remind me when the dentist appointment is? I think it was on Tuesday.",
    _LONG,  # far past the 256 word-piece window: cut exactly as sentence-transformers cuts
    _LONG[: len(_LONG) // 3],  # just past the window
    "ok",
    *(f"Note {n}: buy {n} apples and call the plumber about the leaking sink." for n in range(40)),
]


def chat_texts() -> list[str]:
    """What ingest embeds for each turn of examples/chat.jsonl, in file order."""
    from memcli.models import Episode, embedding_text
    from memcli.readers import read_source

    turns = [r for r in read_source(str(EXAMPLE), None).records if isinstance(r, Episode)]
    return [embedding_text(ep.text, ep.speaker) for ep in turns]


def main() -> None:
    import sentence_transformers
    import torch

    from memcli.llm.local import LocalEmbedder

    embedder = LocalEmbedder()  # the sentence-transformers backend, bundled weights
    chat = chat_texts()
    versions = [
        f"torch {torch.__version__}",
        f"sentence-transformers {sentence_transformers.__version__}",
    ]
    np.savez_compressed(
        HERE / "st-reference.npz",
        fidelity_texts=np.array(FIDELITY_TEXTS),
        fidelity=embedder.embed(FIDELITY_TEXTS).astype("<f4"),
        chat_texts=np.array(chat),
        chat=embedder.embed(chat).astype("<f4"),
        made_with=np.array(versions),
    )


if __name__ == "__main__":
    main()
