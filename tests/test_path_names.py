"""Names that become paths: one rule (``prefjudge.paths.check_path_name``), used everywhere.

A name from the experiment file or the command line that prefjudge joins into a path (the
experiment's name, a model's name, a persona's name, a built-in persona looked up by
name, ``persona profile --name``) is checked by that one rule before anything is made, so
none can leave its folder: ``prefjudge run`` with ``[personas] names = ["../../x"]``
stops with the file, line and field, and creates nothing, inside or outside its results.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pj_cli import flat, run_cli
from pj_experiment import fake_experiment
from pydantic import ValidationError

from prefjudge.cli import main
from prefjudge.experiment.config import load_experiment
from prefjudge.io import InputError
from prefjudge.paths import PATH_NAME_MAX, check_path_name
from prefjudge.persona.profile import PersonaError, load_persona, persona_yaml
from prefjudge.records import Persona

GOOD = ["model-a", "Qwen2.5-Coder-7B", "smol_t1", "a", "7", "v1.2", "a..b",
        "x" * PATH_NAME_MAX]

BAD = {
    "empty": ("", "empty"),
    "dot": (".", "starts with '.'"),
    "dot-dot": ("..", "starts with '.'"),
    "parent": ("../x", "'/' (U+002F) is not allowed"),
    "deep parent": ("../../../../escaped", "'/' (U+002F) is not allowed"),
    "folder": ("a/b", "'/' (U+002F) is not allowed"),
    "backslash": ("a\\b", "'\\\\' (U+005C) is not allowed"),
    "windows parent": ("..\\x", "'\\\\' (U+005C) is not allowed"),
    "absolute": ("/etc/passwd", "'/' (U+002F) is not allowed"),
    "drive": ("C:x", "':' (U+003A) is not allowed"),
    "NUL": ("a\x00b", "'\\x00' (U+0000) is not allowed"),
    "newline at the end": ("a\n", "'\\n' (U+000A) is not allowed"),
    "space": ("my model", "' ' (U+0020) is not allowed"),
    "too long": ("x" * (PATH_NAME_MAX + 1), f"too long ({PATH_NAME_MAX + 1} characters)"),
    "option-like": ("-rf", "starts with '-'"),
    "hidden": (".hidden", "starts with '.'"),
    "underscore first": ("_x", "starts with '_'"),
    "Cyrillic a": ("model-\u0430", "(U+0430) is not allowed"),
    "fullwidth slash": ("a\uff0fb", "(U+FF0F) is not allowed"),
    "one-dot leader": ("\u2024\u2024", "(U+2024) is not allowed"),
    "NFD accent": ("cafe\u0301", "(U+0301) is not allowed"),
}


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("name", GOOD)
def test_plain_names_pass_unchanged(name: str) -> None:
    assert check_path_name(name) == name


@pytest.mark.parametrize(("name", "problem"), BAD.values(), ids=list(BAD))
def test_names_that_could_leave_their_folder_are_refused_with_the_reason(
        name: str, problem: str) -> None:
    with pytest.raises(ValueError, match="starting with a letter or digit") as excinfo:
        check_path_name(name)
    assert problem in str(excinfo.value)


# --------------------------------------------------------------------------- experiment files

EXPERIMENT = """[experiment]
name = "{experiment}"

[benchmark]
source = "t.jsonl"

[[models]]
name = "a"

[[models]]
name = "{model}"

[personas]
names = ["beginner", "{persona}"]
"""
"""Line 2: the experiment's name; line 11: the second model's; line 14: the personas'."""


def toml_string(name: str) -> str:
    """``name`` as the inside of a TOML basic string."""
    return (name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\x00", "\\u0000"))


@pytest.mark.parametrize(("field", "line"), [("experiment.name", 2), ("models.1.name", 11),
                                             ("personas.names.1", 14)])
@pytest.mark.parametrize(("name", "problem"), BAD.values(), ids=list(BAD))
def test_every_name_of_an_experiment_file_goes_through_the_rule(
        tmp_path: Path, field: str, line: int, name: str, problem: str) -> None:
    names = {"experiment": "x", "model": "b", "persona": "advanced_engineer"}
    names[field.split(".")[0].removesuffix("s")] = toml_string(name)
    path = tmp_path / "bad.toml"
    path.write_text(EXPERIMENT.format(**names), encoding="utf-8")
    with pytest.raises(InputError) as excinfo:
        load_experiment(path)
    [issue] = excinfo.value.issues
    assert (issue.path, issue.line, issue.field) == (str(path), line, field)
    assert problem in issue.message


def test_the_same_file_with_plain_names_loads(tmp_path: Path) -> None:
    path = tmp_path / "good.toml"
    path.write_text(EXPERIMENT.format(experiment="x", model="b", persona="advanced_engineer"))
    experiment, _ = load_experiment(path)
    assert experiment.personas is not None
    assert experiment.personas.names == ["beginner", "advanced_engineer"]


def test_run_with_a_persona_name_outside_the_results_stops_before_making_anything(
        fake_server, tmp_path: Path) -> None:
    """``prefjudge run`` itself: the error names file, line and field; nothing is created.

    Without the check the run went on (the fake server answers every request) and the
    persona stages wrote ``tasks.jsonl``, generations and comparisons into
    ``results/fake/personas/../../../../escaped``: ``tmp_path/escaped``.
    """
    from pj_schema_reply import schema_reply

    fake_server.reply = schema_reply
    path = fake_experiment(tmp_path / "e", fake_server.url, judge=False)
    text = path.read_text()
    path.write_text(text + '\n[personas]\nnames = ["../../../../escaped"]\nbackend = "openai"\n'
                    f'model = "fake-judge"\nbase_url = "{fake_server.url}"\n')
    line = text.count("\n") + 3
    done = run_cli("run", str(path), ok=False, timeout=900)
    output = flat(done.stdout + done.stderr)
    assert not (tmp_path / "escaped").exists(), output[-3000:]
    assert not (tmp_path / "e" / "results").exists()  # nothing made inside either
    assert fake_server.calls == 0
    assert done.returncode == 1, output[-3000:]
    assert f"{path}:{line}: field 'personas.names.0':" in output
    assert "'/' (U+002F) is not allowed in '../../../../escaped'" in output
    assert "Traceback" not in output


def test_run_with_a_model_name_too_long_for_a_file_stops_before_making_anything(
        tmp_path: Path) -> None:
    """A name no file system takes is refused at load, not when its first file is made."""
    path = fake_experiment(tmp_path / "e", "http://127.0.0.1:9/v1")
    long_name = "m" * 250  # generations/<name>-<hash>.jsonl: 265 bytes
    path.write_text(path.read_text().replace('name = "model-b"', f'name = "{long_name}"'))
    done = run_cli("run", str(path), ok=False, timeout=300)
    output = flat(done.stdout + done.stderr)
    assert not (tmp_path / "e" / "results").exists(), output[-3000:]
    assert done.returncode == 1, output[-3000:]
    assert "field 'models.1.name': Value error, too long (250 characters)" in output


# --------------------------------------------------------------------------- personas by name


@pytest.mark.parametrize("name", ["../personas/beginner", "../vericode", "/no/such/persona",
                                  "..", "beginner\n", "personas/../beginner"])
def test_a_built_in_persona_is_looked_up_by_plain_name_only(name: str) -> None:
    """``rubrics/personas/<name>.yaml`` is read only for a name the rule accepts."""
    with pytest.raises(PersonaError, match=r"unknown persona .*: use one of .*beginner"):
        load_persona(name)
    assert load_persona("beginner").name == "beginner"


def test_a_persona_file_is_still_read_by_its_path(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "me.yaml"
    path.parent.mkdir()
    path.write_text(persona_yaml(load_persona("beginner")).replace("name: beginner",
                                                                   "name: me"))
    assert load_persona(path).name == "me"


@pytest.mark.parametrize("name", ["..", "../x", "-x", "x" * (PATH_NAME_MAX + 1)])
def test_a_persona_record_name_goes_through_the_rule(name: str) -> None:
    data = yaml.safe_load(persona_yaml(load_persona("beginner")))
    with pytest.raises(ValidationError, match="a name that becomes a file name"):
        Persona.model_validate({**data, "name": name})


def test_persona_profile_refuses_a_bad_name_before_asking_the_model(fake_server) -> None:
    result = CliRunner().invoke(main, [
        "persona", "profile", "A student.", "--name", "../../escaped", "-o", "-",
        "--backend", "openai", "--base-url", fake_server.url, "--model", "fake",
    ])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--name'" in flat(result.output)
    assert "'/' (U+002F) is not allowed" in flat(result.output)
    assert fake_server.calls == 0
