"""A declared output from the manifest and the command line: the ``output:``
section's located problems (``seamkit validate``), the agent it gives, and
``seamkit run`` printing the value, ``--json``, ``--output-schema``, a run
that keeps answering wrong, and ``--trace`` showing the retries. The model is
the scripted one, whose ``{output: ...}`` turns play answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from seamkit import Agent, Output
from seamkit._cli._group import cli

NAME_SCHEMA = "{type: object, properties: {name: {type: string}}, required: [name]}"


def app(tmp_path: Path, output: str = "", script: str = "- output: {name: ann}\n") -> Path:
    (tmp_path / "s.yaml").write_text(script)
    path = tmp_path / "app.yaml"
    path.write_text("name: demo\nmodel: scripted:s.yaml\n" + output)
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def validate(tmp_path: Path, output: str) -> list[str]:
    """``seamkit validate``'s lines for a manifest with ``output``; exit 1."""
    result = invoke("validate", str(app(tmp_path, output)))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.stderr.splitlines()


# --- the manifest's output: section ----------------------------------------------


def test_a_schema_that_is_not_a_json_schema_is_located(tmp_path: Path) -> None:
    lines = validate(tmp_path, "output:\n  schema: {type: 12}\n")
    assert lines[0].endswith(
        "app.yaml:4:11: output.schema: the output schema is not a valid JSON Schema: "
        "12 is not valid under any of the given schemas (at type)"
    )
    assert lines[1].startswith("  hint: schema: {type: object")


def test_schema_and_ref_together_or_neither_are_refused(tmp_path: Path) -> None:
    both = validate(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n  ref: 'models:Person'\n")
    assert both[0].endswith("output.ref: output takes either 'schema' or 'ref', not both")
    assert "ref: 'module:Name'" in both[1]
    neither = validate(tmp_path, "output:\n  mode: tool\n")
    assert neither[0].endswith("output.schema: output needs 'schema' or 'ref'")


def test_a_bad_mode_and_negative_retries_are_each_located(tmp_path: Path) -> None:
    lines = validate(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n  mode: fancy\n  retries: -1\n")
    assert any(
        line.endswith(
            "app.yaml:5:9: output.mode: Input should be 'auto', 'tool', 'native' or 'prompted', "
            'got "fancy"'
        )
        for line in lines
    )
    assert any(
        line.endswith(
            "app.yaml:6:12: output.retries: Input should be greater than or equal to 0, got -1"
        )
        for line in lines
    )
    assert lines[-1].endswith("app.yaml: 2 errors")


def test_an_unknown_field_gets_a_did_you_mean(tmp_path: Path) -> None:
    lines = validate(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n  retrys: 3\n")
    assert lines[0].endswith("output.retrys: unknown field 'retrys'")
    assert lines[1] == (
        "  hint: did you mean 'retries'? allowed fields: description, mode, name, ref, "
        "retries, schema, strict"
    )


def test_strict_native_names_the_construct_a_strict_schema_cannot_hold(tmp_path: Path) -> None:
    schema = (
        "{type: object, required: [items], properties: {items: {type: array, items: "
        "{type: object, required: [y], properties: {x: {type: string}, y: {type: string}}}}}}"
    )
    lines = validate(tmp_path, f"output:\n  schema: {schema}\n  mode: native\n  strict: true\n")
    assert (
        "output.schema: the output schema cannot be strict: items[].x: an optional field"
        in (lines[0])
    )
    assert "set strict: false" in lines[1]
    # without strict: true the same schema is fine (sent non-strict)
    ok = invoke("validate", str(app(tmp_path, f"output:\n  schema: {schema}\n  mode: native\n")))
    assert ok.exit_code == 0, ok.output


def test_a_ref_that_does_not_import_is_located(tmp_path: Path) -> None:
    lines = validate(tmp_path, "output:\n  ref: 'nowhere_here:Person'\n")
    assert lines[0].endswith(
        f"app.yaml:4:8: output.ref: output ref 'nowhere_here:Person': no module named "
        f"'nowhere_here' (also looked in {tmp_path})"
    )
    (tmp_path / "people_a.py").write_text("class Other:\n    pass\n")
    missing = validate(tmp_path, "output:\n  ref: 'people_a:Person'\n")
    assert missing[0].endswith(
        "output.ref: output ref 'people_a:Person': module 'people_a' has no 'Person'"
    )


def test_an_output_tool_named_as_an_app_tool_is_located(tmp_path: Path) -> None:
    (tmp_path / "tools_c.py").write_text("def lookup(q: str) -> str:\n    return q\n")
    lines = validate(
        tmp_path,
        "tools:\n  - {kind: function, ref: 'tools_c:lookup'}\n"
        f"output:\n  schema: {NAME_SCHEMA}\n  mode: tool\n  name: lookup\n",
    )
    assert "output.name: the output tool 'lookup' has the name of a tool" in lines[0]


def test_a_ref_next_to_the_manifest_is_the_agents_output(tmp_path: Path) -> None:
    (tmp_path / "people_b.py").write_text(
        "from pydantic import BaseModel\n\nclass Person(BaseModel):\n    name: str\n"
    )
    path = app(tmp_path, "output:\n  ref: 'people_b:Person'\n  mode: tool\n  retries: 1\n")
    assert invoke("validate", str(path)).exit_code == 0

    async def go() -> tuple[Output[object] | None, object]:
        async with await Agent.load(path) as agent:
            return agent.output, (await agent.run("hi")).output

    declared, value = asyncio.run(go())
    assert declared is not None
    assert (declared.type_name, declared.mode, declared.retries) == ("Person", "tool", 1)
    assert type(value).__name__ == "Person" and value.name == "ann"  # type: ignore[attr-defined]


# --- seamkit run -------------------------------------------------------------------


def test_run_prints_the_value_as_indented_json(tmp_path: Path) -> None:
    script = "- output: {name: ann}\n  chunks: 3\n"
    path = app(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n", script)
    result = invoke("run", str(path), "hi")
    assert result.exit_code == 0, result.output
    assert result.stdout == '{\n  "name": "ann"\n}\n'


def test_run_json_puts_the_value_under_output_and_the_text_under_text(tmp_path: Path) -> None:
    path = app(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n")
    result = invoke("run", str(path), "hi", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["output"] == {"name": "ann"}
    assert json.loads(data["text"]) == {"name": "ann"}  # native mode: the answer is the text
    assert data["outcome"] == {"kind": "completed"}


def test_a_plain_text_run_prints_as_before(tmp_path: Path) -> None:
    result = invoke("run", str(app(tmp_path, "", "- text: hello there\n")), "hi")
    assert result.stdout == "hello there\n"


def test_answers_that_keep_failing_end_the_run_failed_with_exit_1(tmp_path: Path) -> None:
    wrong = "- output: {name: 1}\n"
    path = app(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n  retries: 1\n", wrong * 2)
    result = invoke("run", str(path), "hi")
    assert result.exit_code == 1
    assert result.stdout == ""  # no value, and no placeholder
    assert "[failed: OutputInvalid: name: 1 is not of type 'string'" in result.stderr
    as_json = json.loads(invoke("run", str(path), "hi", "--json").stdout)
    assert as_json["outcome"]["kind"] == "failed"
    assert as_json["outcome"]["error"].startswith("OutputInvalid:")
    assert as_json["output"] is None


def test_trace_shows_a_line_per_answer_not_accepted(tmp_path: Path) -> None:
    script = "- output: {name: 1}\n- output: {}\n- output: {name: ann}\n"
    path = app(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n  mode: tool\n", script)
    result = invoke("run", str(path), "hi", "--trace")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"name": "ann"}
    retries = [line for line in result.stderr.splitlines() if "answer not accepted" in line]
    # one note as it happens and one timeline line, per failed answer
    assert len(retries) == 4
    assert any("answer not accepted: name: 1 is not of type" in line for line in retries)
    assert any("answer not accepted: (answer): 'name' is a required" in line for line in retries)
    # --json runs without streaming: the timeline still has them
    quiet = invoke("run", str(path), "hi", "--trace", "--json")
    assert json.loads(quiet.stdout)["output"] == {"name": "ann"}
    assert sum("answer not accepted" in line for line in quiet.stderr.splitlines()) == 2


def test_output_schema_file_overrides_the_manifest(tmp_path: Path) -> None:
    schema = tmp_path / "count.json"
    schema.write_text(json.dumps({"type": "integer"}))
    path = app(tmp_path, f"output:\n  schema: {NAME_SCHEMA}\n", "- output: {response: 3}\n")
    result = invoke("run", str(path), "hi", "--output-schema", str(schema))
    assert result.exit_code == 0, result.output
    assert result.stdout == "3\n"


def test_output_schema_file_may_be_an_output_mapping(tmp_path: Path) -> None:
    (tmp_path / "people_d.py").write_text(
        "from typing_extensions import TypedDict\n\nclass Person(TypedDict):\n    name: str\n"
    )
    spec = tmp_path / "out.yaml"
    spec.write_text("ref: 'people_d:Person'\nmode: tool\nretries: 0\n")
    result = invoke("run", str(app(tmp_path)), "hi", "--output-schema", str(spec), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["output"] == {"name": "ann"}
    assert data["transcript"][1]["tool_calls"][0]["function"]["name"] == "final_result"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("type: [object\n", "out.yaml: "),
        ("- 1\n", "the file must hold a mapping"),
        ("type: 12\n", "the output schema is not a valid JSON Schema"),
        (f"schema: {NAME_SCHEMA}\nretrys: 3\n", "retrys: Extra inputs are not permitted"),
        ("ref: 'nowhere_here:X'\n", "output ref 'nowhere_here:X': no module named"),
    ],
)
def test_a_bad_output_schema_file_is_two_lines_and_exit_2(
    tmp_path: Path, content: str, message: str
) -> None:
    spec = tmp_path / "out.yaml"
    spec.write_text(content)
    result = invoke("run", str(app(tmp_path)), "hi", "--output-schema", str(spec))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"error: --output-schema {spec}: ") and message in lines[0]
    assert lines[1].startswith("hint: ")
    assert "Traceback" not in result.output
