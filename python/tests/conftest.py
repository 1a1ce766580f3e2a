"""Shared fixtures: the graphmill program (GRAPHMILL_BIN, else built from
this checkout with Go, else found on PATH) and datasets written by it."""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
try:  # the installed package (pip install ./python), else the source tree
    import graphmill  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.dirname(HERE))
    import graphmill  # noqa: F401


def pytest_report_header(config):
    return f"graphmill client from {os.path.dirname(graphmill.__file__)}"

SHARED_DATA = os.environ.get("GRAPHMILL_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")


@pytest.fixture(scope="session")
def gm(tmp_path_factory):
    """Path of the graphmill program; also put first on PATH and in
    GRAPHMILL_BIN, with GRAPHMILL_CACHE pointing at a fresh directory."""
    exe = os.environ.get("GRAPHMILL_BIN")
    if not exe and shutil.which("go") and os.path.isdir(os.path.join(REPO, "cmd", "graphmill")):
        out = tmp_path_factory.mktemp("bin") / "graphmill"
        subprocess.run(["go", "build", "-o", str(out), "./cmd/graphmill"], cwd=REPO, check=True)
        exe = str(out)
    if not exe:
        exe = shutil.which("graphmill")
    if not exe:
        pytest.skip("no graphmill program: set GRAPHMILL_BIN, or install Go to build it")
    os.environ["GRAPHMILL_BIN"] = exe
    os.environ["PATH"] = os.path.dirname(exe) + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("GRAPHMILL_CACHE", str(tmp_path_factory.mktemp("cache")))
    return exe


@pytest.fixture(scope="session")
def cora_dir(gm):
    """The built-in Cora as a native dataset directory."""
    import graphmill._cli as cli

    return cli.resolve_dataset("cora")


@pytest.fixture(scope="session")
def cora_parts(gm, tmp_path_factory):
    """The built-in Cora split into 3 parts by 'graphmill partition'."""
    out = tmp_path_factory.mktemp("parts") / "cora3"
    subprocess.run([gm, "partition", "-k", "3", "-o", str(out), "cora"], check=True, capture_output=True)
    return str(out)
