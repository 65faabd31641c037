"""Settings: YAML -> frozen dataclasses checked by pydantic (flag > MEMCLI_* > file > default).

The schema (schema.py, its rules in rules.py), loading and layering (load.py), and the
files `memcli config` writes and explains (files.py).
"""

from memcli.config.load import (
    SECTIONS,
    Config,
    ConsolidationConfig,
    EmbeddingConfig,
    IngestConfig,
    LLMConfig,
    McpConfig,
    RetrievalConfig,
    default_db_path,
    layers,
    load_config,
    masked,
    user_config_path,
)

__all__ = [
    "SECTIONS",
    "Config",
    "ConsolidationConfig",
    "EmbeddingConfig",
    "IngestConfig",
    "LLMConfig",
    "McpConfig",
    "RetrievalConfig",
    "default_db_path",
    "layers",
    "load_config",
    "masked",
    "user_config_path",
]
