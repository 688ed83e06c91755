"""The folders of ``lab/`` show its architecture (issue 24 item 2), and the words about them stay
true: README's layout section names every sub-package of ``lab/`` and every module left at its
top level, and each sub-package's docstring names every module in it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "lab"


def _layout() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^## Layout\n```\n(.*?)^```", readme, re.M | re.S)
    assert found, "README has no ## Layout block"
    return found.group(1)


def _packages() -> list[Path]:
    return sorted(p.parent for p in LAB.glob("*/__init__.py"))


def test_the_layout_names_every_folder_and_top_level_module_of_lab() -> None:
    layout = _layout()
    folders = [p.name for p in _packages()]
    assert len(folders) >= 7  # cli, run, judge, report, store, explore, pytest
    lines = layout.splitlines()
    missing = [f"{name}/" for name in folders
               if not any(line.startswith(f"  {name}/") for line in lines)]
    modules = [p.stem for p in sorted(LAB.glob("*.py")) if p.name != "__init__.py"]
    missing += [f"{m}.py" for m in modules if m not in layout]
    assert missing == [], f"README's layout section does not show: {missing}"


def test_each_package_of_lab_names_its_modules() -> None:
    unnamed = []
    for pkg in _packages():
        doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text(encoding="utf-8")))
        assert doc, f"lab/{pkg.name}/__init__.py has no docstring"
        names = [p.stem for p in sorted(pkg.glob("*.py")) if not p.stem.startswith("__")]
        names += [p.parent.name for p in sorted(pkg.glob("*/__init__.py"))]
        unnamed += [f"lab/{pkg.name}/{n}" for n in names if f"``{n}``" not in doc]
    assert unnamed == [], f"not named in their package's docstring: {unnamed}"


def test_every_package_is_installed() -> None:
    """A wheel (a fresh clone's ``pip install .``) holds only the packages pyproject lists."""
    import tomllib

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = sorted(".".join(p.parent.relative_to(ROOT).parts)
                   for top in ("dsl", "lab", "runners", "fault")
                   for p in (ROOT / top).rglob("__init__.py"))
    assert sorted(listed) == found
