"""The installed package: type stubs, py.typed, docstrings, and the
README's Python example."""

import ast
import importlib.util
import os
import pathlib
import re

import pith

CLASSES = ["DB", "Snapshot", "WriteBatch", "Iterator", "SearchIterator", "RawIterator"]


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


def require_mypy():
    """mypy's modules, or a skip (a failure under PITH_REQUIRE_PYTHON=1)."""
    try:
        import mypy.api  # noqa: F401
    except ImportError:
        if os.environ.get("PITH_REQUIRE_PYTHON") == "1":
            raise
        import pytest

        pytest.skip("mypy is not installed (tests/wheel.rs installs it)")


def test_stubs_match_the_runtime():
    require_mypy()
    import subprocess
    import sys

    here = pathlib.Path(__file__).parent
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "pith", "--allowlist", str(here / "stubtest-allowlist.txt")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_typed_usage_checks_under_mypy_strict():
    require_mypy()
    import mypy.api

    here = pathlib.Path(__file__).parent
    stdout, stderr, status = mypy.api.run(["--strict", "--no-incremental", str(here / "typing_usage.py")])
    assert status == 0, stdout + stderr
