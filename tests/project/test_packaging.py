"""The wheel ships every package and the prompt files, and memcli runs from it alone."""

from __future__ import annotations

import configparser
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.cli_runner import clean_env
from tests.fakemodel import consolidation_reply, read
from tests.fakeserver import FakeModelServer
from tests.paths import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = REPO
EXAMPLE = ROOT / "examples" / "chat.jsonl"


def test_every_package_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "memcli").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    assert config["package-dir"]["memcli.prompts"] == "prompts"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a clean copy of the sources (the working tree stays untouched)."""
    pytest.importorskip("setuptools.build_meta")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("memcli", "prompts"):
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    dist = tmp_path_factory.mktemp("dist")
    build = "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", build, str(dist)],
        cwd=src, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [built] = dist.glob("memcli-*.whl")
    return built


def test_the_wheel_holds_every_module_and_prompt(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "memcli").rglob("*.py")}
    assert modules and modules <= names, sorted(modules - names)
    prompts = {f"memcli/prompts/{p.name}" for p in (ROOT / "prompts").iterdir() if p.is_file()}
    assert {"memcli/prompts/answer.md", "memcli/prompts/extract.md"} <= prompts
    assert prompts <= names, sorted(prompts - names)
    assert "memcli/config.example.yaml" in names  # what `memcli config init` writes
    assets = {f"memcli/ui/static/{p.name}" for p in (ROOT / "memcli" / "ui" / "static").iterdir()}
    assert {"memcli/ui/static/ui.css", "memcli/ui/static/ui.js"} <= assets <= names  # memcli ui
    [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(zipfile.ZipFile(wheel).read(entry_points).decode())
    assert parser["console_scripts"]["memcli"] == "memcli.cli:main"


# Runs in a fresh interpreter with only the unpacked wheel (and the dependencies) importable:
# the console-script function ingests, then answers a question with the LLM, which needs
# the wheel's answer prompt.
_FROM_WHEEL = """
import importlib, json, sys
from importlib import resources
import memcli
prompts = sorted(p.name for p in resources.files("memcli.prompts").iterdir())
print(json.dumps({"memcli": memcli.__file__, "prompts": prompts}))
module, function = sys.argv[1].split(":")
main = getattr(importlib.import_module(module), function)
for args in (["--json", "ingest", sys.argv[2]], ["--json", "ask", "Which hotel did we book?"]):
    sys.argv = ["memcli", *args]
    try:
        main()
    except SystemExit as exit:
        assert exit.code in (0, None), (args, exit.code)
"""


def test_memcli_runs_from_the_wheel_alone(
    wheel: Path, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    fake_server.responder = consolidation_reply
    config = tmp_path / "memcli.yaml"
    config.write_text(
        f"db: {tmp_path / 'm.db'}\nembedding:\n  provider: none\n"
        f"llm:\n  provider: ollama\n  model: fake-chat\n  url: {fake_server.ollama_url}\n"
    )
    env = clean_env(PYTHONPATH=str(site), MEMCLI_CONFIG=str(config))
    done = subprocess.run(
        [sys.executable, "-c", _FROM_WHEEL, "memcli.cli:main", str(EXAMPLE)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    where, ingested, asked = (json.loads(line) for line in done.stdout.splitlines())
    assert Path(where["memcli"]).is_relative_to(site)  # not the source tree
    shipped = sorted(p.name for p in (ROOT / "prompts").iterdir() if p.is_file())
    assert [p for p in where["prompts"] if p != "__pycache__"] == shipped
    assert ingested["new"] == 16
    assert asked["answer"] == "The memory does not say." and asked["hits"]
    [request] = fake_server.requests_to("/api/chat")
    assert read(request.body).task == "answer"  # the wheel's prompt, filled in
    assert read(request.body).values["question"] == "Which hotel did we book?"
