"""Secrets never printed, URIs shown without credentials, store files private (issue 14, item 7)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem import ConfigError, Memory, MemoryConfig, StoreUnavailableError
from graphmem.config import EmbedderConfig, LLMConfig, display_uri
from graphmem.embedding import HashingEmbedder
from graphmem.embedding.openai import OpenAIEmbedder
from graphmem.extraction.llm import LLMExtractor

from .conftest import NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER

PASSWORD = "hunter2-Pa55word"
LLM_KEY = "sk-llm-0123456789abcdef"
EMBED_KEY = "sk-embed-0123456789abcdef"
SECRETS = (PASSWORD, LLM_KEY, EMBED_KEY)


def assert_hidden(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret leaked into: {text[:300]}"


def full_config() -> MemoryConfig:
    return MemoryConfig.load({
        "store": {"provider": "neo4j", "uri": "bolt://db.example:7687", "password": PASSWORD},
        "llm": {"provider": "openai", "api_key": LLM_KEY},
        "embedder": {"provider": "openai", "api_key": EMBED_KEY},
    })


# -- the config object ---------------------------------------------------------------------------------


def test_repr_str_and_dumps_hide_secrets() -> None:
    cfg = full_config()
    for shown in (repr(cfg), str(cfg), cfg.model_dump_json(), str(cfg.model_dump()), repr(cfg.store),
                  str(cfg.model_dump(mode="json")), repr(cfg.llm), repr(cfg.embedder)):
        assert_hidden(shown)
    assert cfg.model_dump(mode="json")["store"]["password"] == "**********"
    assert '"api_key":"**********"' in cfg.model_dump_json()
    assert cfg.store.password is not None and cfg.store.password.get_secret_value() == PASSWORD
    assert cfg.llm.api_key is not None and cfg.llm.api_key.get_secret_value() == LLM_KEY
    assert cfg.embedder.api_key is not None and cfg.embedder.api_key.get_secret_value() == EMBED_KEY


def test_env_yaml_and_toml_still_set_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRAPHMEM_STORE__PASSWORD", PASSWORD)
    monkeypatch.setenv("GRAPHMEM_LLM__API_KEY", LLM_KEY)
    cfg = MemoryConfig.load()
    assert cfg.store.password is not None and cfg.store.password.get_secret_value() == PASSWORD
    assert cfg.llm.api_key is not None and cfg.llm.api_key.get_secret_value() == LLM_KEY
    assert_hidden(repr(cfg))
    monkeypatch.delenv("GRAPHMEM_STORE__PASSWORD")
    monkeypatch.delenv("GRAPHMEM_LLM__API_KEY")
    y = tmp_path / "c.yaml"
    y.write_text(f"store:\n  password: {PASSWORD}\nembedder:\n  api_key: {EMBED_KEY}\n")
    cfg = MemoryConfig.from_file(y)
    assert cfg.store.password is not None and cfg.store.password.get_secret_value() == PASSWORD
    assert cfg.embedder.api_key is not None and cfg.embedder.api_key.get_secret_value() == EMBED_KEY
    t = tmp_path / "c.toml"
    t.write_text(f'[llm]\napi_key = "{LLM_KEY}"\n')
    cfg = MemoryConfig.from_file(t)
    assert cfg.llm.api_key is not None and cfg.llm.api_key.get_secret_value() == LLM_KEY
    # a dumped config (a SecretStr inside) validates again as the same secret
    again = MemoryConfig.load({"llm": cfg.llm.model_dump()})
    assert again.llm.api_key is not None and again.llm.api_key.get_secret_value() == LLM_KEY


@pytest.mark.parametrize("bad", [
    {"store": {"password": 1234567}},                       # wrong type: pydantic echoes input_value
    {"store": {"password": [PASSWORD]}},
    {"store": {"pasword": PASSWORD}},                       # a typo'd key holding the secret
    {"llm": {"api_key": {"value": LLM_KEY}}},
    {"embedder": {"api_key": 42, "provider": "nope"}},
    {"store": PASSWORD},                                    # a section given as a string
    {"store": {"uri": f"bolt://neo4j:{PASSWORD}@host", "password": "another"}},
    {"store": {"uri": f"bolt://someone:{PASSWORD}@host", "user": "else"}},
])
def test_config_errors_do_not_echo_secrets(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as info:
        MemoryConfig.load(bad)
    assert_hidden(str(info.value))
    assert "1234567" not in str(info.value) and "42" not in str(info.value)
    assert "invalid graphmem configuration" in str(info.value)


def test_config_errors_still_name_field_and_plain_value() -> None:
    with pytest.raises(ConfigError) as info:
        MemoryConfig.load({"search": {"top_k": 0}, "store": {"provider": "mon-go"}})
    message = str(info.value)
    assert "search.top_k" in message and "(got 0)" in message
    assert "store.provider" in message and "'mon-go'" in message
    with pytest.raises(ConfigError) as info:
        MemoryConfig.load({"search": {"normalize": "x" * 5000}})
    assert len(str(info.value)) < 400  # echoed values are cut


def test_environment_that_does_not_parse_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_STORE", f'{{"password": "{PASSWORD}", broken')
    with pytest.raises(ConfigError) as info:
        MemoryConfig.load()
    assert_hidden(str(info.value))


# -- URIs ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("uri", "shown"), [
    ("bolt://neo4j:pw@db:7687", "bolt://db:7687"),
    ("neo4j+s://u@x.databases.neo4j.io", "neo4j+s://x.databases.neo4j.io"),
    ("bolt://a:b@[::1]:7687/path?q=a@b", "bolt://[::1]:7687/path?q=a@b"),
    ("bolt://p%40ss:w%3Ard@db", "bolt://db"),
    ("user:pw@db:7687", "db:7687"),
    ("bolt://127.0.0.1:7687", "bolt://127.0.0.1:7687"),
    ("http://proxy/v1", "http://proxy/v1"),
])
def test_display_uri_strips_userinfo(uri: str, shown: str) -> None:
    assert display_uri(uri) == shown


def test_credentials_in_the_uri_move_into_user_and_password() -> None:
    cfg = MemoryConfig.load({"store": {"provider": "neo4j", "uri": "bolt://alice:p%40ss%3Aword@db:7687/"}})
    assert cfg.store.uri == "bolt://db:7687/" and cfg.store.user == "alice"
    assert cfg.store.password is not None and cfg.store.password.get_secret_value() == "p@ss:word"
    assert "p@ss" not in repr(cfg) and "ss%3A" not in repr(cfg)
    same = MemoryConfig.load({"store": {"uri": f"bolt://neo4j:{PASSWORD}@db", "password": PASSWORD}})
    assert same.store.uri == "bolt://db"


def test_refused_uri_is_shown_without_credentials(tmp_path: Path) -> None:
    for uri in (f"http://neo4j:{PASSWORD}@db:7474", f"bolt://neo4j:{PASSWORD}@[::1"):
        cfg = MemoryConfig.load({"home": str(tmp_path), "store": {"provider": "neo4j", "uri": uri}})
        with pytest.raises(ConfigError) as info:
            Memory(cfg, embedder=HashingEmbedder(384))
        assert_hidden(str(info.value))
        assert info.value.__cause__ is None  # a traceback does not show the driver's own message either


def test_unreachable_neo4j_message_has_no_credentials(tmp_path: Path) -> None:
    cfg = MemoryConfig.load({"home": str(tmp_path), "store": {
        "provider": "neo4j", "uri": f"bolt://neo4j:{PASSWORD}@127.0.0.1:1", "connect_timeout_s": 2}})
    with pytest.raises(StoreUnavailableError) as info:
        Memory(cfg, embedder=HashingEmbedder(384))
    assert "127.0.0.1:1" in str(info.value)
    assert_hidden(str(info.value))


def test_neo4j_with_credentials_in_the_uri(neo4j_available: bool, tmp_path: Path) -> None:
    if not neo4j_available:
        pytest.skip(f"no Neo4j at {NEO4J_URI}")
    scheme, _, rest = NEO4J_URI.partition("://")
    from urllib.parse import quote

    uri = f"{scheme}://{quote(NEO4J_USER, safe='')}:{quote(NEO4J_PASSWORD, safe='')}@{rest}"
    cfg = MemoryConfig.load({"home": str(tmp_path), "store": {"provider": "neo4j", "uri": uri}})
    with Memory(cfg, embedder=HashingEmbedder(384)) as m:
        assert NEO4J_PASSWORD not in m.info.location and "@" not in m.info.location
    # refused credentials (an unknown user, so the real one is never locked out by failed attempts)
    wrong = {"provider": "neo4j", "uri": f"{scheme}://graphmem-no-such-user:{PASSWORD}@{rest}"}
    with pytest.raises(StoreUnavailableError, match="refused the credentials") as info:
        Memory(MemoryConfig.load({"home": str(tmp_path), "store": wrong}), embedder=HashingEmbedder(384))
    assert_hidden(str(info.value))


def test_keys_reach_the_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    emb = OpenAIEmbedder(EmbedderConfig.model_validate(
        {"provider": "openai", "api_key": EMBED_KEY, "base_url": "http://127.0.0.1:9/v1", "dims": 8}))
    assert emb._client.api_key == EMBED_KEY
    ex = LLMExtractor(LLMConfig.model_validate({"provider": "openai", "api_key": LLM_KEY}))
    assert ex._client.api_key == LLM_KEY
    with pytest.raises(ConfigError, match="no API key"):
        LLMExtractor(LLMConfig.model_validate({"provider": "openai", "api_key": ""}))


# -- file modes ----------------------------------------------------------------------------------------


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def permissive_umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_store_files_are_private(permissive_umask: int, tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    with Memory({"home": str(home), "embedder": {"provider": "hashing"}}, embedder=HashingEmbedder(384)) as m:
        m.add("I'm allergic to peanuts", user_id="u", infer=False)
        db = home / "graphmem.db"
        for path in (db, db.with_name("graphmem.db-wal"), db.with_name("graphmem.db-shm")):
            assert path.exists(), path
            assert mode(path) == 0o600, (path, oct(mode(path)))
    assert mode(home) == 0o700 and mode(home.parent) == 0o700  # the folders graphmem made
    assert mode(tmp_path) == stat.S_IMODE(tmp_path.stat().st_mode)  # unchanged: not graphmem's


def test_existing_folder_and_file_keep_their_mode(permissive_umask: int, tmp_path: Path) -> None:
    home = tmp_path / "shared"
    home.mkdir()
    home.chmod(0o750)
    db = home / "team.db"
    with Memory({"home": str(home), "store": {"path": str(db)}}, embedder=HashingEmbedder(384)) as m:
        m.add("first", user_id="u", infer=False)
    assert mode(home) == 0o750 and mode(db) == 0o600
    db.chmod(0o640)  # the user chose to share it with a group
    with Memory({"home": str(home), "store": {"path": str(db)}}, embedder=HashingEmbedder(384)) as m:
        m.add("second", user_id="u", infer=False)
        assert mode(db) == 0o640 and mode(db.with_name("team.db-wal")) == 0o640
