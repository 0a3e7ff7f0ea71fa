"""Copies stay copies, as transformers' utils/check_copies.py keeps its model files.

- A module written out in full (scratch.l08_llama, one file per model) repeats some pieces of earlier modules. Each
  repeated def or class sits under a line `# Copied from scratch.module.Name` (optionally `with old->new, ...`): its
  text, docstring and comments included, must be the original's with those replacements.
- A class a lecture derives inline and then hands over to the package is the package's class, line for line: the
  same code once docstrings, comments and type hints are set aside, under the notebook's names (DERIVED).
"""

import ast
import copy
import json
import pathlib
import re
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"
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


# ---------------------------------------------------------------- classes the lectures derive inline

# notebook -> {the class it derives: the package's class}
DERIVED = {
    "05_transformer_block": {
        "PositionwiseFFN": "scratch.l05_transformer_block.FeedForward",
        "InlineEncoderBlock": "scratch.l05_transformer_block.EncoderBlock",
        "InlineDecoderBlock": "scratch.l05_transformer_block.DecoderBlock",
    },
}


def _code(node: ast.AST, renames: dict[str, str]) -> str:
    """A class's code: its AST without docstrings and type hints, the notebook's names turned into the package's."""
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, ast.FunctionDef | ast.ClassDef):
            first = n.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                n.body = n.body[1:] or [ast.Pass()]
            n.name = renames.get(n.name, n.name)
        if isinstance(n, ast.FunctionDef):
            n.returns = None
        if isinstance(n, ast.arg):
            n.annotation = None
        if isinstance(n, ast.Name):
            n.id = renames.get(n.id, n.id)
    return ast.dump(node)


def notebook_classes(source: str) -> dict[str, ast.ClassDef]:
    """The classes defined in a notebook's code cells (its .ipynb text), by name."""
    found = {}
    for cell in json.loads(source)["cells"]:
        if cell["cell_type"] == "code":
            code = "\n".join(line for line in "".join(cell["source"]).splitlines() if not line.startswith(("%", "!")))
            found.update({n.name: n for n in ast.parse(code).body if isinstance(n, ast.ClassDef)})
    return found


def derived_errors(name: str, source: str) -> list[str]:
    classes, errors = notebook_classes(source), []
    renames = {inline: dotted.rsplit(".", 1)[1] for inline, dotted in DERIVED[name].items()}
    for inline, dotted in DERIVED[name].items():
        module, qualname = dotted.rsplit(".", 1)
        library = next(
            n
            for n in ast.parse(LIB.joinpath(*module.split(".")).with_suffix(".py").read_text(encoding="utf-8")).body
            if getattr(n, "name", None) == qualname
        )
        if inline not in classes:
            errors.append(f"{name}: no class {inline}")
        elif _code(classes[inline], renames) != _code(library, renames):
            errors.append(f"{name}: {inline} is not the code of {dotted}")
    return errors


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_a_lecture_derives_the_packages_classes(name):
    errors = derived_errors(name, (ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize(
    "edit, message",
    [
        (("x = x + self.dropout1(attn)", "x = x + self.dropout2(attn)"), "InlineEncoderBlock is not the code"),
        (("hidden = self.dropout(self.activation(", "hidden = (self.activation("), "PositionwiseFFN is not the code"),
        (("class InlineDecoderBlock(", "class DecoderBlockInline("), "no class InlineDecoderBlock"),
    ],
)
def test_a_lecture_that_drifts_from_the_package_is_caught(edit, message):
    source = (ROOT / "notebooks" / "05_transformer_block.ipynb").read_text(encoding="utf-8")
    old, new = (json.dumps(part)[1:-1] for part in edit)
    assert old in source
    errors = derived_errors("05_transformer_block", source.replace(old, new, 1))
    assert any(message in error for error in errors), errors
