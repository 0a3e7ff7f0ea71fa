"""Copies in the teaching package stay copies, as transformers' utils/check_copies.py keeps its model files.

A module written out in full (scratch.l08_llama, one file per model) repeats some pieces of earlier modules. Each
repeated def or class sits under a line `# Copied from scratch.module.Name` (optionally `with old->new, ...`): its
text, docstring and comments included, must be the original's with those replacements.
"""

import ast
import pathlib
import re
import textwrap

import pytest

LIB = pathlib.Path(__file__).resolve().parents[1] / "lib"
MARKER = re.compile(r"^\s*# Copied from (scratch(?:\.\w+)+)(?: with (.+))?$")


def _definitions(source: str) -> dict[int, ast.AST]:
    """First line (decorators included) -> the def or class that starts there."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[min([node.lineno] + [d.lineno for d in node.decorator_list])] = node
    return found


def _text(source: str, node: ast.AST) -> str:
    """The whole lines of a def or class, decorators and a comment on its last line included, dedented."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return textwrap.dedent("\n".join(source.splitlines()[first - 1 : node.end_lineno]))


def original(dotted: str) -> str:
    """The text of scratch.module.Qualified.name, dedented."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 1, -1):
        path = LIB.joinpath(*parts[:cut]).with_suffix(".py")
        if path.is_file():
            break
    else:
        raise LookupError(f"no module for {dotted}")
    source = path.read_text(encoding="utf-8")
    body = ast.parse(source).body
    node = None
    for name in parts[cut:]:
        node = next((n for n in body if getattr(n, "name", None) == name), None)
        if node is None:
            raise LookupError(f"{dotted}: no {name} in {path.name}")
        body = getattr(node, "body", [])
    return _text(source, node)


def copy_errors(source: str, where: str) -> tuple[int, list[str]]:
    """(number of markers, what is wrong with them) for one module's source."""
    definitions, errors, lines = _definitions(source), [], source.splitlines()
    markers = [(i + 1, MARKER.match(line)) for i, line in enumerate(lines) if MARKER.match(line)]
    for lineno, match in markers:
        target, replacements = match.group(1), match.group(2)
        node = definitions.get(lineno + 1)
        if node is None:
            errors.append(f"{where}:{lineno}: '# Copied from' must sit right above a def or class")
            continue
        try:
            expected = original(target)
        except LookupError as error:
            errors.append(f"{where}:{lineno}: {error}")
            continue
        for pair in (replacements or "").split(","):
            if pair.strip():
                old, new = (part.strip() for part in pair.split("->"))
                expected = expected.replace(old, new)
        if _text(source, node) != expected:
            errors.append(f"{where}:{lineno}: {node.name} is no longer a copy of {target}")
    return len(markers), errors


def test_every_copy_matches_its_original():
    total = 0
    for path in sorted((LIB / "scratch").glob("*.py")):
        count, errors = copy_errors(path.read_text(encoding="utf-8"), path.name)
        assert not errors, "\n".join(errors)
        total += count
    assert total >= 6  # l08_llama's copies at least: the check is not vacuous


LLAMA = (LIB / "scratch" / "l08_llama.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "edit, message",
    [
        (("x1, x2 = x.chunk(2, dim=-1)", "x1, x2 = x.chunk(2, dim=1)"), "rotate_half is no longer a copy"),
        (("return x * cos + rotate_half(x) * sin", "return x * cos + rotate_half(x) * sin  # !"), "apply_rotary is no"),
        (('"down.weight"))', '"w_o.weight"))'), "_init_weights is no longer a copy"),
        (("l06_gpt.GPT._init_weights", "l06_gpt.GPT._init_weight"), "no _init_weight in l06_gpt.py"),
        (("l02_positions.rotate_half", "l02_missing.rotate_half"), "no module for"),
        (
            (
                "# Copied from scratch.l02_positions.apply_rotary\n",
                "# Copied from scratch.l02_positions.apply_rotary\n\n",
            ),
            "must sit right above",
        ),
    ],
)
def test_a_drifted_copy_is_caught(edit, message):
    old, new = edit
    assert old in LLAMA
    count, errors = copy_errors(LLAMA.replace(old, new, 1), "l08_llama.py")
    assert count >= 6 and any(message in error for error in errors), errors
