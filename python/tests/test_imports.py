"""The package's modules import one another one way only: no cycle, not
even through imports inside functions (which only hide one)."""

import ast
import os

import graphmill

PKG = os.path.dirname(graphmill.__file__)


def edges():
    out = {}
    for f in sorted(os.listdir(PKG)):
        if not f.endswith(".py") or f == "__init__.py":
            continue
        name = f[:-3]
        deps = set()
        for node in ast.walk(ast.parse(open(os.path.join(PKG, f)).read())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    deps.add(node.module.split(".")[0])
                else:
                    deps.update(a.name for a in node.names)
        out[name] = deps - {name}
    return out


def test_no_import_cycle():
    g = edges()
    assert "torch" in g and "_tensors" in g["torch"]
    state = {}

    def visit(m, path):
        if state.get(m) == "done" or m not in g:
            return
        assert state.get(m) != "open", "import cycle: " + " -> ".join(path + [m])
        state[m] = "open"
        for d in sorted(g[m]):
            visit(d, path + [m])
        state[m] = "done"

    for m in sorted(g):
        visit(m, [])
