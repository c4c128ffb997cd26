"""Cache keys cover the endpoint and weights: answers never leak between servers or models."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pj_backend_helpers import FakeOpenAI, serve_fake

from prefjudge.backends import Backend, Request, ResponseCache, chat
from prefjudge.backends.base import BackendBase
from prefjudge.backends.vllm_inproc import VllmBackend

pytest.importorskip("openai")

from prefjudge.backends.openai_http import OpenAIBackend


def backend(url: str | None, cache_path: Path | None, **kwargs) -> OpenAIBackend:
    cache = ResponseCache(cache_path) if cache_path is not None else None
    settings = {"max_retries": 1, "backoff_base": 0.01, "timeout": 5.0, "api_key": "k", **kwargs}
    return OpenAIBackend(model="m", base_url=url, cache=cache, **settings)


def key(b: BackendBase, request: Request) -> str:
    return b.cache_key(request, [m.model_dump() for m in request.messages])


def test_same_model_name_on_two_servers_does_not_share_answers(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    fake_server.reply = lambda body: "answer of server A"
    request = chat("r", "which is better?")
    with backend(fake_server.url, cache) as a:
        [first] = a.generate([request])
    assert first.text == "answer of server A"
    with serve_fake() as other:
        other.reply = lambda body: "answer of server B"
        with backend(other.url, cache) as b:
            [second] = b.generate([request])
        assert other.calls == 1, "another endpoint must be asked, not answered from the cache"
    assert second.text == "answer of server B" and not second.cached
    # each server's answer is still there for its own reruns
    with backend(fake_server.url + "/", cache) as again:  # a trailing slash is the same URL
        [third] = again.generate([request])
    assert third.cached and third.text == "answer of server A" and fake_server.calls == 1


def test_model_id_separates_weights_behind_one_url(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    request = chat("r", "echo:old weights")
    with backend(fake_server.url, cache, model_id="m@ckpt-1") as first:
        first.generate([request])
    fake_server.reply = lambda body: "new weights"  # the server restarted with another ckpt
    with backend(fake_server.url, cache, model_id="m@ckpt-2") as second:
        [result] = second.generate([request])
    assert result.text == "new weights" and fake_server.calls == 2
    assert result.model == "m@ckpt-2"


def test_openai_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    default = backend(None, None)
    identity = default.identity()
    assert identity == {
        "backend": "openai",
        "model": "m",
        "endpoint": "https://api.openai.com/v1",
        "weights": None,
        "options": {"strict": False, "extra_body": {}},
    }
    assert json.loads(json.dumps(identity)) == identity
    identity["model"] = "changed"  # a copy: the backend is not affected
    assert default.identity()["model"] == "m"
    assert isinstance(default, Backend)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://Proxy.Example.com/v1/")
    via_env = backend(None, None, strict_schema=True, extra_body={"top_k": 2})
    assert via_env.identity()["endpoint"] == "https://proxy.example.com/v1"
    assert via_env.identity()["options"] == {"strict": True, "extra_body": {"top_k": 2}}
    request = chat("r", "x")
    assert key(default, request) != key(via_env, request)
    explicit = backend("https://api.openai.com/v1/", None)
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert key(explicit, request) == key(backend(None, None), request)


def test_vllm_identity_covers_a_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    weights = folder / "model.safetensors"
    weights.write_bytes(b"w" * 100)
    monkeypatch.chdir(tmp_path)
    request = chat("r", "x")
    relative = VllmBackend(model="ckpt")
    identity = relative.identity()
    assert identity["backend"] == "vllm"
    assert identity["weights"]["path"] == str(folder.resolve())
    assert identity["endpoint"] == f"vllm:{folder.resolve()}"
    assert key(relative, request) == key(VllmBackend(model="ckpt"), request)
    weights.write_bytes(b"v" * 101)  # other weights in the same folder
    for file in folder.iterdir():
        os.utime(file, (1_000_000, 1_000_000))
    replaced = VllmBackend(model="ckpt")
    assert replaced.identity()["weights"]["fingerprint"] != identity["weights"]["fingerprint"]
    assert key(relative, request) != key(replaced, request)
    # the same relative name in another folder: an identical copy, but another model path
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "ckpt").mkdir(parents=True)
    for file in folder.iterdir():
        (elsewhere / "ckpt" / file.name).write_bytes(file.read_bytes())
        os.utime(elsewhere / "ckpt" / file.name, (1_000_000, 1_000_000))
    monkeypatch.chdir(elsewhere)
    copy = VllmBackend(model="ckpt")
    assert (
        copy.identity()["weights"]["fingerprint"] == replaced.identity()["weights"]["fingerprint"]
    )
    assert key(replaced, request) != key(copy, request)


def test_vllm_identity_of_a_hub_name_and_engine_args() -> None:
    request = chat("r", "x")
    plain = VllmBackend(model="org/model")
    assert plain.identity()["weights"] == {"hub": "org/model", "revision": None}
    assert plain.identity()["endpoint"] == "vllm:org/model"
    pinned = VllmBackend(model="org/model", engine_args={"revision": "abc123"})
    assert pinned.identity()["weights"] == {"hub": "org/model", "revision": "abc123"}
    assert key(plain, request) != key(pinned, request)
    # output-changing engine arguments count even under an explicit model id;
    # the others (parallelism, memory) do not
    half = VllmBackend(model="org/model", model_id="mine", engine_args={"dtype": "float16"})
    bf16 = VllmBackend(model="org/model", model_id="mine", engine_args={"dtype": "bfloat16"})
    assert half.identity()["options"] == {"dtype": "float16"}
    assert key(half, request) != key(bf16, request)
    tp = VllmBackend(
        model="org/model",
        model_id="mine",
        engine_args={"dtype": "float16", "tensor_parallel_size": 2},
    )
    assert key(half, request) == key(tp, request)


def test_embedded_identity_does_not_depend_on_the_checkpoint_folder(tmp_path: Path) -> None:
    from prefjudge.backends.embedded import EmbeddedBackend

    request = chat("r", "x")
    one = EmbeddedBackend(checkpoint_dir=tmp_path / "a")
    two = EmbeddedBackend(checkpoint_dir=tmp_path / "b")
    assert key(one, request) == key(two, request)
    identity = one.identity()
    assert identity["backend"] == "embedded" and "embedded" in identity["weights"]
    assert identity["endpoint"].startswith("vllm:SmolLM2")
    assert identity["options"]["dtype"] == "bfloat16"
