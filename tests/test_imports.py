"""Imports: `import keras_bert_lite` stays light, and the packages import in one direction only."""

import ast
import pathlib
import subprocess
import sys

import pytest

import keras_bert_lite

PACKAGE = pathlib.Path(keras_bert_lite.__file__).parent

# The top-level packages and modules of keras_bert_lite, lowest first: each may import only
# those on an earlier level (and itself). Names on one level may not import each other. The
# package root (`keras_bert_lite/__init__.py`, the public API) may import anything.
LEVELS = (
    ("tf_startup", "atomic"),
    ("config",),
    ("layers",),
    ("text",),
    ("data",),
    ("interop",),
    ("optimization",),
    ("models",),
    ("training",),
    ("export",),
)
RANK = {name: rank for rank, names in enumerate(LEVELS) for name in names}


def _module_name(path: pathlib.Path) -> str:
    parts = ("keras_bert_lite",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(path: pathlib.Path, module: str) -> set[str]:
    """Every keras_bert_lite module `path` imports, at any depth (inside functions too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from package import module` imports that module; other names come from `base`.
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names)
    return {name for name in found if name in MODULES and name != module}


def _graph() -> dict[str, set[str]]:
    """module -> the keras_bert_lite modules it imports."""
    return {module: _imports(path, module) for module, path in MODULES.items()}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_top_level_package_has_a_level():
    tops = {_top(module) for module in _graph()} - {""}
    assert tops <= set(RANK), f"place {sorted(tops - set(RANK))} in LEVELS"


def test_each_package_imports_only_packages_below_it():
    wrong = sorted(
        f"{module} imports {name}"
        for module, names in _graph().items()
        if _top(module)
        for name in names
        if _top(name) != _top(module) and RANK.get(_top(name), 99) >= RANK.get(_top(module), -1)
    )
    assert not wrong, "imports against the package order:\n  " + "\n  ".join(wrong)


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, str] = {}  # "open" while on the DFS path, "done" after
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for name in sorted(graph[module]):
            if state.get(name) == "open":
                on_path = path + [module]
                cycles.append(" -> ".join(on_path[on_path.index(name):] + [name]))
            elif name not in state:
                visit(name, path + [module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert not cycles, "import cycles:\n  " + "\n  ".join(cycles)


@pytest.mark.slow
def test_import_does_not_load_tensorflow_text_or_tfds():
    # A training process reading TFRecords needs neither (tensorflow_text alone is ~120 MB
    # resident); they load on first use of the text tools / TFDS readers.
    code = (
        "import sys, keras_bert_lite\n"
        "print(sorted(m for m in ('tensorflow_text', 'tensorflow_datasets') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"

