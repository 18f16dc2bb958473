"""The bundled command: where it is, and the `memledger` console script that runs it.

The wheel carries the compiled command as ``memledger/bin/memledger`` with its catalogs in
``memledger/share/locale`` (cmake/MLWheel.cmake); the ``memledger`` script pip puts on PATH is
``main`` below, which replaces the Python process with that binary (``os.execv``), so arguments,
standard streams, signals and the exit status are the command's own.
"""

import os
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def binary():
    """The path of the memledger command this package runs.

    ``MEMLEDGER_BIN`` when set (a build tree's ``build/memledger``); else the one inside this
    package (an installed wheel); else ``memledger`` on PATH (this directory on PYTHONPATH in a
    checkout, after ``make install``). Raises FileNotFoundError naming what was tried.
    """
    env = os.environ.get("MEMLEDGER_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise FileNotFoundError("memledger: MEMLEDGER_BIN=%s is not an executable file" % env)
        return env
    own = os.path.join(_HERE, "bin", "memledger")
    if os.access(own, os.X_OK):
        return own
    found = shutil.which("memledger")
    # The console script of this package is not the command: never run ourselves.
    if found and not _is_script(found):
        return found
    raise FileNotFoundError("memledger: the command is not in this package (%s) nor on PATH; "
                            "install the wheel (pip install memledger) or set MEMLEDGER_BIN" % own)


def _is_script(path):
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def main():
    """The ``memledger`` console script: exec the bundled command with our arguments."""
    try:
        exe = binary()
    except FileNotFoundError as e:
        print(str(e), file=sys.stderr)
        return 2
    os.execv(exe, [exe] + sys.argv[1:])
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
