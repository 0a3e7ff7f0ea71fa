"""The shape of the two packages: `scratch` (what the lectures teach, file names in the course's order) and `course`
(the machinery). `ls lib/scratch` is the table of contents, so the order is read from the file names: lNN_ names the
lecture, and a module imports only the modules listed above it. scratch never imports course; course may import
anything. Imports stand at the top of each file unless a comment says why."""

import ast
import json
import re
import sys
from pathlib import Path

import course
import scratch

TEACHING = Path(scratch.__file__).parent
SUPPORT = Path(course.__file__).parent
NOTEBOOKS = TEACHING.parents[1] / "notebooks"
EXERCISES = TEACHING.parents[1] / "exercises"
LECTURE_MODULE = re.compile(r"l(\d\d)_[a-z_]+")
# Modules of no lecture: the argument checks every lecture's code shares at its doors
DOOR_MODULES = {"validate"}
# What a teaching module may import besides earlier teaching modules and the standard library
TEACHING_THIRD_PARTY = {"torch", "numpy", "regex", "tqdm", "matplotlib"}
# numerics loads torch inside its functions on purpose: it must pin the numeric path before torch is imported.
LAZY_BY_DESIGN = {"numerics"}


def teaching_modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text()) for path in TEACHING.glob("*.py") if path.stem != "__init__"}


def course_order(names) -> list[str]:
    """The teaching modules in the course's order: the door modules first, then the lecture modules as `ls` sorts."""
    return sorted(names, key=lambda name: (name not in DOOR_MODULES, name))


def imported_modules(tree: ast.Module, package: str) -> set[str]:
    """The modules of package (`scratch` or `course`) that a module imports, wherever the import stands."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == package:
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package + "."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith(package + ".")}
    return found - {"seed_everything"}  # scratch/__init__.py's own name


def top_level_imports(tree: ast.Module) -> set[str]:
    """The top-level package of every import (absolute ones; relative imports are not used)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
    return found - {"__future__"}


def upward_imports(graph: dict[str, set[str]], order: list[str]) -> list[str]:
    """Each import in graph ({module: the modules it imports}) of a module that is not above the importer in order."""
    return [
        f"{name} imports {imported}, which does not come before it in the course"
        for name, imported_modules in sorted(graph.items())
        for imported in sorted(imported_modules)
        if imported not in order or order.index(imported) >= order.index(name)
    ]


def test_every_teaching_module_is_named_after_its_lecture():
    lectures = {int(path.name[:2]) for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    for name in set(teaching_modules()) - DOOR_MODULES:
        match = LECTURE_MODULE.fullmatch(name)
        assert match, f"scratch/{name}.py: a teaching module is named lNN_idea, NN its lecture"
        assert int(match[1]) in lectures, f"scratch/{name}.py: there is no lecture {match[1]}"


def test_no_teaching_module_imports_one_later_in_the_course():
    modules = teaching_modules()
    graph = {name: imported_modules(tree, "scratch") for name, tree in modules.items()}
    upward = upward_imports(graph, course_order(modules))
    assert not upward, "\n".join(upward)


def test_the_teaching_package_never_imports_the_machinery():
    reaching = [name for name, tree in teaching_modules().items() if imported_modules(tree, "course")]
    assert not reaching, f"scratch modules that import course: {reaching}"
    assert "course" not in top_level_imports(ast.parse((TEACHING / "__init__.py").read_text()))


def test_teaching_modules_import_torch_and_the_standard_library_only():
    allowed = set(sys.stdlib_module_names) | TEACHING_THIRD_PARTY | {"scratch"}
    for name, tree in teaching_modules().items():
        assert top_level_imports(tree) <= allowed, f"scratch/{name}.py imports {top_level_imports(tree) - allowed}"


def notebook_imports(path: Path) -> set[str]:
    """The scratch modules a notebook's code cells import (magics and shell lines left out)."""
    found = set()
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).splitlines()
            found |= imported_modules(ast.parse("\n".join(line for line in lines if line[:1] not in "%!")), "scratch")
    return found


def later_modules(lecture: int, modules: set[str]) -> list[str]:
    """The lecture modules among `modules` that a later lecture derives."""
    return sorted(m for m in modules if (match := LECTURE_MODULE.fullmatch(m)) and int(match[1]) > lecture)


def test_no_notebook_imports_code_of_a_later_lecture():
    """A student meets a module in its lecture or after it, never before (the optional 02b and 05b count as 2, 5)."""
    for path in [*NOTEBOOKS.glob("[0-9][0-9]*.ipynb"), *EXERCISES.glob("[0-9][0-9]*.ipynb")]:
        early = later_modules(int(path.name[:2]), notebook_imports(path))
        assert not early, f"{path.parent.name}/{path.name} imports {early}, which later lectures derive"


def test_the_later_lecture_test_sees_a_forward_import():
    assert later_modules(6, {"l06_transformer", "l10_decoding", "validate", "l03_attention"}) == ["l10_decoding"]


def test_the_order_test_fails_on_an_upward_import_a_self_import_and_an_unknown_module():
    """A synthetic package: the same test on a graph with one bad arrow each time."""
    order = course_order(["l03_attention", "validate", "l05_transformer_block", "l01_tokenization", "l06_gpt"])
    assert order == ["validate", "l01_tokenization", "l03_attention", "l05_transformer_block", "l06_gpt"]
    one_way = {
        "validate": set(),
        "l01_tokenization": {"validate"},
        "l03_attention": {"validate"},
        "l05_transformer_block": {"l03_attention"},
        "l06_gpt": {"l05_transformer_block", "l03_attention"},
    }
    assert upward_imports(one_way, order) == []
    upward = {**one_way, "l03_attention": {"l06_gpt"}}  # with l06_gpt -> l03_attention also a cycle
    assert upward_imports(upward, order) == [
        "l03_attention imports l06_gpt, which does not come before it in the course"
    ]
    assert upward_imports({**one_way, "validate": {"l01_tokenization"}}, order) == [
        "validate imports l01_tokenization, which does not come before it in the course"
    ]
    assert upward_imports({**one_way, "l06_gpt": {"l06_gpt"}}, order) == [
        "l06_gpt imports l06_gpt, which does not come before it in the course"
    ]
    assert upward_imports({**one_way, "l06_gpt": {"models"}}, order) == [
        "l06_gpt imports models, which does not come before it in the course"
    ]


def test_the_import_readers_see_imports_inside_functions_and_both_packages():
    tree = ast.parse(
        "from scratch.l10_decoding import generate\nimport course.claims\n\n"
        "def f():\n    from scratch import l06_gpt\n    from course import assets\n"
    )
    assert imported_modules(tree, "scratch") == {"l10_decoding", "l06_gpt"}
    assert imported_modules(tree, "course") == {"claims", "assets"}
    assert top_level_imports(tree) == {"scratch", "course"}


def test_imports_stand_at_the_top_unless_a_comment_says_why():
    """An import inside a function hides an arrow of the graph; it is allowed only where an optional dependency (or
    the numeric pin) needs it, with a comment on its line that starts `imported here`."""
    hidden = []
    for path in [*TEACHING.glob("*.py"), *SUPPORT.glob("*.py")]:
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
