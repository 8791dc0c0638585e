"""One registry: every strategy in ``smdist.strategies.REGISTRY`` is exported, documented in the
README's strategy table, and has an example job file, a ready entry point and a notebook; and no
module outside ``strategies/`` and ``spec/`` switches on a strategy's ``kind`` or class.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

import smdist
import smdist.strategies
from smdist.strategies import REGISTRY, STRATEGIES, STRATEGY_NAMES, strategy_model

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "smdist"
README = ROOT / "README.md"
KINDS = [entry.kind for entry in REGISTRY]
# Where a strategy may be told apart by its kind: its own modules and the job's models.
MAY_SWITCH = ("strategies", "spec")


# ---- the README's strategy table ----------------------------------------------------------------
def marked_block(marker: str) -> str:
    text = README.read_text()
    return text.split(f"<!-- {marker}:begin", 1)[1].split(f"<!-- {marker}:end", 1)[0]


def table_rows(block: str) -> list[dict[str, str]]:
    lines = [line for line in block.splitlines() if line.startswith("|")]
    header = [cell.strip().strip("`") for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, [cell.strip() for cell in line.strip("|").split("|")], strict=True))
        for line in lines[2:]
    ]


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


STRATEGY_TABLE = {code_spans(row["kind"])[0]: row for row in table_rows(marked_block("strategies"))}


# ---- examples and notebooks -------------------------------------------------------------------
def example_kinds() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        kind = yaml.safe_load(path.read_text())["strategy"]["kind"]
        found.setdefault(kind, []).append(path)
    return found


def notebook_kinds() -> dict[str, list[str]]:
    """The notebooks that build each kind's strategy, by the names they import from smdist."""
    owner = {name: entry.kind for entry in REGISTRY for name in entry.names}
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        source = "\n".join(
            "".join(cell["source"])
            for cell in json.loads(path.read_text())["cells"]
            if cell["cell_type"] == "code"
        )
        for line in re.findall(r"^from smdist(?:\.strategies)? import (.+)$", source, re.M):
            for name in (part.strip() for part in line.split(",")):
                if name in owner:
                    found.setdefault(owner[name], []).append(path.name)
    return found


EXAMPLES = example_kinds()
NOTEBOOKS = notebook_kinds()


@pytest.mark.parametrize("kind", KINDS)
def test_every_registered_strategy_is_exported_from_smdist(kind):
    entry = STRATEGIES[kind]
    assert getattr(smdist, entry.model) is strategy_model(kind)
    for name in entry.names:
        assert name in smdist.__all__
        assert getattr(smdist, name) is getattr(smdist.strategies, name)


def test_smdist_parameter_server_is_the_strategy_class():
    from smdist.strategies.parameter_server import ParameterServer

    assert smdist.ParameterServer is ParameterServer
    assert smdist.ParameterServer().kind == "parameter_server"


def test_smdist_exports_no_strategy_the_registry_lacks():
    strategy_classes = {
        name
        for name in smdist.__all__
        if isinstance(getattr(smdist, name), type)
        and issubclass(getattr(smdist, name), smdist.strategies.Strategy)
    }
    assert strategy_classes <= set(STRATEGY_NAMES)


def _type_checking_names(path: Path) -> set[str]:
    """The names a module imports from smdist.strategies under ``if TYPE_CHECKING:``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith(
                    "smdist.strategies"
                ):
                    names |= {alias.asname or alias.name for alias in statement.names}
    return names


@pytest.mark.parametrize("module", ["__init__.py", "strategies/__init__.py"])
def test_the_editors_view_of_the_exports_names_every_registered_strategy(module):
    assert set(STRATEGY_NAMES) <= _type_checking_names(PACKAGE / module)
    assert _type_checking_names(PACKAGE / module) <= set(smdist.strategies.__all__)


def test_the_readme_table_has_one_row_per_registered_kind():
    assert sorted(STRATEGY_TABLE) == sorted(KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_the_readme_table_names_the_kinds_classes(kind):
    shown = [span.split("(")[0] for span in code_spans(STRATEGY_TABLE[kind]["class"])]
    assert shown, f"the README's row for {kind} names no class"
    assert set(shown) <= set(STRATEGIES[kind].names)


@pytest.mark.parametrize("kind", KINDS)
def test_every_registered_strategy_has_an_example(kind):
    assert EXAMPLES.get(kind), f"no examples/*.yaml has strategy.kind: {kind}"


@pytest.mark.parametrize("kind", KINDS)
def test_every_registered_strategy_has_a_ready_entry_point(kind):
    """Each example's strategy (both SMP majors, both Horovod frameworks) has its script."""
    for example in EXAMPLES.get(kind, []):
        script = smdist.load(str(example)).strategy.default_entry_point
        assert (ROOT / "entry_points" / script).is_file(), f"{example.name}: no {script}"


@pytest.mark.parametrize("kind", KINDS)
def test_every_registered_strategy_has_a_notebook(kind):
    assert NOTEBOOKS.get(kind), f"no notebooks/*.ipynb builds a {kind} strategy"


# ---- no switch on kind outside strategies/ and spec/ ------------------------------------------
def _is_kind(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "kind") or (
        isinstance(node, ast.Attribute) and node.attr == "kind"
    )


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {s for element in node.elts for s in _strings(element)}
    return set()


def _names(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Tuple):
        return {n for element in node.elts for n in _names(element)}
    return set()


def kind_switches(source: str) -> list[str]:
    """Each place ``source`` tells strategies apart by kind or class: ``kind == "sddp"``,
    ``kind in (...)``, ``match kind``, a dict keyed by kinds, ``isinstance(x, SMPv2)``."""
    kinds, classes = set(KINDS), set(STRATEGY_NAMES)
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            named = set().union(*map(_strings, operands)) & kinds
            if named and any(map(_is_kind, operands)):
                found.append(f"{where}: compares a kind with {sorted(named)}")
        elif isinstance(node, ast.Match) and _is_kind(node.subject):
            found.append(f"{where}: matches on a kind")
        elif isinstance(node, ast.Dict):
            keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
            if len(keys & kinds) >= 2:
                found.append(f"{where}: a dict keyed by kinds {sorted(keys & kinds)}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "isinstance",
            "issubclass",
        ):
            named = _names(node.args[1]) & classes if len(node.args) == 2 else set()
            if named:
                found.append(f"{where}: tests for the strategy class {sorted(named)}")
    return found


def test_the_kind_switch_finder_finds_each_form():
    source = (
        "if spec.strategy.kind == 'sddp': pass\n"
        "if kind in ('horovod', 'mwms'): pass\n"
        "match strategy.kind:\n    case 'sdmp': pass\n"
        "LIBRARIES = {'sddp': 'smddp', 'horovod': 'horovod'}\n"
        "if isinstance(strategy, SMPv2): pass\n"
        "if module == 'horovod' or kind == 'pem': pass\n"  # neither is a strategy's kind
    )
    assert sorted(found.split(":")[0] for found in kind_switches(source)) == [
        "line 1",
        "line 2",
        "line 3",
        "line 5",
        "line 6",
    ]


def test_no_module_outside_strategies_and_spec_switches_on_kind():
    found = [
        f"{path.relative_to(ROOT)} {switch}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in MAY_SWITCH
        for switch in kind_switches(path.read_text())
    ]
    assert found == [], "move what differs by strategy onto the strategy:\n" + "\n".join(found)


# ---- what differs by strategy, read from the strategy --------------------------------------
def _local_requirements(example: str) -> dict[str, str]:
    from smdist.backends.local.preparation.layout import plan_layout
    from smdist.backends.local.preparation.requirements import required_modules

    job_plan = smdist.plan(smdist.load(str(ROOT / "examples" / f"{example}.yaml")))
    layout = plan_layout(job_plan, job_name="job-1", region="us-west-2", cpus=2, gpus=[])
    return required_modules(job_plan, layout)


def test_a_horovod_job_needs_horovod_in_its_python_and_a_ddp_job_does_not():
    assert "horovod" in _local_requirements("horovod_pytorch")
    assert "horovod" not in _local_requirements("pytorch_ddp")


@pytest.mark.parametrize(
    ("example", "library"),
    [
        ("sddp", "smddp"),
        ("smp_v1", "smp_v1"),
        ("smp_v2", "smp_v2"),
        ("horovod_pytorch", "horovod"),
        ("pytorch_ddp", None),
        ("mwms", None),
    ],
)
def test_the_image_library_a_job_needs_is_its_strategys(example, library):
    from smdist.checks.catalog import required_library

    assert required_library(smdist.load(str(ROOT / "examples" / f"{example}.yaml"))) == library
