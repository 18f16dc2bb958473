"""memledger's commands as Python functions (docs/python.md).

Each function runs the bundled command with ``--json`` and reads its document (docs/json.md):
the numbers, intervals, verdicts and rules are the command's, computed once in C, never again
here. Keyword arguments are the command's options (``num_gpus=2`` is ``--num-gpus 2``); an
option the command does not know is refused by the command itself, whose one-line message the
raised MemLedgerError carries, so no keyword is ever dropped.
"""

import json as _json
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._command import binary

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "MemLedgerError", "Interval", "Figure", "Component", "Phase", "Ledger", "Fix", "Finding",
    "Diagnosis", "Change", "Plan", "FitResult", "ComparedFigure", "Comparison",
    "train", "infer", "diagnose", "fit", "compare", "run", "text", "flags",
]


class MemLedgerError(Exception):
    """The command refused its input (exit status 2) or could not run.

    ``str(e)`` is the command's one-line message (``memledger: train.yaml: No such file or
    directory``); ``returncode``, ``stderr`` (every line it wrote) and ``argv`` say the rest.
    """

    def __init__(self, message, returncode=None, stderr="", argv=()):
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.stderr = stderr
        self.argv = list(argv)


# ---- the options ---------------------------------------------------------------------------------

def flags(options: Mapping[str, Any]) -> List[str]:
    """Keyword arguments -> the command's options, in the order given.

    ``name=value`` is ``--name value`` with ``_`` written ``-``; ``True`` is the bare switch
    (``eval=True``: ``--eval``); ``None`` is "not given"; a list or tuple is comma-joined
    (``lora_target=["q_proj", "v_proj"]``), except ``set``, whose items (a mapping or
    ``"KEY=VALUE"`` strings) are each a ``--set``. ``False`` raises ValueError: a switch has no
    "off" form, and leaving it out would not override a config file that turns it on.
    """
    out = []
    for name, value in options.items():
        if value is None:
            continue
        opt = "--" + name.replace("_", "-")
        if name == "set":
            items = value.items() if isinstance(value, Mapping) else [(v, None) for v in _seq(value)]
            for k, v in items:
                out += ["--set", str(k) if v is None else "%s=%s" % (k, _word(v))]
            continue
        if value is True:
            out.append(opt)
        elif value is False:
            raise ValueError("memledger: %s=False: %s is a switch with no 'off' form; leave it out "
                             "(or turn the setting off in the config, e.g. set={...: 'false'})" % (name, opt))
        elif isinstance(value, (list, tuple)):
            out += [opt, ",".join(_word(v) for v in value)]
        else:
            out += [opt, _word(value)]
    return out


def _seq(value):
    return [value] if isinstance(value, str) else list(value)


def _word(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return os.fspath(v) if isinstance(v, os.PathLike) else str(v)


# ---- running the command ---------------------------------------------------------------------------

def _run(argv, stdin=None, cwd=None, env=None):
    exe = binary()
    full = [exe] + [os.fspath(a) for a in argv]
    try:
        p = subprocess.run(full, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           cwd=cwd, env=env)
    except OSError as e:
        raise MemLedgerError("memledger: cannot run %s: %s" % (exe, e), None, "", full) from e
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode not in (0, 1):
        lines = [ln for ln in err.splitlines() if ln.strip()]
        msg = lines[-1] if lines else "memledger: exit status %d" % p.returncode
        if p.returncode < 0:
            msg = "memledger: killed by signal %d (%s)" % (-p.returncode, msg)
        raise MemLedgerError(msg, p.returncode, err, full)
    return p.returncode, out, err


def run(command: str, *args: PathLike, stdin: Optional[bytes] = None, cwd: Optional[PathLike] = None,
        **options) -> Dict[str, Any]:
    """Any command with ``--json``: its document as a dict (docs/json.md), plus ``_exit`` (0 or 1)
    and ``_stderr`` (the notes it wrote on stderr, as lines)."""
    rc, out, err = _run([command] + list(args) + flags(options) + ["--json"], stdin, cwd)
    try:
        doc = _json.loads(out)
    except ValueError as e:
        raise MemLedgerError("memledger %s: no JSON document on stdout (%s)" % (command, e), rc, err) from e
    doc["_exit"] = rc
    doc["_stderr"] = [ln for ln in err.splitlines() if ln.strip()]
    return doc


def text(command: str, *args: PathLike, stdin: Optional[bytes] = None, cwd: Optional[PathLike] = None,
         **options) -> str:
    """Any command's report as the terminal shows it (translated under LANG), as one string."""
    return _run([command] + list(args) + flags(options), stdin, cwd)[1]


# ---- the ledger ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """The 80 % prediction interval of a figure, in bytes (docs/ledger.md, "The interval")."""
    low: int
    high: int


@dataclass(frozen=True)
class Figure:
    """One of the three figures users meet: bytes and, for training, its interval."""
    bytes: int
    interval: Optional[Interval]

    @property
    def gib(self) -> float:
        return self.bytes / 2**30


@dataclass(frozen=True)
class Component:
    """One ledger entry: ``per_gpu.components[]``."""
    id: str
    bytes: int
    phases: Tuple[str, ...]
    figure: str
    rule: str
    source: str


@dataclass(frozen=True)
class Phase:
    phase: str
    allocated_bytes: int
    reserved_bytes: int


@dataclass(frozen=True)
class Ledger:
    """``memledger train`` or ``infer``: one GPU's ledger.

    ``allocated``, ``reserved``, ``device``: the three figures (the verdict follows the device
    figure's interval); ``verdict``: ``fits``, ``tight``, ``does not fit`` (train); ``raw``: the
    whole JSON document, for the keys not lifted here (``kv_cache``, ``serving``, ``host``).
    """
    command: str
    model: Dict[str, Any]
    gpu: Dict[str, Any]
    settings: Dict[str, Any]
    allocated: Figure
    reserved: Figure
    device: Figure
    capacity_bytes: int
    headroom_bytes: int
    deficit_bytes: Optional[int]
    fits: bool
    verdict: Optional[str]
    may_fit: Optional[bool]
    peak_phase: str
    interval_group: Optional[str]
    components: Tuple[Component, ...]
    phases: Tuple[Phase, ...]
    notes: Tuple[str, ...]
    warnings: Tuple[str, ...]
    messages: Tuple[str, ...] = ()
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _interval(iv, key):
    if not iv or key not in iv:
        return None
    lo, hi = iv[key]
    return Interval(int(lo), int(hi))


def _ledger(command, doc):
    g = doc["per_gpu"]
    iv = g.get("interval")
    return Ledger(
        command=command, model=doc.get("model", {}), gpu=doc.get("gpu", {}), settings=doc.get("settings", {}),
        allocated=Figure(g["peak_allocated_bytes"], _interval(iv, "peak_allocated_bytes")),
        reserved=Figure(g["peak_reserved_bytes"], _interval(iv, "peak_reserved_bytes")),
        device=Figure(g["device_used_bytes"], _interval(iv, "device_used_bytes")),
        capacity_bytes=doc.get("gpu", {}).get("capacity_bytes"), headroom_bytes=g.get("headroom_bytes"),
        deficit_bytes=g.get("deficit_bytes"), fits=bool(g.get("fits")), verdict=g.get("verdict"),
        may_fit=g.get("may_fit"), peak_phase=g.get("peak_phase"), interval_group=g.get("interval_group"),
        components=tuple(Component(c["id"], c["bytes"], tuple(c["phases"]), c["figure"], c["rule"], c["source"])
                         for c in g.get("components", [])),
        phases=tuple(Phase(p["phase"], p["allocated_bytes"], p["reserved_bytes"]) for p in doc.get("phases", [])),
        notes=tuple(doc.get("notes", [])), warnings=tuple(doc.get("warnings", [])),
        messages=tuple(doc.get("_stderr", [])), raw=doc)


def train(model: Optional[PathLike] = None, *, config: Optional[PathLike] = None, gpu: Optional[str] = None,
          cwd: Optional[PathLike] = None, **options) -> Ledger:
    """``memledger train``: the per-GPU training ledger.

    ``memledger.train(config="train.yaml", gpu="rtx4090", num_gpus=2, seq=4096)``. MODEL is a
    built-in name, a hub id, a ``config.json`` or a directory holding one. Every option of
    ``memledger help train`` is a keyword (``deepspeed=``, ``method=``, ``lora_rank=``, ``set=``...).
    A relative ``deepspeed:`` in the YAML is found from ``run_dir`` or ``cwd`` (default: here), as
    LLaMA-Factory finds it.
    """
    args = [model] if model is not None else []
    doc = run("train", *args, config=config, gpu=gpu, cwd=cwd, **options)
    return _ledger("train", doc)


def infer(model: Optional[PathLike] = None, *, gpu: Optional[str] = None, cwd: Optional[PathLike] = None,
          **options) -> Ledger:
    """``memledger infer``: the inference / serving ledger (``engine="vllm"``, ``max_model_len=``, ...).

    Serving figures (``kv_cache``, ``serving``) are in ``raw``; infer's figures carry no interval.
    """
    args = [model] if model is not None else []
    doc = run("infer", *args, gpu=gpu, cwd=cwd, **options)
    return _ledger("infer", doc)


# ---- diagnose --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fix:
    action: str
    setting: Optional[str]
    cost: Optional[float]
    saves_bytes: Optional[int]
    fits: Optional[bool]
    note: Optional[str]


@dataclass(frozen=True)
class Finding:
    cause: str
    confidence: float
    why: str
    fixes: Tuple[Fix, ...]


@dataclass(frozen=True)
class Diagnosis:
    """``memledger diagnose``: the events found, the causes ranked, the fixes.

    ``found`` is False when the log holds no out-of-memory event (the command's exit status 1).
    """
    found: bool
    events: Tuple[Dict[str, Any], ...]
    primary: Optional[int]
    findings: Tuple[Finding, ...]
    cannot_tell: Optional[bool]
    checks: Tuple[str, ...]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def diagnose(text_or_path: Union[PathLike, Sequence[PathLike], bytes, None] = None, *, text: Optional[str] = None,
             cwd: Optional[PathLike] = None, **options) -> Diagnosis:
    """``memledger diagnose``: an OOM log, by path (one, or a list) or as its text.

    A ``str`` that names an existing file, or any ``os.PathLike``, is read as a path; any other
    ``str`` (or ``bytes``, or ``text=``) is the log itself, given on standard input. Training
    configs (``config=``, ``deepspeed=``, ``gpu=``, ``num_gpus=``) price the fixes from the ledger.
    """
    args, stdin = [], None
    if text is not None:
        stdin = text.encode("utf-8")
    elif isinstance(text_or_path, bytes):
        stdin = text_or_path
    elif isinstance(text_or_path, os.PathLike):
        args = [text_or_path]
    elif isinstance(text_or_path, str):
        where = os.path.join(os.fspath(cwd), text_or_path) if cwd else text_or_path
        if "\n" not in text_or_path and os.path.exists(where):
            args = [text_or_path]
        else:
            stdin = text_or_path.encode("utf-8")
    elif text_or_path is not None:
        args = list(text_or_path)
    if stdin is not None:
        args = ["-"]
    doc = run("diagnose", *args, stdin=stdin, cwd=cwd, **options)
    findings = tuple(
        Finding(f["cause"], f["confidence"], f.get("why", ""),
                tuple(Fix(x.get("action"), x.get("setting"), x.get("cost"), x.get("saves_bytes"), x.get("fits"),
                          x.get("note")) for x in f.get("fixes", [])))
        for f in doc.get("findings", []))
    return Diagnosis(found=doc["_exit"] == 0 and bool(doc.get("events")), events=tuple(doc.get("events", [])),
                     primary=doc.get("primary"), findings=findings, cannot_tell=doc.get("cannot_tell"),
                     checks=tuple(doc.get("checks", [])), raw=doc)


# ---- fit -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Change:
    """One setting a plan changes: where (``env``, ``yaml``, ``deepspeed``, ``launch``, ``engine``)."""
    where: str
    key: str
    old: Optional[str]
    new: Optional[str]


@dataclass(frozen=True)
class Plan:
    """One of fit's plans, cheapest first. Training plans carry ``cost`` (slowdown as a fraction of
    step time) and the figures; serving plans (``serve=True``) carry ``command`` and ``engine_args``."""
    summary: Optional[str]
    cost: Optional[float]
    device_used_bytes: Optional[int]
    headroom_bytes: Optional[int]
    changes: Tuple[Change, ...]
    command: Optional[str] = None
    engine_args: Optional[Dict[str, Any]] = None


@dataclass(frozen=True)
class FitResult:
    base_fits: bool
    plans: Tuple[Plan, ...]
    capacity_bytes: Optional[int]
    target_bytes: Optional[int]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def cheapest(self) -> Optional[Plan]:
        return self.plans[0] if self.plans else None


def fit(model: Optional[PathLike] = None, *, config: Optional[PathLike] = None, gpu: Optional[str] = None,
        cwd: Optional[PathLike] = None, **options) -> FitResult:
    """``memledger fit``: the cheapest changes that make the run fit (train's options, or
    ``serve=True`` with infer's). ``write=DIR`` also writes the patched files, as the command does."""
    args = [model] if model is not None else []
    doc = run("fit", *args, config=config, gpu=gpu, cwd=cwd, **options)
    plans = tuple(
        Plan(p.get("summary"), p.get("cost"), p.get("device_used_bytes"), p.get("headroom_bytes"),
             tuple(Change(c.get("in"), c.get("key"), c.get("from"), c.get("to")) for c in p.get("changes", [])),
             p.get("command"), p.get("engine_args"))
        for p in doc.get("plans", []))
    return FitResult(bool(doc.get("base_fits")), plans, doc.get("capacity_bytes"), doc.get("target_bytes"), doc)


# ---- compare ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ComparedFigure:
    id: str
    measured_bytes: Optional[int]
    ledger_bytes: Optional[int]
    error_permille: Optional[int]
    within_tolerance: Optional[bool]
    revisit: Optional[str]


@dataclass(frozen=True)
class Comparison:
    """``memledger compare``: a measured run (memledger_hook's JSONL) against the ledger."""
    figures: Tuple[ComparedFigure, ...]
    figures_off: int
    tolerance_percent: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def compare(measured: PathLike, model: Optional[PathLike] = None, *, cwd: Optional[PathLike] = None,
            **options) -> Comparison:
    """``memledger compare MEASURED.jsonl [MODEL] [train options]``."""
    args = [measured] + ([model] if model is not None else [])
    doc = run("compare", *args, cwd=cwd, **options)
    figs = tuple(ComparedFigure(f["id"], f.get("measured_bytes"), f.get("ledger_bytes"), f.get("error_permille"),
                                f.get("within_tolerance"), f.get("revisit")) for f in doc.get("figures", []))
    return Comparison(figs, doc.get("figures_off", 0), doc.get("tolerance_percent"), doc)
