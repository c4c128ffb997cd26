"""``--help`` reads the judge methods and the server defaults from their owners (issue 44).

:mod:`prefjudge.cli.defaults` no longer copies the judging methods' names nor the model
server's defaults: it reads the method registry (light to import since every built-in
method registers lazily) and :mod:`prefjudge.backends.defaults`. A method registered before
the command line is built shows in ``judge --help`` at once, and ``--help`` stays light.
"""

from __future__ import annotations

import subprocess
import sys

from prefjudge.backends import defaults as backend_defaults
from prefjudge.backends import serve
from prefjudge.cli import defaults


def test_the_method_choices_are_the_registrys() -> None:
    from prefjudge.judge import METHODS, MODEL_METHODS

    assert defaults.JUDGE_METHODS == tuple(sorted(METHODS))
    assert defaults.MODEL_METHODS == tuple(MODEL_METHODS)


def test_a_method_registered_before_the_cli_is_offered_by_judge_help() -> None:
    probe = (
        "import sys\n"
        "from prefjudge.judge.methods import register_lazy_method\n"
        "register_lazy_method('h8probe', 'nowhere.at_all:Probe', calls_per_pair=1)\n"
        "from click.testing import CliRunner\n"
        "from prefjudge.cli import main\n"
        "result = CliRunner().invoke(main, ['judge', '--help'], terminal_width=200)\n"
        "print(result.output)\n"
        "print('LOADED', 'nowhere' in sys.modules, 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert "h8probe" in out.split("--method", 1)[1]
    assert out.splitlines()[-1] == "LOADED False False"  # listed, its class never imported


def test_the_server_defaults_are_owned_by_the_backends_defaults() -> None:
    assert defaults.SERVE_DEFAULTS is backend_defaults.SERVE_DEFAULTS
    assert dict(defaults.SERVE_DEFAULTS) == {
        "host": serve.DEFAULT_HOST, "port": serve.DEFAULT_PORT,
        "max_model_len": serve.DEFAULT_MAX_MODEL_LEN, "embedded_name": serve.EMBEDDED_SERVED_NAME,
    }
    assert serve.DEFAULT_PORT is backend_defaults.DEFAULT_PORT


def test_models_serve_help_shows_the_owned_defaults() -> None:
    from click.testing import CliRunner

    from prefjudge.cli import main

    result = CliRunner().invoke(main, ["models", "serve", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for value in (backend_defaults.DEFAULT_HOST, str(backend_defaults.DEFAULT_PORT),
                  str(backend_defaults.DEFAULT_MAX_MODEL_LEN)):
        assert value in result.output
