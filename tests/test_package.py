"""The shape of the package: a one-way chain of modules in the course's order, imports at the top of each file."""

import ast
import re
from pathlib import Path

import scratch

PACKAGE = Path(scratch.__file__).parent
# The course's order is the table of contents in scratch/__init__.py: a module may import only modules above it.
ORDER = re.findall(r"^    ([a-z_]+) {2,}", scratch.__doc__, flags=re.M)
# numerics loads torch inside its functions on purpose: it must pin the numeric path before torch is imported.
LAZY_BY_DESIGN = {"numerics"}


def modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text()) for path in PACKAGE.glob("*.py") if path.stem != "__init__"}


def scratch_imports(tree: ast.Module) -> set[str]:
    """The scratch modules a module imports, wherever the import statement stands."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "scratch":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scratch."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("scratch.")}
    return found - {"seed_everything"}  # scratch/__init__.py's own names


def test_the_table_of_contents_lists_every_module_once():
    assert len(ORDER) == len(set(ORDER))
    assert sorted(ORDER) == sorted(modules())


def upward_imports(graph: dict[str, set[str]], order: list[str]) -> list[str]:
    """Each import in graph ({module: the modules it imports}) of a module that is not above the importer in order."""
    return [
        f"{name} imports {imported}, which does not come before it in scratch/__init__.py's table"
        for name, imported_modules in sorted(graph.items())
        for imported in sorted(imported_modules)
        if order.index(imported) >= order.index(name)
    ]


def test_no_module_imports_one_below_it_in_the_course():
    upward = upward_imports({name: scratch_imports(tree) for name, tree in modules().items()}, ORDER)
    assert not upward, "\n".join(upward)


def test_imports_stand_at_the_top_unless_a_comment_says_why():
    """An import inside a function hides an arrow of the graph; it is allowed only where an optional dependency (or
    the numeric pin) needs it, with a comment on its line that starts `imported here`."""
    hidden = []
    for path in PACKAGE.glob("*.py"):
        if path.stem in LAZY_BY_DESIGN:
            continue
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if (
                        isinstance(inner, ast.Import | ast.ImportFrom)
                        and "# imported here" not in lines[inner.lineno - 1]
                    ):
                        hidden.append(f"{path.name}:{inner.lineno}: {lines[inner.lineno - 1].strip()}")
    assert not hidden, "imports inside functions without a reason:\n" + "\n".join(hidden)


def test_the_chain_test_catches_an_upward_import_a_cycle_and_a_self_import():
    order = ["tokenization", "attention", "blocks", "models"]
    one_way = {"tokenization": set(), "attention": set(), "blocks": {"attention"}, "models": {"blocks", "attention"}}
    assert upward_imports(one_way, order) == []
    # attention imports models, which is below it: an upward import, and with models -> attention a cycle
    upward = {**one_way, "attention": {"models"}}
    assert upward_imports(upward, order) == [
        "attention imports models, which does not come before it in scratch/__init__.py's table"
    ]
    assert upward_imports({**one_way, "blocks": {"blocks"}}, order) == [
        "blocks imports blocks, which does not come before it in scratch/__init__.py's table"
    ]


def test_the_chain_test_sees_imports_inside_functions():
    tree = ast.parse("from scratch.sampling import generate\n\ndef f():\n    from scratch import models\n")
    assert scratch_imports(tree) == {"sampling", "models"}
