"""Shared set-up of the wheel's tests (scripts/test-wheel.sh runs them in a fresh venv).

ML_SOURCE_DIR: the checkout (the seed case, CMakeLists.txt's version). MEMLEDGER_BUILD_BIN, when
set: the command built by `make` from the same tree, which the wheel's command must agree with.
"""

import os
import shutil

import pytest

ROOT = os.environ.get("ML_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SEED = os.path.join(ROOT, "examples", "seed-case")
SEED_ARGS = ["--config", "train.yaml", "--gpu", "dcu-16g", "--num-gpus", "4"]


@pytest.fixture
def seed_dir():
    return SEED


@pytest.fixture
def command():
    """The `memledger` pip put on PATH (the console script), as a user types it."""
    exe = shutil.which("memledger")
    assert exe, "no memledger on PATH"
    return exe
