"""The settings' schema: frozen dataclasses whose value rules pydantic checks.

Loading, layering and error messages live in `memcli.config`, which re-exports these names;
how the rules are declared and checked, in `memcli.config.rules`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

from memcli.config.rules import Bounds, NotBlank, NullWords, PathList, YamlMapping, settings


def default_db_path() -> str:
    """The store's default location in the user's data directory."""
    from platformdirs import user_data_dir

    return str(Path(user_data_dir("memcli", appauthor=False)) / "memory.db")


# Value rules, declared once and checked by pydantic (the messages are ours: see _message).
Count = Annotated[int, Bounds(1)]  # at least one
Amount = Annotated[int, Bounds(0)]  # zero or more
Weight = Annotated[float, Bounds(0)]
Share = Annotated[float, Bounds(0, 1)]
Seconds = Annotated[float, Bounds(0.001)]
Name = Annotated[str, NotBlank()]  # not blank: '' would be a space no flag can name
MaybeText = Annotated[str | None, NullWords()]  # '', 'null' and 'none' mean no value


MaybePaths = Annotated[list[str] | None, PathList()]  # env: joined like $PATH
MaybeNames = Annotated[list[Name] | None, PathList()]
Tuning = Annotated[dict[str, dict[str, Any]], YamlMapping()]  # env: a YAML mapping

# Unknown keys are errors; numbers are accepted where text is expected (model: 7).
_RULES: dict[str, Any] = {"extra": "forbid", "coerce_numbers_to_str": True}


@dataclasses.dataclass(frozen=True)
@settings(_RULES)
class EmbeddingConfig:
    provider: str = "local"  # local | ollama | openai | none
    model: str = "auto"  # auto: all-MiniLM-L6-v2 for English, else multilingual-e5-small
    url: MaybeText = None  # server address; None = the provider's usual one
    api_key_env: str = "OPENAI_API_KEY"  # name of the env var holding the key (openai)
    batch_size: Count = 64
    timeout: Seconds = 60.0
    max_retries: Amount = 3
    # The local provider (memcli/llm/local.py, onnx_embed.py, model_files.py):
    backend: Literal["onnx", "sentence-transformers"] = (
        "onnx"  # sentence-transformers: memcli[torch]
    )
    model_dir: MaybeText = None  # model.safetensors, tokenizer.json, config.json; None = find
    offline: bool = False  # never download model files (HF_HUB_OFFLINE=1 counts too)
    download_url: str = "https://huggingface.co"  # where a missing model is fetched (or a mirror)
    cache_dir: MaybeText = None  # downloads and built graphs; None = the platform cache dir
    threads: Amount = 0  # onnxruntime threads; 0 = one per CPU


@dataclasses.dataclass(frozen=True)
@settings(_RULES)
class LLMConfig:
    provider: str = "none"  # ollama | openai | none
    model: str = ""
    url: MaybeText = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: Weight = 0.0
    timeout: Seconds = 120.0
    max_retries: Amount = 3
    concurrency: Count = 2
    # Tokens the model sees at once (prompt + reply); 0 = what the server says, else a
    # provider default (memcli/llm/window.py). Prompts are fitted into it.
    context_length: Amount = 0
    max_tokens: Amount = 0  # tokens a reply may take; 0 = a quarter of the window, <= 2048


@dataclasses.dataclass(frozen=True)
@settings(_RULES)
class RetrievalConfig:
    strategy: str = "hybrid"
    k: Count = 10  # hits returned
    pool: Count = 60  # hits ranked for packing the context (at least k)
    word_budget: Count = 1000  # words of packed context
    derived_words: Amount = 300  # facts and reflections: words of their own beside word_budget
    max_facts: Amount = 60
    max_reflections: Amount = 20
    max_episodes: Amount = 80
    # Advanced, and not in config.example.yaml: strategy parameters by strategy
    # ({"hybrid": {"candidates": 80}}), checked when the strategy runs (memcli.retrieval.
    # params; docs/retrieval.md, "Tuning a strategy").
    tuning: Tuning = field(default_factory=dict)


# Keys the retrieval section had before strategy parameters moved into code (memcli.
# retrieval.params). A config file or MEMCLI_RETRIEVAL_* variable that still sets one is
# read with a warning naming it (memcli.config), and the value is not used.
REMOVED_RETRIEVAL_KEYS = frozenset(
    """candidates lexical_weight related_words related_similarity related_weight seeds
    expand_depth max_subgraph hub_threshold damping ppr_weight reply_share replied_share
    topic_weight entity_seeds entity_min_similarity kg_seeds kg_max_nodes kg_weight
    kg_session_discount beam_max_depth beam_max_paths beam_mean_alpha wc_chain_num
    wc_other_num astar_endpoints astar_max_depth astar_max_passed edge_next edge_part_of
    edge_related edge_derived_from edge_derived_from_fact edge_has_concept edge_about_concept
    edge_mentions edge_relation edge_supersedes edge_contradicts dwpr_seeds dwpr_damping
    gam_anchors beta_time beta_role beta_rule gam_beta_conf gam_min_belief""".split()
)


@dataclasses.dataclass(frozen=True)
@settings(_RULES)
class ConsolidationConfig:
    buffer_tokens: Count = 2048  # an open session buffer is segmented once it passes this
    chunk_tokens: Count = 500  # turns' tokens per extraction prompt (at most)
    segment_min_turns: Count = 3  # no topic segment shorter than this (unless a buffer is)
    boundary_window: Count = 3  # turns on each side of a gap compared by the similarity rule
    boundary_min_depth: Share = 0.15  # smallest similarity dip that counts as a topic change
    summary_words: Count = 60  # length of an extractive segment summary
    summary_llm_min_words: Amount = 120  # a shorter segment keeps its extractive summary
    keywords: Amount = 5  # keywords kept per segment
    link_top_k: Count = 5  # similar older segments shown to the topic-link judge
    link_threshold: Share = 0.6  # RELATED edge when the judge's confidence reaches this (τ)
    link_min_similarity: Share = 0.7  # older segments less alike are not shown to the judge
    similar_context_k: Amount = 5  # older episodes / facts / reflections given as prompt context
    reflect_batch: Count = 20  # new facts per reflection prompt
    concepts_per_segment: Amount = 3  # keyword concepts chosen per segment without an LLM
    concept_max_df_share: Share = 0.05  # a keyword in more episodes than this is too generic
    concept_merge_threshold: Share = 0.9  # cosine above which two concepts are merged
    gate: bool = True  # skip LLM extraction of segments with nothing memorable (rule-based)
    gate_min_words: Count = 2  # informative words that make a turn memorable
    gate_common_share: Share = 0.02  # a word in more of the turns than this is not informative
    supersede_batch: Count = 10  # new facts per prompt of the supersede judge
    supersede_candidates: Amount = 5  # most similar earlier facts shown with each new fact
    supersede_max_shown: Count = 12  # earlier facts shown with one new fact at most
    entity_merge_threshold: Share = 0.9  # cosine (with shared letters) merging two entity names


MIB = 1 << 20


@dataclasses.dataclass(frozen=True)
@settings(_RULES)
class IngestConfig:
    # How much of the input is held in memory at once: a line of a line format (JSONL,
    # transcript) is read up to max_message_bytes and never whole.
    max_message_bytes: Count = MIB  # largest message (and JSONL line) accepted
    max_document_bytes: Count = 256 * MIB  # largest whole-JSON file (chat, LoCoMo, exports)
    mask_secrets: bool = True  # API keys, tokens, private keys, passwords -> [secret sk-…2f9a]


@dataclasses.dataclass(frozen=True)
@settings(_RULES)
class McpConfig:
    token: MaybeText = None  # bearer token `mcp --http` requires; None = a new one per start
    ingest_dirs: MaybePaths = None  # where the ingest tool may read; None = anywhere on stdio,
    # nowhere over --http
    spaces: MaybeNames = None  # the spaces clients may use; None = any
    allow_forget_all: bool = False  # forget may select a whole space (sessions "*")


@dataclasses.dataclass(frozen=True)
@settings(_RULES)
class Config:
    db: MaybeText = None  # None = default_db_path()
    space: Name = "default"
    prompts_dir: MaybeText = None  # a directory whose prompt files override the built-in ones
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    source_file: str | None = field(default=None, compare=False)  # which file was read
    notices: tuple[str, ...] = field(default=(), compare=False)  # warnings from loading

    @property
    def db_path(self) -> str:
        """The database file to open."""
        return self.db or default_db_path()


SECTIONS = {
    f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(f.default_factory)
}
