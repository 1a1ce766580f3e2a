"""``python -m graphmill ARGS...`` runs the graphmill program (the one
inside the package, $GRAPHMILL_BIN, or graphmill on PATH) with ARGS:
``python -m graphmill --version`` prints the program's version and this
package's."""

import os
import subprocess
import sys

from . import __version__
from ._cli import find_binary
from .errors import GraphmillError


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        exe = find_binary()
    except GraphmillError as e:
        print(f"graphmill: {e}", file=sys.stderr)
        return 2
    if argv in (["--version"], ["version"]):
        p = subprocess.run([exe, "--version"], capture_output=True, text=True)
        print(p.stdout.strip() or p.stderr.strip())
        print(f"python package graphmill {__version__} ({os.path.dirname(os.path.abspath(__file__))}), program {exe}")
        return p.returncode
    return subprocess.run([exe, *argv]).returncode


if __name__ == "__main__":
    sys.exit(main())
