"""The installed package: type stubs, py.typed, docstrings, and the
README's Python example."""

import ast
import importlib.util
import os
import pathlib
import re

import pith

CLASSES = ["DB", "Snapshot", "WriteBatch", "Iterator", "SearchIterator"]


def package_dir():
    spec = importlib.util.find_spec("pith")
    (location,) = spec.submodule_search_locations
    return pathlib.Path(location)


def stub_methods():
    """{class name: set of member names} from the installed stubs, with
    each class's stub bases' members folded in."""
    tree = ast.parse((package_dir() / "__init__.pyi").read_text())
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AnnAssign)) and hasattr(n, "name")}
            names |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in classes:
                    names |= classes[base.id]
            classes[node.name] = names
    return classes


def test_wheel_ships_stubs_and_py_typed():
    d = package_dir()
    assert (d / "__init__.pyi").is_file()
    assert (d / "py.typed").is_file()
    assert pith.__file__.startswith(str(d))  # the installed wheel, not the sources


def test_every_public_method_is_in_the_stubs_and_documented():
    stubs = stub_methods()
    for cls_name in CLASSES:
        cls = getattr(pith, cls_name)
        assert cls.__doc__, cls_name
        public = [n for n in dir(cls) if not n.startswith("_")]
        for name in public:
            assert name in stubs[cls_name], f"{cls_name}.{name} is not in pith.pyi"
            assert getattr(cls, name).__doc__, f"{cls_name}.{name} has no docstring"


def test_readme_example_runs(tmp_path):
    readme = pathlib.Path(__file__).resolve().parents[3] / "README.md"
    text = readme.read_text()
    section = text[text.index("## Python") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    os.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
