"""The tamper report of `make autograde` (tools/grading.py): what a submission's own cells do to the checking machinery.

A check runs in the kernel the student controls, so a solution cell can switch it off (`course.exercises.forbid =
lambda *a, **k: ...`, `torch.allclose = ...`, a returned float whose `==` always agrees) or reach around a method
rule by another path to the same computation (`torch._C`, `torch.ops`, another library's implementation). No
notebook can prevent that, but a grader can see it: `findings(source)` reads one cell with Python's `ast` (so
formatting and aliases do not hide it) and lists each such line, under one of three rules:

- machinery: attributes set or deleted on an imported module or on a name the checks import (`torch.allclose = ...`,
  `import torch as t; t.equal = ...`, `from course import exercises as e; e.forbid = ...`, `del math.isclose`),
  `setattr` / `delattr`, `sys.modules`, `importlib.reload`, `__builtins__`, writes through `globals()`, a name the
  checks use rebound at the top level (`def forbid(...)`, `torch = ...`, `abs = ...`), a special attribute set
  (`x.__class__ = ...`) or a function's insides read (`__globals__`, `__code__`), frame access (`sys._getframe`,
  `inspect.currentframe`, `f_back`), `gc`, `unittest.mock`, code the report cannot read (`exec`, `eval`, magics);
- operators: a class that defines a comparison or arithmetic operator the checks use (`__eq__`, `__ne__`, `__sub__`,
  `__abs__`, `__bool__`, `__torch_function__`, ...), or subclasses int, float, list, torch.Tensor and the like;
- other implementation: a private part of a library (`torch._C`, `torch._VF`, `torch.ops`, `torch.library`), DLPack,
  `ctypes`, and another library's implementation (`transformers`, `tokenizers`, `tiktoken`, `sentencepiece`).

`report(assignment, root)`, run by `autograde` after nbgrader, reads every autograded submission's own cells (the
solution cells, and any cell the student added: every code cell that is not a locked cell of the source), writes
root/tamper_report.csv (student, assignment, exercise, cell, line, rule, what, code) next to the gradebook, and puts
a note at the top of each flagged student's autograded notebook, which `make feedback` turns into the feedback they
and the instructor read. Scores are left as autograded: this is a detector, not a proof, and the instructor decides.
"""

from __future__ import annotations

import ast
import builtins
import csv
import json
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
REPORT = "tamper_report.csv"
COLUMNS = ["student", "assignment", "exercise", "cell", "line", "rule", "what", "code"]
NOTE_TAG = "tamper-report"

MACHINERY, OPERATORS, OTHER = "machinery", "operators", "other implementation"


class Finding(NamedTuple):
    line: int  # 1-based, in the cell
    rule: str  # MACHINERY, OPERATORS or OTHER
    what: str  # one sentence
    code: str  # the line, stripped


class Context(NamedTuple):
    """What the locked cells bind: imported names (name -> dotted path) and the set-up's own data (names)."""

    imported: Mapping[str, str]
    data: frozenset[str] = frozenset()


def _exercise_tools() -> dict[str, str]:
    """The tools of course.exercises (forbid, LookupOnly, ...), read from its source without importing torch."""
    path = ROOT / "lib" / "course" / "exercises.py"
    if not path.exists():
        return {"forbid": "course.exercises.forbid"}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
    return {name: f"course.exercises.{name}" for name in names if not name.startswith("_")}


# The built-ins the checks call: rebinding one at the top level of a solution cell is an attempt on them.
CHECK_BUILTINS = (
    "AssertionError Exception NotImplementedError ValueError abs all any bool dict divmod enumerate float getattr "
    "hasattr int isinstance len list map max min next print range round set sorted str sum tuple type zip"
).split()
DEFAULT = Context(
    imported={
        **{name: f"builtins.{name}" for name in CHECK_BUILTINS},
        **{name: name for name in ("torch", "math", "numpy", "sys", "builtins", "scratch", "course", "importlib")},
        "np": "numpy",
        "F": "torch.nn.functional",
        "nn": "torch.nn",
        **_exercise_tools(),
    }
)

# Operators a check's comparisons and arithmetic go through, and the hooks that take over torch's and numpy's calls.
OPERATOR_METHODS = {
    f"__{name}__"
    for name in (
        "eq ne lt le gt ge bool abs neg pos invert round trunc floor ceil float int index complex len "
        "add radd iadd sub rsub isub mul rmul imul truediv rtruediv floordiv rfloordiv mod rmod pow rpow "
        "matmul rmatmul and rand or ror xor rxor getattribute instancecheck subclasscheck "
        "torch_function torch_dispatch array array_ufunc array_function array_priority"
    ).split()
}
VALUE_TYPES = {
    f"builtins.{name}" for name in "int float complex bool str bytes list tuple dict set frozenset".split()
} | {"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch._tensor.Tensor", "numpy.ndarray"}
# Attributes that reach a function's or a frame's insides, or a module's namespace.
INSIDES = {"__globals__", "__code__", "__closure__", "__defaults__", "__kwdefaults__", "__builtins__", "__dict__"}
INSIDES |= {"__subclasses__", "__file__", "__spec__", "__loader__"}
FRAMES = {"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame"}
FRAME_FUNCTIONS = {f"inspect.{name}" for name in ("currentframe", "stack", "getouterframes", "getinnerframes", "trace")}
FRAME_FUNCTIONS |= {"sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.exc_info"}
TORCH_MACHINERY = ("torch.ops", "torch.library", "torch.overrides", "torch.utils.dlpack", "torch.from_dlpack")
OTHER_LIBRARIES = ("transformers", "tokenizers", "tiktoken", "sentencepiece", "ctypes")
MACHINERY_MODULES = ("course.checks", "gc", "unittest.mock", "mock", "pytest", "sys.modules", "importlib.reload")
MACHINERY_MODULES += ("runpy", "subprocess")
RUNS_UNREAD_CODE = {"exec", "eval", "compile", "__import__", "get_ipython", "breakpoint"}
GLOBALS_WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _under(path: str, prefixes: Iterable[str]) -> str | None:
    """The first of `prefixes` that `path` is, or lies under."""
    return next((p for p in prefixes if path == p or path.startswith(p + ".")), None)


def _private_part(path: str) -> str | None:
    """The first private component of a dotted path below its top (`torch._C._nn.x` -> `torch._C`), if any."""
    parts = path.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[: i + 1])
    return None


class _Reader:
    """One pass over a parsed cell; `found` collects the findings."""

    def __init__(self, tree: ast.Module, lines: list[str], context: Context):
        self.tree, self.lines, self.found = tree, lines, []
        self.context = context
        self.aliases: dict[str, str] = dict(context.imported)  # name -> dotted path, grown by the cell's own binds
        rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        self.data = {name: f"the set-up's {name}" for name in context.data - rebound if name not in self.aliases}
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.namespaces: set[str] = set()  # names bound to globals() / vars() / a module's __dict__
        self._bind_imports_and_aliases()

    # -- where names point -------------------------------------------------------------------------------------

    def _shadowed(self, node: ast.Name) -> bool:
        """A parameter (or comprehension variable) of an enclosing function with the same name hides the global."""
        child, parent = node, self.parents.get(node)
        while parent is not None:
            # a parameter hides the global in the function's body, not in its defaults; one with a default that is
            # a module (`def f(t=torch)`) is an alias of it
            if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and child in _bodies(parent):
                args = parent.args
                positional = args.posonlyargs + args.args
                with_default = {a.arg for a in positional[len(positional) - len(args.defaults) :]}
                with_default |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
                every = positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
                if node.id in {a.arg for a in every} - with_default:
                    return True
            if isinstance(parent, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
                targets = {n.id for gen in parent.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
                if node.id in targets:
                    return True
            child, parent = parent, self.parents.get(parent)
        return False

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted path an expression names when it reaches an imported module or object (torch.nn.functional,
        course.exercises.forbid), or the set-up's data; None for anything computed."""
        if isinstance(node, ast.Name):
            if self._shadowed(node):
                return None
            return self.aliases.get(node.id) or self.data.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Subscript):  # sys.modules["torch"]
            base = self.resolve(node.value)
            key = node.slice
            if base == "sys.modules" and isinstance(key, ast.Constant) and isinstance(key.value, str):
                return key.value
            return None
        if isinstance(node, ast.Call) and node.args:
            function, first = self.resolve(node.func) or "", node.args[0]
            constant = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
            if function in ("importlib.import_module", "builtins.__import__") or (
                isinstance(node.func, ast.Name) and node.func.id == "__import__"
            ):
                return constant
            if (function == "builtins.getattr" or _is_name(node.func, "getattr")) and len(node.args) >= 2:
                base, attr = self.resolve(first), node.args[1]
                if base and isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                    return f"{base}.{attr.value}"
        return None

    def _bind_imports_and_aliases(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    self.aliases[name] = alias.name if alias.asname else name
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for _ in range(4):  # aliases of aliases, until nothing changes (flow-insensitive: a detector, not a proof)
            before = dict(self.aliases), set(self.namespaces)
            for target, value in self._pairs():
                if isinstance(target, ast.Name):
                    path = self.resolve(value)
                    if path and not path.startswith("the set-up's"):
                        self.aliases[target.id] = path
                    if self._is_namespace(value):
                        self.namespaces.add(target.id)
            if (dict(self.aliases), set(self.namespaces)) == before:
                break

    def _pairs(self):
        """(target, value) of every simple binding: assignments (tuples element by element), walrus, `for x in
        (a, b)`, `with a as x`, and parameter defaults."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    yield from _zip_targets(target, node.value)
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                yield node.target, node.value
            elif isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple | ast.List | ast.Set):
                for element in node.iter.elts:
                    yield node.target, element
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                yield node.optional_vars, node.context_expr
            elif isinstance(node, ast.arguments):
                positional = node.posonlyargs + node.args
                yield from (
                    (ast.Name(a.arg), d)
                    for a, d in zip(positional[len(positional) - len(node.defaults) :], node.defaults)
                )
                yield from ((ast.Name(a.arg), d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None)

    def _is_namespace(self, node: ast.AST) -> bool:
        """globals(), vars(), locals(), a module's __dict__, or a name bound to one of them."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("globals", "vars", "locals")
        ):
            return not node.args or bool(self.resolve(node.args[0]))
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return bool(self.resolve(node.value))
        return isinstance(node, ast.Name) and node.id in self.namespaces

    # -- the rules ---------------------------------------------------------------------------------------------

    def add(self, node: ast.AST, rule: str, what: str) -> None:
        line = getattr(node, "lineno", 1)
        code = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.found.append(Finding(line, rule, what, code[:120]))

    def read(self) -> list[Finding]:
        self._top_level_rebinding()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                self._write(node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._name(node)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.ClassDef):
                self._class(node)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
        unique = {(f.line, f.rule, f.what): f for f in self.found}
        return sorted(unique.values())

    def _write(self, node: ast.Attribute | ast.Subscript) -> None:
        verb = "deletes" if isinstance(node.ctx, ast.Del) else "sets"
        if isinstance(node, ast.Attribute):
            path = self.resolve(node.value)
            if path:
                self.add(node, MACHINERY, f"{verb} {path}.{node.attr}")
            elif node.attr.startswith("__") and node.attr.endswith("__"):
                self.add(node, MACHINERY, f"{verb} the special attribute {node.attr} of an object")
            return
        path = self.resolve(node.value)
        if self._is_namespace(node.value):
            key = node.slice
            name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
            if name is None or name in self.aliases or name in self.data:
                self.add(
                    node, MACHINERY, f"{verb} {name or 'a computed name'} through globals() or a module's __dict__"
                )
        elif path == "sys.modules" or (path and path.startswith("sys.modules")):
            self.add(node, MACHINERY, f"{verb} an entry of sys.modules")
        elif path and not path.startswith("the set-up's"):
            self.add(node, MACHINERY, f"{verb} an item of {path}")

    def _attribute(self, node: ast.Attribute) -> None:
        if node.attr == "__builtins__":
            self.add(node, MACHINERY, "reaches __builtins__")
        elif node.attr in FRAMES:
            self.add(node, MACHINERY, f"reads a frame ({node.attr}): the check's own variables")
        elif node.attr in INSIDES and (node.attr != "__dict__" or self.resolve(node.value)):
            self.add(node, MACHINERY, f"reads {node.attr}: the insides of a function or module")
        elif node.attr in ("__dlpack__", "from_dlpack", "to_dlpack"):
            self.add(node, OTHER, f"goes through DLPack ({node.attr}): the same data by another path")
        elif node.attr in ("as_subclass", "_make_subclass", "_make_wrapper_subclass"):
            self.add(node, OPERATORS, f"makes a tensor of another class ({node.attr}), whose operators may differ")
        if isinstance(self.parents.get(node), ast.Attribute):
            return  # the outermost attribute of a chain speaks for it
        self._path(node, self.resolve(node))

    def _name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.add(node, MACHINERY, "reaches __builtins__")
        elif not isinstance(self.parents.get(node), ast.Attribute):
            path = None if self._shadowed(node) else self.aliases.get(node.id)
            if path and path != node.id:  # a name imported by the cell or the locked cells
                self._path(node, path)

    def _path(self, node: ast.AST, path: str | None) -> None:
        """Rules on what a dotted path reaches: machinery modules, private parts, other implementations."""
        if not path or path.startswith("the set-up's"):
            return
        if found := _under(path, FRAME_FUNCTIONS):
            self.add(node, MACHINERY, f"uses {found}: frame access reaches the check's own variables")
        elif found := _under(path, MACHINERY_MODULES):
            self.add(node, MACHINERY, f"uses {found}")
        elif found := _under(path, TORCH_MACHINERY):
            self.add(node, OTHER, f"uses {found}: another path to PyTorch's operations")
        elif found := _under(path, OTHER_LIBRARIES):
            self.add(node, OTHER, f"uses {path}: another library's implementation")
        elif (found := _private_part(path)) and found.startswith(("scratch.", "course.")):
            self.add(node, MACHINERY, f"uses {found}, a private part of the course's checking tools")
        elif found:
            self.add(node, OTHER, f"uses {found}, a private part of {found.split('.')[0]}")
        elif path in ("builtins.__import__",) or path.startswith("builtins.exec") or path.startswith("builtins.eval"):
            self.add(node, MACHINERY, f"runs code the report cannot read ({path})")

    def _call(self, node: ast.Call) -> None:
        function = node.func
        name = function.id if isinstance(function, ast.Name) else None
        path = self.resolve(function) or ""
        attr = function.attr if isinstance(function, ast.Attribute) else None
        if name in ("setattr", "delattr") or attr in ("__setattr__", "__delattr__") or path.endswith(".setattr"):
            target = ast.unparse(node.args[0]) if node.args else "an object"
            if target != "self":
                self.add(node, MACHINERY, f"{name or attr}({target}, ...) changes an attribute without an assignment")
        elif (name and name in RUNS_UNREAD_CODE and not self._shadowed(function)) or path in (
            "builtins.exec",
            "builtins.eval",
        ):
            self.add(node, MACHINERY, f"runs code the report cannot read ({name or path})")
        elif path.endswith("reload") and path.startswith(("importlib", "imp")):
            self.add(node, MACHINERY, "reloads a module (importlib.reload)")
        elif name == "vars" and node.args and self.resolve(node.args[0]):
            self.add(node, MACHINERY, f"reads the namespace of {self.resolve(node.args[0])} (vars)")
        elif name == "type" and len(node.args) == 3:
            self.add(node, OPERATORS, "builds a class at run time (type(name, bases, namespace))")
        elif attr in GLOBALS_WRITES and self._is_namespace(function.value):
            self.add(node, MACHINERY, f"writes names through globals() or a module's __dict__ (.{attr})")

    def _class(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            path = self.resolve(base)
            if path is None and isinstance(base, ast.Name) and base.id in dir(builtins):
                path = f"builtins.{base.id}"
            if path in VALUE_TYPES:
                self.add(base, OPERATORS, f"class {node.name} subclasses {path.removeprefix('builtins.')}")
            elif isinstance(base, ast.Call):
                self.add(base, OPERATORS, f"class {node.name} has a base computed at run time")
        for statement in node.body:
            names = []
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [statement.name]
            elif isinstance(statement, ast.Assign | ast.AnnAssign):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            for method in names:
                if method in OPERATOR_METHODS:
                    self.add(statement, OPERATORS, f"class {node.name} defines {method}")

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                return
            paths = [f"{node.module}.{a.name}" if a.name != "*" else node.module for a in node.names]
            if any(a.name == "*" for a in node.names):
                self.add(node, MACHINERY, f"imports every name of {node.module} (*), over the names the checks use")
        else:
            paths = [a.name for a in node.names]
        for path in paths:
            self._path(node, path)

    def _top_level_rebinding(self) -> None:
        """A name the checks import (or a built-in they call) bound at the top level to something else."""
        declared_global = {name for n in ast.walk(self.tree) if isinstance(n, ast.Global) for name in n.names}
        protected = dict(self.context.imported)
        for node in self._top_level_nodes(declared_global):
            bound: list[tuple[str, str | None]] = []  # (name, the path it gets, when that is known)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound = [(node.name, None)]
            elif isinstance(node, ast.Import):
                bound = [
                    (a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0]) for a in node.names
                ]
            elif isinstance(node, ast.ImportFrom) and node.module:
                bound = [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names if a.name != "*"]
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                value = self._value_of(node)
                bound = [(node.id, self.resolve(value) if value is not None else None)]
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound = [(node.name, None)]
            for name, path in bound:
                if name in protected and path != protected[name]:
                    self.add(node, MACHINERY, f"rebinds {name}, which the checks use ({protected[name]})")

    def _top_level_nodes(self, declared_global: set[str]):
        """Nodes that bind a name in the notebook's namespace: those outside any function or class, and in a
        function, those of names it declares global."""
        stack = [(child, True) for child in self.tree.body]
        while stack:
            node, top = stack.pop()
            if top or (isinstance(node, ast.Name) and node.id in declared_global):
                yield node
            scope = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda)
            comprehension = isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp)
            stack += [(child, top and not scope and not comprehension) for child in ast.iter_child_nodes(node)]

    def _value_of(self, name: ast.Name) -> ast.AST | None:
        """The value bound to a simple assignment target (None for tuples, loops and the like)."""
        parent = self.parents.get(name)
        if isinstance(parent, ast.Assign) and name in parent.targets:
            return parent.value
        if isinstance(parent, ast.NamedExpr | ast.AnnAssign) and parent.target is name:
            return parent.value
        return None


def _bodies(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.AST]:
    """The statements (or expression) a function runs, where its parameters are bound."""
    return function.body if isinstance(function.body, list) else [function.body]


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _zip_targets(target: ast.AST, value: ast.AST):
    if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
        if len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                yield from _zip_targets(t, v)
        return
    yield target, value


def python_source(cell_source: str) -> str:
    """A cell's source as Python: IPython's magics and shell escapes (`%run`, `!cmd`) become get_ipython() calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # without IPython: magics become calls the report flags all the same
        return re.sub(r"^(\s*)[%!].*$", r"\1get_ipython()", cell_source, flags=re.MULTILINE)
    return TransformerManager().transform_cell(cell_source)


def findings(source: str, context: Context = DEFAULT) -> list[Finding]:
    """Each line of one cell that reaches into the checking machinery or around a method rule, in line order.
    `context`: what the notebook's locked cells import (and the set-up's data names); DEFAULT without a notebook."""
    if context is not DEFAULT:
        context = Context({**DEFAULT.imported, **context.imported}, context.data)
    python = python_source(source)
    try:
        tree = ast.parse(python)
    except SyntaxError as error:
        line = error.lineno or 1
        excerpt = source.splitlines()[line - 1].strip()[:120] if 0 < line <= len(source.splitlines()) else ""
        return [Finding(line, MACHINERY, f"does not parse as Python ({error.msg}): read it by hand", excerpt)]
    return _Reader(tree, python.splitlines(), context).read()


# -- notebooks ---------------------------------------------------------------------------------------------------


def _grader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _locked(cell: dict) -> bool:
    """A cell nbgrader restores from the source when it autogrades: set-up, statements, checks."""
    meta = _grader(cell)
    return bool(meta) and not meta.get("solution") and bool(meta.get("locked") or meta.get("grade"))


def context_of(notebook: dict) -> Context:
    """What an assignment's locked code cells import (name -> dotted path, the built-ins they import included) and
    the names its set-up cell binds (its data: models, tokenizers, tensors)."""
    imported: dict[str, str] = {}
    data: set[str] = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code" or not _locked(cell):
            continue
        try:
            tree = ast.parse(python_source(_source(cell)))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    imported[alias.asname or top] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if a.name != "*"})
        if _grader(cell).get("grade_id") == "setup":
            for node in tree.body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    data.add(node.name)
                elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    data |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return Context(imported, frozenset(data - set(imported)))


def student_cells(submission: dict, source: dict) -> list[tuple[str, str, str]]:
    """(exercise, cell, source) of each code cell of a submission that the student wrote: every code cell except
    the locked cells of the source, which nbgrader restores (by grade_id) before it runs the notebook. `exercise` is
    that of the check the cell precedes ("exercise 1"); `cell` its grade_id, or "added cell N" (N from 1)."""
    locked = {_grader(c)["grade_id"] for c in source["cells"] if _locked(c) and _grader(c).get("grade_id")}
    cells, pending = [], []
    mine = [c for c in submission["cells"] if NOTE_TAG not in c.get("metadata", {}).get("tags", [])]
    for number, cell in enumerate(mine, start=1):
        grade_id = _grader(cell).get("grade_id")
        if cell["cell_type"] != "code":
            continue
        if grade_id in locked:
            match = re.fullmatch(r"exercise(\d+)_check", grade_id)
            if match:  # the cells before a check belong to its exercise
                cells += [(f"exercise {match[1]}", name, text) for name, text in pending]
                pending = []
            continue
        pending.append((grade_id or f"added cell {number}", _source(cell)))
    return cells + [("after the last exercise", name, text) for name, text in pending]


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def note(rows: list[dict]) -> str:
    """The markdown note a flagged student's feedback opens with."""
    lines = [
        f"- {row['exercise']} ({row['cell']}), line {row['line']}: {row['what']} (`{row['code']}`)" for row in rows
    ]
    return "\n".join(
        [
            "**Note from the grader's tamper check.** These lines of your own cells reach into the checking "
            "machinery or around an exercise's method rule. Your score is as autograded; your instructor reads "
            "these lines and decides.",
            "",
            *lines,
        ]
    )


def annotate(notebook_path: Path, rows: list[dict]) -> None:
    """Put the note at the top of an autograded notebook (after its title), replacing an earlier one."""
    notebook = _read(notebook_path)
    cells = [c for c in notebook["cells"] if NOTE_TAG not in c.get("metadata", {}).get("tags", [])]
    if rows:
        cell = {"cell_type": "markdown", "metadata": {"tags": [NOTE_TAG]}, "source": note(rows)}
        if notebook.get("nbformat", 4) >= 4 and notebook.get("nbformat_minor", 0) >= 5:
            cell["id"] = "tamper-report"
        cells.insert(1 if cells and cells[0]["cell_type"] == "markdown" else 0, cell)
    if cells == notebook["cells"]:
        return
    notebook["cells"] = cells
    mode = notebook_path.stat().st_mode  # nbgrader leaves autograded notebooks read-only (444)
    notebook_path.chmod(mode | stat.S_IWUSR)
    try:
        notebook_path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    finally:
        notebook_path.chmod(mode)


def report(assignment: str, root: Path) -> tuple[Path, list[dict]]:
    """Read every submission of `assignment` in the course folder `root` (autograded/<student>/<assignment>/, else
    submitted/), write root/tamper_report.csv (this assignment's rows replaced, the others kept) and note the
    findings at the top of each flagged student's autograded notebook. The report's path and this assignment's rows."""
    source = _read(root / "source" / assignment / f"{assignment}.ipynb")
    context = context_of(source)
    students = sorted(
        {p.parts[-3] for folder in ("autograded", "submitted") for p in root.glob(f"{folder}/*/{assignment}/*.ipynb")}
    )
    rows = []
    for student in students:
        graded = root / "autograded" / student / assignment / f"{assignment}.ipynb"
        submitted = root / "submitted" / student / assignment / f"{assignment}.ipynb"
        notebook = graded if graded.exists() else submitted
        if not notebook.exists():
            continue
        mine = []
        for exercise, cell, text in student_cells(_read(notebook), source):
            for found in findings(text, context):
                mine.append(dict(zip(COLUMNS, [student, assignment, exercise, cell, *found])))
        rows += mine
        if graded.exists():
            annotate(graded, mine)
    path = root / REPORT
    kept = []
    if path.exists():
        with path.open(newline="", encoding="utf-8") as file:
            kept = [row for row in csv.DictReader(file) if row["assignment"] != assignment]
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, COLUMNS)
        writer.writeheader()
        writer.writerows(kept + rows)
    return path, rows
