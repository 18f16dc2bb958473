"""memledger: where every byte of GPU memory goes when fine-tuning and serving LLMs.

The compiled command (``memledger`` on PATH once the wheel is installed), its commands as Python
functions that return typed ledgers, a Hugging Face Trainer callback that checks a run before its
first step, and the PyTorch hook that measures it (docs/python.md)::

    import memledger
    led = memledger.train(config="train.yaml", gpu="rtx4090", num_gpus=2)
    print(led.device.gib, led.device.interval, led.verdict)

    from memledger import MemLedgerCallback
    trainer = Trainer(..., callbacks=[MemLedgerCallback(gpu="rtx4090")])
"""

from ._command import binary
from .api import (Change, ComparedFigure, Comparison, Component, Diagnosis, Figure, Finding, Fix, FitResult,
                  Interval, Ledger, MemLedgerError, Phase, Plan, compare, diagnose, fit, flags, infer, run, text,
                  train)

__all__ = [
    "__version__", "binary", "MemLedgerError", "Interval", "Figure", "Component", "Phase", "Ledger", "Fix",
    "Finding", "Diagnosis", "Change", "Plan", "FitResult", "ComparedFigure", "Comparison", "train", "infer",
    "diagnose", "fit", "compare", "run", "text", "flags", "MemLedgerCallback", "hook",
]


def _version():
    # The installed wheel's metadata (CMakeLists.txt's version, pyproject.toml); in a checkout, the
    # hook's, which tests/install holds to it. Not imported eagerly: the hook imports torch, and
    # the `memledger` script must start as fast as the command.
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("memledger")
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover - Python < 3.8
        pass
    import memledger_hook
    return memledger_hook.__version__


def __getattr__(name):
    if name == "__version__":
        return _version()
    # The callback imports transformers' TrainerCallback: loaded only when asked for.
    if name == "MemLedgerCallback":
        from .callback import MemLedgerCallback
        return MemLedgerCallback
    if name == "hook":
        import memledger_hook
        return memledger_hook
    raise AttributeError("module 'memledger' has no attribute %r" % name)
