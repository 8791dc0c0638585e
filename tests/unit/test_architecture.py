"""The layers of ``smdist/`` hold: no import circle, and no import from a lower layer upward.

The import graph is read from the source with ``ast`` (every ``import`` and ``from ... import``,
at any depth: functions included, and imports under ``if TYPE_CHECKING:`` too, since a reader
and a type checker follow them as they follow any other). The layer table is the architecture
of ``docs/architecture.md``, bottom first; a module belongs to the longest prefix it matches.
An import of smdist's own modules inside a function must say why it is not at the top, with a
``# lazy: ...`` comment. Run it alone with ``python -m pytest tests/unit/test_architecture.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "smdist"

# Bottom first: a module may import its own layer and those below, never one above.
LAYERS: list[tuple[str, ...]] = [
    ("smdist.contract",),  # the container's contract: standard library, shipped with jobs
    ("smdist.runtime", "smdist.drivers", "smdist.entry_points"),  # in-container, shipped too
    ("smdist.errors", "smdist.yaml_text", "smdist.version", "smdist.callbacks"),
    ("smdist.catalog",),
    (
        "smdist.spec.api_shapes",
        "smdist.spec.base",
        "smdist.spec.capacity",
        "smdist.spec.cluster",
        "smdist.spec.instance_types",
        "smdist.spec.topology",
        "smdist.spec.unknown_keys",
        "smdist.spec.validation_errors",
    ),
    ("smdist.strategies",),
    ("smdist.spec",),  # the job's models
    ("smdist.checks",),
    ("smdist.planning",),
    ("smdist.packaging",),
    ("smdist.backends",),
    ("smdist.fitting", "smdist.tuning", "smdist.exit_codes", "smdist.cli"),
    ("smdist",),  # the public, lazily loaded API
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


# Installed into the package from the repository's entry_points/ (pyproject's package-dir).
MAPPED = ("smdist.entry_points",)


def _owner(name: str) -> str | None:
    """The module ``name`` (a module, or a name inside one) is found in."""
    for mapped in MAPPED:
        if name == mapped or name.startswith(mapped + "."):
            return mapped
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("smdist"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.startswith("smdist"):
                found.update(f"{base}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    owners = {_owner(name) for name in found}
    return {owner for owner in owners if owner and owner != module}


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _layer(module: str) -> int:
    best, best_length = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in GRAPH:
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_is_in_a_layer():
    for module in MODULES:
        _layer(module)


def test_no_import_circle():
    assert _circles() == []


def test_no_import_reaches_up_a_layer():
    upward = [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in GRAPH.items()
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_the_check_sees_imports_inside_functions_type_only_and_relative_ones():
    # smdist.fitting imports the planner inside fit(); the plan's display names the plan's
    # values for type checkers only; the v3 driver imports the contract relatively: all must
    # be edges, or the tests above could not fail.
    assert "smdist.planning.plan" in GRAPH["smdist.fitting"]
    assert "smdist.planning.plan_value" in GRAPH["smdist.planning.display"]
    assert "smdist.contract.commands" in GRAPH["smdist.runtime.v3_driver"]


def _lazy_imports_without_a_reason() -> list[str]:
    """Every import of smdist's own modules inside a function with no ``# lazy:`` comment on
    its line, or above it (an import group shares the comment above its first import)."""
    missing = []
    for module, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text())
        lines = path.read_text().splitlines()
        import_lines = {
            line
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for line in range(node.lineno, node.end_lineno + 1)
        }
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if not _is_own_import(node):
                    continue
                above = node.lineno - 1
                while above in import_lines:
                    above -= 1
                said = lines[above - 1 : node.end_lineno] if above else []
                if not any("# lazy:" in line for line in said):
                    missing.append(f"{module}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(missing))


def _is_own_import(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.startswith("smdist") for alias in node.names)
    return isinstance(node, ast.ImportFrom) and (
        node.level > 0 or (node.module or "").startswith("smdist")
    )


def test_every_import_of_smdist_inside_a_function_says_why_it_is_not_at_the_top():
    # An import hides a route from readers and tools when it sits in a function; it is there
    # only to keep `import smdist`, `smdist --help` or one command from loading something
    # heavy, and a `# lazy: ...` comment says what (issue 30).
    assert _lazy_imports_without_a_reason() == []


def test_the_container_port_is_one_constant():
    """The rendezvous port SageMaker's container gives torchrun is written once; every other
    place (the runtime's defaults, the local backend, the host contract) names the constant."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}"
        for path in MODULES.values()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "7777" in line or "29400" in line
    ]
    assert found == ["smdist/contract/program.py:15"]


def test_only_the_hosts_folder_knows_which_way_the_hosts_are_made():
    """The namespaced hosts and the hosts sharing this machine are two implementations of one
    interface (``backends/local/hosts/base.py``); the rest of the local backend uses that
    interface and imports neither way's modules."""
    hosts = "smdist.backends.local.hosts"
    ways = (f"{hosts}.namespaced", f"{hosts}.shared")
    found = {
        module: sorted(i for i in _imports(module, path) if i.startswith(ways))
        for module, path in MODULES.items()
        if module.startswith("smdist.backends.local.") and not module.startswith(hosts)
    }
    assert {module: names for module, names in found.items() if names} == {}


def test_every_module_reads_in_one_sitting():
    """No module of smdist over 300 lines, no function over 60: a module that grows past them
    is cut where what it decides divides, not where the count says."""
    too_long = []
    for module, path in MODULES.items():
        source = path.read_text()
        if len(source.splitlines()) > 300:
            too_long.append(f"{module}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if length > 60:
                    too_long.append(f"{module}.{node.name}: {length} lines")
    assert too_long == []
