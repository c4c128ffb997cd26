"""Serving a model is one documented command (issue 42): the launch, the extras, the docs.

* ``vllm_server_command`` (shared with the ``vllm_server`` fixture) carries the CPU flags;
* ``missing_extra`` finds each backend's libraries, and names the install when an import
  is blocked in a real subprocess; every command then says it in one line;
* ``run_server`` forwards SIGINT/SIGTERM to a real server process and exits with its status;
* ``models check`` prints its table on stdout and names the URL on failure;
* the README's "Judging served models" commands exist, and ``examples/served.toml`` loads;
* (vllm, slow) ``prefjudge models serve`` with the embedded model, checked, then Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from pj_cli import cli_argv, flat, run_cli

from prefjudge.backends.extras import BACKEND_NEEDS, missing_extra
from prefjudge.backends.serve import (
    base_url,
    port_free,
    served_name,
    server_answers,
    server_env,
    vllm_server_command,
)
from prefjudge.backends.vllm_inproc import vllm_available
from prefjudge.cli import main

ROOT = Path(__file__).resolve().parents[2]
SECTION = "Judging served models"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (this venv), capturing its output."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


# -- the launch ---------------------------------------------------------------------------------


def test_the_server_command_carries_the_cpu_flags() -> None:
    command = vllm_server_command("/ckpt", served_model_name="smol", host="0.0.0.0", port=8123)
    assert command[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert "--enforce-eager" in command

    def value(flag: str) -> str:
        return command[command.index(flag) + 1]

    assert value("--model") == "/ckpt" and value("--served-model-name") == "smol"
    assert value("--host") == "0.0.0.0" and value("--port") == "8123"
    assert value("--max-model-len") == "4096" and value("--dtype") == "bfloat16"
    assert value("--distributed-executor-backend") == "uni" and value("--seed") == "0"
    outputs = json.loads(value("--structured-outputs-config"))
    assert outputs == {"backend": "xgrammar", "disable_any_whitespace": True}
    longer = vllm_server_command("m", served_model_name="m", max_model_len=8192)
    assert longer[longer.index("--max-model-len") + 1] == "8192"


def test_the_server_env_forces_one_process_and_keeps_what_the_user_set() -> None:
    env = server_env({"VLLM_ENABLE_V1_MULTIPROCESSING": "1", "VLLM_CPU_KVCACHE_SPACE": "8"})
    assert env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"  # pairs with the uni executor
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "8"
    assert server_env({})["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert server_env({})["OMP_NUM_THREADS"] == "1"
    assert server_env({"OMP_NUM_THREADS": "16"})["OMP_NUM_THREADS"] == "16"


def test_the_printed_url_and_default_name(tmp_path: Path) -> None:
    assert base_url("127.0.0.1", 8000) == "http://127.0.0.1:8000/v1"
    assert base_url("0.0.0.0", 9) == "http://127.0.0.1:9/v1"
    assert base_url("::", 9) == "http://[::1]:9/v1"
    folder = tmp_path / "my-checkpoint"
    folder.mkdir()
    assert served_name(str(folder)) == "my-checkpoint"
    assert served_name("Qwen/Qwen2.5-Coder-0.5B-Instruct") == "Qwen/Qwen2.5-Coder-0.5B-Instruct"


def test_a_held_port_is_not_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert not port_free("127.0.0.1", port)
    assert port_free("127.0.0.1", port)


# -- the extras -------------------------------------------------------------------------------


def test_the_installed_backends_need_nothing() -> None:
    assert set(BACKEND_NEEDS) == {"openai", "vllm", "embedded"}
    assert missing_extra("openai") is None  # the openai SDK is in the test extras
    for kind in ("vllm", "embedded"):
        if vllm_available():
            assert missing_extra(kind) is None
        else:
            assert "setup_vllm_cpu.sh" in str(missing_extra(kind))
    assert missing_extra("no-such-backend") is None  # create_backend names it


def test_a_blocked_import_names_the_extra_to_install() -> None:
    done = run_python("""
        import json, sys
        sys.modules["openai"] = None
        sys.modules["vllm"] = None
        from prefjudge.backends.extras import missing_extra
        print(json.dumps({k: missing_extra(k) for k in ("openai", "vllm", "embedded")}))
    """)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["openai"] == (
        "the openai backend needs the openai SDK: pip install 'prefjudge[backends]'")
    for kind in ("vllm", "embedded"):
        assert said[kind].startswith(f"the {kind} backend needs vLLM: ")
        assert "bash scripts/setup_vllm_cpu.sh" in said[kind]
        assert "pip install 'prefjudge[vllm]'" in said[kind]


def test_every_command_says_what_to_install_instead_of_a_traceback() -> None:
    done = run_python(f"""
        import sys
        sys.modules["openai"] = None
        from prefjudge.backends import BackendError, create_backend
        from prefjudge.backends.config import BackendConfig
        try:
            create_backend(BackendConfig(kind="openai", model="m", base_url="http://x/v1"))
        except BackendError as exc:
            print("create_backend:", exc)
        from prefjudge.cli import main
        main(["models", "check", "--backend", "openai", "--model", "m",
              "--base-url", "http://127.0.0.1:{free_port()}/v1"])
    """)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first == ("create_backend: the openai backend needs the openai SDK: "
                     "pip install 'prefjudge[backends]'")
    assert "pip install 'prefjudge[backends]'" in flat(done.stdout.split("\n", 1)[1])


def test_serve_without_vllm_says_how_to_install_it() -> None:
    done = run_python("""
        import sys
        sys.modules["vllm"] = None
        from prefjudge.cli import main
        main(["models", "serve", "--port", "8000"])
    """)
    assert done.returncode == 1 and done.stdout == ""
    said = flat(done.stderr)
    assert "serving a model needs vLLM: install it with `bash scripts/setup_vllm_cpu.sh` (CPU)" \
        in said and "`pip install 'prefjudge[vllm]'` (GPU)" in said
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not vllm_available(), reason="vLLM is checked first")
def test_serve_refuses_a_port_another_server_holds() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = CliRunner().invoke(main, ["models", "serve", "--model", "m", "--port", str(port)])
    assert result.exit_code == 1 and result.stdout == ""
    assert f"port {port} on 127.0.0.1 is in use" in result.stderr


# -- the foreground server: signals and exit status --------------------------------------------

FAKE_SERVER = """
import os, sys
from prefjudge.backends.serve import run_server
command = [sys.executable, "-m", "http.server", sys.argv[1], "--bind", "127.0.0.1",
           "--directory", sys.argv[2]]
url = f"http://127.0.0.1:{sys.argv[1]}/v1"
sys.exit(run_server(command, env=os.environ, url=url, poll_seconds=0.2,
                    on_ready=lambda: print("ready", url, flush=True)))
"""


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 0), (signal.SIGTERM, 143)])
def test_run_server_forwards_the_signal_and_exits_with_the_servers_status(
    tmp_path: Path, sig: signal.Signals, status: int
) -> None:
    """A real HTTP server stands in for vLLM: it answers GET /v1/models from a file."""
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "models").write_text('{"data": []}')
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    process = subprocess.Popen([sys.executable, "-c", FAKE_SERVER, str(port), str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == f"ready {url}\n"
        assert server_answers(url)
        process.send_signal(sig)  # to the foreground process only: it forwards
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # http.server exits 0 on Ctrl-C; SIGTERM ends it (128 + 15)
    assert process.returncode == status, err
    assert out == ""  # said once
    assert not server_answers(url)  # the server is gone with it


# -- models check -----------------------------------------------------------------------------


def test_models_check_on_a_closed_port_prints_its_table_on_stdout() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    args = ["models", "check", "--backend", "openai", "--base-url", url, "--model", "pj-m",
            "--max-retries", "0"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    table = flat(result.stdout)
    assert "prefjudge models check" in table and url in table and "pj-m" in table
    assert re.search(r"answers\W+no", table) and "error" in table
    assert "connection refused" in table.lower() or "connection error" in table.lower()
    assert url in result.stderr and "prefjudge models check" not in result.stderr
    as_json = CliRunner().invoke(main, [*args, "--format", "json"])
    found = json.loads(as_json.stdout)
    assert as_json.exit_code == 1 and found["answers"] is False and url in found["error"]


# -- the README section and its example ---------------------------------------------------------


def section_text() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {SECTION}\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def documented_commands() -> list[list[str]]:
    commands = []
    for block in fenced(section_text(), "bash"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "prefjudge":
                commands.append(words[1:])
    return commands


def command_path(words: list[str]) -> tuple[list[str], click.Command]:
    """The subcommand names at the start of ``words`` and the command they lead to."""
    path: list[str] = []
    command: click.Command = main
    while isinstance(command, click.Group) and words[len(path):]:
        found = command.get_command(click.Context(command), words[len(path)])
        if found is None:
            break
        path.append(words[len(path)])
        command = found
    return path, command


def test_the_section_walks_install_serve_check_and_run() -> None:
    commands = [" ".join(words) for words in documented_commands()]
    assert any(c.startswith("models serve") for c in commands)
    assert any(c.startswith("models check --backend openai --base-url") for c in commands)
    assert "run examples/served.toml --dry-run" in commands
    assert "run examples/served.toml" in commands
    assert "run examples/served.toml --retry-errors" in commands
    installs = "\n".join(fenced(section_text(), "bash"))
    assert "pip install -e '.[backends]'" in installs and "setup_vllm_cpu.sh" in installs


@pytest.mark.parametrize("words", documented_commands(), ids=" ".join)
def test_each_documented_command_and_option_exists(words: list[str]) -> None:
    path, command = command_path(words)
    assert path and not isinstance(command, click.Group), f"no command in {words}"
    result = CliRunner(env={"COLUMNS": "200"}).invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    for option in (word.split("=", 1)[0] for word in words if word.startswith("--")):
        assert option in result.output, f"prefjudge {' '.join(path)} has no {option}"


def test_the_served_example_loads_and_matches_the_section() -> None:
    from prefjudge.backends.config import tomllib
    from prefjudge.experiment.config import load_experiment

    experiment, _ = load_experiment(ROOT / "examples" / "served.toml")
    assert len(experiment.models) == 2 and experiment.judge.method == "monolithic"
    for spec in [*experiment.models, experiment.judge]:
        assert spec.backend == "openai" and spec.model and spec.base_url
    [shown] = fenced(section_text(), "toml")
    abridged = tomllib.loads(shown)
    by_name = {m.name: m.model_dump() for m in experiment.models}
    for model in abridged["models"]:
        assert model.items() <= by_name[model["name"]].items()
    assert abridged["judge"].items() <= experiment.judge.model_dump().items()


# -- the real server (vLLM on CPU, the embedded model) -------------------------------------------


@pytest.mark.vllm
@pytest.mark.slow
def test_models_serve_answers_a_check_and_stops_on_ctrl_c(embedded_checkpoint: Path) -> None:
    """``prefjudge models serve`` starts in ~45 s on 2 cores; 300 s like the fixture."""
    from pj_backend_helpers import vllm_env

    port = free_port()
    process = subprocess.Popen(
        cli_argv("models", "serve", "--port", str(port)), stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, env={**vllm_env(), "OMP_NUM_THREADS": "1"},
        start_new_session=True)
    started = time.monotonic()
    try:
        assert process.stdout is not None
        printed = [process.stdout.readline() for _ in range(2)]  # blocks until ready
        assert time.monotonic() - started < 300
        url = f"http://127.0.0.1:{port}/v1"
        assert printed == [f'base_url = "{url}"\n', 'model = "smollm2"\n'], printed
        check = run_cli("models", "check", "--backend", "openai", "--base-url", url,
                        "--model", "smollm2", "--format", "json", timeout=300)
        found: dict[str, Any] = json.loads(check.stdout)
        assert found["answers"] and found["json_schema"] and found["model_listed"]
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0
    assert process.stdout.read() == ""
    assert not server_answers(url)
