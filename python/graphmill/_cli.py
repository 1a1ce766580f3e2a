"""Finding and calling the graphmill command-line program."""

import json
import os
import shutil
import subprocess

from .errors import GraphmillError


# The program built into the package (setup.py, when Go was available).
PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "graphmill")


def find_binary(binary=None):
    """Returns the path of the graphmill program: ``binary`` if given, else
    ``$GRAPHMILL_BIN``, else the one built into the package, else
    ``graphmill`` found on ``PATH``."""
    cand = binary or os.environ.get("GRAPHMILL_BIN")
    if cand:
        if os.sep in cand or os.path.exists(cand):
            if not (os.path.isfile(cand) and os.access(cand, os.X_OK)):
                raise GraphmillError(f"graphmill program {cand!r} is not an executable file")
            return os.path.abspath(cand)
        found = shutil.which(cand)
        if found is None:
            raise GraphmillError(f"graphmill program {cand!r} not found on PATH")
        return found
    if os.path.isfile(PACKAGED) and os.access(PACKAGED, os.X_OK):
        return PACKAGED
    found = shutil.which("graphmill")
    if found is None:
        raise GraphmillError(
            "the graphmill program is not in the package nor on PATH: install the package where "
            "Go >= 1.26 is on PATH (pip install ./python builds it in), install a wheel built by "
            "python/scripts/build_wheel.sh, or build it with 'go build -o ~/bin/graphmill "
            "./cmd/graphmill' and put it on PATH or in $GRAPHMILL_BIN"
        )
    return found


def run_json(args, binary=None, timeout=600):
    """Runs ``graphmill ARGS...`` and parses its standard output as JSON.
    A failure raises GraphmillError carrying the program's error message."""
    exe = find_binary(binary)
    try:
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise GraphmillError(f"graphmill {' '.join(args)}: no answer in {timeout} s") from e
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise GraphmillError(f"graphmill {' '.join(args)}: {msg[-1] if msg else 'exit status %d' % p.returncode}")
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise GraphmillError(f"graphmill {' '.join(args)}: output is not JSON: {p.stdout[:200]!r}") from e


def resolve_dataset(name_or_dir, binary=None):
    """Returns the directory of a dataset: ``name_or_dir`` itself when it is a
    directory, else the directory of the graphmill built-in dataset of that
    name (``"cora"``), which ``graphmill data info`` writes to graphmill's
    cache directory ($GRAPHMILL_CACHE) on first use."""
    p = os.fspath(name_or_dir)
    if os.path.isdir(p):
        return p
    if os.sep in p or p.startswith("."):
        raise GraphmillError(f"dataset {p!r}: no such directory")
    info = run_json(["data", "info", p, "--json"], binary=binary)
    d = info.get("dir")
    if not d:
        raise GraphmillError(f"graphmill data info {p} --json gave no directory")
    return d
