"""Builds the graphmill program into the package when Go is available.

``pip install ./python`` (or ``scripts/build_wheel.sh``) runs this build
step: with Go >= 1.26 on the machine and the repository around the
package, it compiles the static program (CGO_ENABLED=0) into
``graphmill/bin/graphmill``, and the wheel is then a platform wheel that
runs where neither Go nor graphmill is installed. Without Go the package
installs pure and finds the program through $GRAPHMILL_BIN or PATH.
Everything else is in pyproject.toml.
"""

import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # no wheel package: pip's own build still works
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIN_GO = (1, 26)


def go_ok():
    """Returns the go command when it is Go >= 1.26 and the repository's
    cmd/graphmill is beside the package, else None."""
    go = shutil.which("go")
    if go is None or not os.path.isdir(os.path.join(ROOT, "cmd", "graphmill")):
        return None
    try:
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.match(r"go(\d+)\.(\d+)", out.strip())
    if not m or (int(m.group(1)), int(m.group(2))) < MIN_GO:
        return None
    return go


def binary_built():
    return os.path.exists(os.path.join(HERE, "graphmill", "bin", "graphmill"))


class BuildPy(build_py):
    """build_py that first compiles the graphmill program into graphmill/bin."""

    def run(self):
        go = go_ok()
        if go is not None:
            out = os.path.join(HERE, "graphmill", "bin", "graphmill")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            env = dict(os.environ, CGO_ENABLED="0")
            self.announce(f"building the graphmill program with {go} into {out}", level=2)
            subprocess.run([go, "build", "-trimpath", "-o", out, "./cmd/graphmill"], cwd=ROOT, env=env, check=True)
        super().run()


cmdclass = {"build_py": BuildPy}

if bdist_wheel is not None:

    class BdistWheel(bdist_wheel):
        """A platform wheel when the program is inside (it is a native
        executable), a pure one otherwise."""

        def finalize_options(self):
            super().finalize_options()
            if go_ok() is not None or binary_built():
                self.root_is_pure = False

        def get_tag(self):
            python, abi, plat = super().get_tag()
            if not self.root_is_pure:
                python, abi = "py3", "none"
            return python, abi, plat

    cmdclass["bdist_wheel"] = BdistWheel

setup(cmdclass=cmdclass, package_data={"graphmill": ["bin/graphmill"]})
