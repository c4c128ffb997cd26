"""The backend modules split from ``openai_http`` and ``base`` keep every published name.

``openai_http`` was split into :mod:`~prefjudge.backends.replicas`,
:mod:`~prefjudge.backends.replies` and :mod:`~prefjudge.backends.session`; ``base`` into
:mod:`~prefjudge.backends.contract` and the attempt logic. The old modules re-export the
names (the same objects), and a reply still reads as before through either. The
configuration's defaults are plain constants (:mod:`~prefjudge.backends.defaults`).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from prefjudge.backends import base, contract, openai_http, replicas, replies


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (replies, ["MAX_JSON_VALUES", "MAX_TEXT_BYTES", "REPLY_ERRORS", "MalformedResponse",
                   "parse_reply", "parse_retry_after"]),
        (replicas, ["OPENAI_URL", "Replica", "endpoint_identity", "normalize_base_url",
                    "replica_urls"]),
    ],
)
def test_openai_http_republishes_the_split_names(module: object, names: list[str]) -> None:
    for name in names:
        assert getattr(openai_http, name) is getattr(module, name)


def test_base_republishes_the_contract() -> None:
    for name in ("Backend", "BackendError", "Message", "OnResult", "Request", "Result", "Role",
                 "Sampling", "chat", "ErrorKind"):
        assert getattr(base, name) is getattr(contract, name)
    assert base.Usage.__name__ == "Usage"


def test_a_reply_reads_the_same_through_the_old_module() -> None:
    body = json.dumps({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()
    got = replies.completion_of(openai_http.parse_reply(body))
    assert isinstance(got, base.Completion)
    assert (got.text, got.finish_reason, got.prompt_tokens) == ("hi", "stop", 3)
    with pytest.raises(openai_http.MalformedResponse, match="NaN"):
        openai_http.parse_reply(b'{"a": NaN}')
    assert openai_http.parse_retry_after({"retry-after-ms": "1500"}) == 1.5


def test_the_configuration_defaults_are_its_fields_defaults() -> None:
    from prefjudge.backends.config import CONFIG_NAME, BackendConfig
    from prefjudge.backends.defaults import BACKEND_DEFAULTS
    from prefjudge.backends.defaults import CONFIG_NAME as LIGHT_NAME

    config = BackendConfig()
    assert {name: getattr(config, name) for name in BACKEND_DEFAULTS} == dict(BACKEND_DEFAULTS)
    assert CONFIG_NAME == LIGHT_NAME == "prefjudge.toml"


def test_the_configuration_defaults_import_no_pydantic() -> None:
    heavy = ("pydantic", "prefjudge.backends.config")
    code = "import sys, prefjudge.backends.defaults\n"
    code += f"print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=120)
    assert out.stdout.strip() == "[]"
