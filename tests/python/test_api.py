"""The package's public surface: docstrings on every public name, stubs for the extension."""

import ast
import inspect
import pathlib

import streamrt
from streamrt import _C


def _public_members(obj):
    for name, member in inspect.getmembers(obj):
        if not name.startswith("_"):
            yield name, member


def test_every_public_name_has_a_docstring():
    assert streamrt.__doc__
    missing = []
    for name in streamrt.__all__:
        obj = getattr(streamrt, name)
        if name == "__version__":
            continue
        if not (getattr(obj, "__doc__", None) or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and obj.__module__.startswith("streamrt._C"):
            for mname, member in _public_members(obj):
                doc = member.__doc__ if not isinstance(member, property) else member.fget.__doc__ or member.__doc__
                if not (doc or "").strip():
                    missing.append(f"{name}.{mname}")
    assert not missing, missing


def test_stubs_cover_the_extension():
    pkg = pathlib.Path(streamrt.__file__).parent
    assert (pkg / "py.typed").exists()
    tree = ast.parse((pkg / "_C.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    stubbed |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = {n for n in dir(_C) if not n.startswith("__")}
    assert public - stubbed == set()
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for cname, node in classes.items():
        members = {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
        members |= {m.target.id for m in node.body if isinstance(m, ast.AnnAssign)}
        real = {n for n, _ in _public_members(getattr(_C, cname))}
        assert real - members == set(), cname


def test_version():
    assert streamrt.__version__ == "0.1.0"
