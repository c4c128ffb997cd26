"""``--help`` starts at once: no numeric library, no model client, and its defaults are true.

Every command's help (and every subcommand's) is printed in one subprocess, which then
lists the heavy libraries it imported; the constants ``--help`` shows instead of importing
the stages (:mod:`prefjudge.cli.defaults`) are held equal to the values they copy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import typing

import pytest

from prefjudge.cli import defaults

NUMERIC = ("numpy", "pandas", "scipy", "choix", "matplotlib")
"""Libraries no ``--help`` may import."""

CLIENTS = ("pydantic", "rich", "yaml", "openai", "httpx")
"""Libraries ``--help`` has no use for either (each costs tens of milliseconds)."""

PROBE = textwrap.dedent("""
    import json, sys
    import click
    from click.testing import CliRunner
    from prefjudge.cli import main
    from prefjudge.cli.commands import COMMAND_MODULES

    runner = CliRunner()
    shown = {}

    def walk(command, path):
        result = runner.invoke(main, [*path, "--help"])
        shown[" ".join(path) or "(top)"] = [result.exit_code, result.output]
        if isinstance(command, click.Group) and path:
            for name in command.list_commands(None):
                walk(command.get_command(None, name), [*path, name])

    walk(main, [])
    for name in sorted(COMMAND_MODULES):
        walk(main.get_command(click.Context(main), name), [name])
    heavy = sorted({module.split(".")[0] for module in sys.modules} & set(sys.argv[1:]))
    print(json.dumps({"shown": shown, "heavy": heavy}))
""")


@pytest.fixture(scope="module")
def helps() -> dict[str, object]:
    """Every command's and subcommand's help, printed in one fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE, *NUMERIC, *CLIENTS],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_every_help_imports_no_numeric_library_and_no_client(helps: dict) -> None:
    shown = helps["shown"]
    assert {"judge", "rank", "run", "persona compare", "models serve", "cache clear",
            "guidance build"} <= set(shown)
    for name, (code, text) in shown.items():
        assert code == 0 and "Usage:" in text, (name, text)
    assert [m for m in helps["heavy"] if m in NUMERIC] == []
    assert helps["heavy"] == []


def test_judge_help_offers_scores_files(helps: dict) -> None:
    text = " ".join(helps["shown"]["judge"][1].split())
    assert "--scores FILE `prefjudge score` outputs whose test outcomes and instruction " \
           "checks the evidence and hybrid methods take instead of running them again" in text


def _model_defaults(model: type, names: typing.Iterable[str]) -> dict[str, object]:
    return {name: model.model_fields[name].default for name in names}


def test_backend_defaults_are_the_settings_models() -> None:
    from prefjudge.backends.config import CONFIG_NAME, BackendConfig, BackendKind

    assert defaults.BACKEND_DEFAULTS == _model_defaults(BackendConfig, defaults.BACKEND_DEFAULTS)
    assert defaults.BACKEND_KINDS == typing.get_args(BackendKind)
    assert defaults.CONFIG_NAME == CONFIG_NAME


def test_judge_names_and_defaults_are_the_judges() -> None:
    from prefjudge.judge import METHODS, MODEL_METHODS
    from prefjudge.judge.pairs import PAIR_FORMATS
    from prefjudge.judge.settings import JUDGE_SAMPLING
    from prefjudge.scale.ray_engine import JUDGE_SHARD_SIZE, RaySettings

    assert defaults.JUDGE_METHODS == tuple(sorted(METHODS))
    assert defaults.MODEL_METHODS == tuple(MODEL_METHODS)
    assert defaults.PAIR_FORMATS == tuple(PAIR_FORMATS)
    assert defaults.JUDGE_SAMPLING == JUDGE_SAMPLING
    assert defaults.JUDGE_SHARD_SIZE == JUDGE_SHARD_SIZE
    ray = RaySettings()
    assert defaults.RAY_DEFAULTS == {"address": ray.address, "shard_size": ray.shard_size,
                                     "cpus_per_shard": ray.cpus_per_shard}


def test_stage_defaults_are_the_stages() -> None:
    from prefjudge.backends import serve
    from prefjudge.persona import run as persona
    from prefjudge.sandbox.limits import HARNESS_HELP
    from prefjudge.scoring.metrics import DEFAULT_RESAMPLES as METRICS_RESAMPLES
    from prefjudge.scoring.taxonomy import CATEGORIES
    from prefjudge.stats import DEFAULT_RESAMPLES
    from prefjudge.testbed.augment.run import SELECTOR_SAMPLING
    from prefjudge.testbed.protocols import FRAMINGS
    from prefjudge.view import DEFAULT_MAX_CHARS

    assert defaults.DEFAULT_RESAMPLES == DEFAULT_RESAMPLES == METRICS_RESAMPLES
    assert defaults.SELECTOR_SAMPLING == SELECTOR_SAMPLING
    assert defaults.FRAMINGS == tuple(FRAMINGS)
    assert defaults.SERVE_DEFAULTS == {
        "host": serve.DEFAULT_HOST, "port": serve.DEFAULT_PORT,
        "max_model_len": serve.DEFAULT_MAX_MODEL_LEN, "embedded_name": serve.EMBEDDED_SERVED_NAME,
    }
    assert defaults.PERSONA_SAMPLING == {"profile": persona.PROFILE_SAMPLING,
                                         "rewrite": persona.REWRITE_SAMPLING,
                                         "compare": persona.COMPARE_SAMPLING}
    assert defaults.HARNESS_HELP == HARNESS_HELP
    assert defaults.VIEW_MAX_CHARS == DEFAULT_MAX_CHARS
    assert defaults.INSTRUCTION_CATEGORIES == tuple(CATEGORIES)


def test_ranking_names_and_defaults_are_the_rankings() -> None:
    from prefjudge.cli.rank_cmd import RANK_HELP
    from prefjudge.ranking import bradley_terry as bt
    from prefjudge.ranking import style as sc
    from prefjudge.ranking.reports import ANCHOR_FORMULA, ELO_FORMULA

    assert defaults.TIE_POLICIES == tuple(bt.TIE_POLICIES)
    assert defaults.RATING_BASE == bt.DEFAULT_BASE
    assert defaults.STYLE_CONTROLS == tuple(sc.CONTROLS)
    assert defaults.STYLE_PENALTIES == tuple(sc.PENALTIES)
    assert defaults.STYLE_PENALTY == sc.DEFAULT_PENALTY
    assert (defaults.ANCHOR_FORMULA, defaults.ELO_FORMULA) == (ANCHOR_FORMULA, ELO_FORMULA)
    assert ELO_FORMULA in RANK_HELP and ANCHOR_FORMULA in RANK_HELP
