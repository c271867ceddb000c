"""The results layer: each file that the book or a run reads back is written with a record of what determined it,
and read back with the reasons it is stale.

A page record is declared once, as a :class:`PageRecord` in the module that computes it; ``python -m MODULE``
writes it (:meth:`PageRecord.main`), and a page only reads it (:meth:`PageRecord.read`: the record and why it is
stale). Each record holds its ``command``, the ``seconds`` it took and a ``freshness`` block: the ``settings`` it
ran with, the :func:`code_digest` of every module of the package that its module imports, directly or not
(:func:`import_closure`), which no edit of a docstring or comment changes, and the SHA-256 of each of its
``inputs``, the files it was computed from (by path under the results folder). Inputs are files git tracks
(:func:`committed_files`), so that a clean clone finds every record fresh. A record that cannot be read, or whose
blocks or numbers have the wrong shape, counts as missing; files are written atomically, a set of them all
together or none (:func:`write_files`). :func:`stale_reasons` compares two freshness blocks; a run's
``derived.json`` (:mod:`shapley.pipeline.rundir.derived`) says why its derived files are stale through it too.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import io
import json
import os
import subprocess
import time
import tokenize
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULTS = Path("results")
"""The results folder, relative to the repository root (where ``make`` runs)."""

PACKAGE = Path(__file__).resolve().parents[1]
"""The folder of the ``shapley`` package, whose modules :func:`import_closure` follows and :func:`source_digests`
hashes."""


def sha256_file(path: str | os.PathLike[str]) -> str | None:
    """The SHA-256 (hex) of the file ``path``'s bytes, read in chunks; None when there is no such file."""
    if not Path(path).is_file():
        return None
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def module_source(name: str) -> Path | None:
    """The source file of the package's module ``name`` (dotted, e.g. ``shapley.core.psd``) under
    :data:`PACKAGE`, None when ``name`` is not one (a function or class imported from a module, or another
    package's module).

    Examples:
        >>> module_source("shapley.core.psd").relative_to(PACKAGE).as_posix(), module_source("numpy")
        ('core/psd.py', None)
    """
    head, *parts = name.split(".")
    if head != PACKAGE.name:
        return None
    base = PACKAGE.joinpath(*parts)
    for path in (base.with_name(base.name + ".py") if parts else None, base / "__init__.py"):
        if path is not None and path.is_file():
            return path
    return None


def _version(path: Path) -> tuple[int, int]:
    """What changes when the file ``path`` is edited: its modification time and size (the key of the caches)."""
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=1024)
def _imported(name: str, path: Path, version: tuple[int, int]) -> frozenset[str]:
    """The dotted names of the package's modules that the module ``name`` (source ``path``, at ``version``: read
    once for each) imports anywhere in its code: ``from P import x`` names ``P.x`` when that is a module, else
    ``P``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found |= {f"{base}.{a.name}" if module_source(f"{base}.{a.name}") else base for a in node.names}
    return frozenset(m for m in found if module_source(m) is not None)


def import_closure(*roots: str) -> list[str]:
    """``roots`` and every module of the package that they import, directly or through each other, sorted: the
    code that determines what a computation in ``roots`` returns.

    Examples:
        >>> "shapley.core.psd" in import_closure("shapley.theory.psd_results")
        True
    """
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        path = module_source(name)
        if path is None:
            raise ValueError(f"{name!r} is not a module of the {PACKAGE.name} package")
        if name not in seen:
            seen.add(name)
            todo.extend(sorted(_imported(name, path, _version(path)) - seen))
    return sorted(seen)


def code_digest(path: Path) -> str:
    """The SHA-256 of a Python file's code: its tokens without comments, docstrings (and other bare string
    statements) and line layout, the indentation kept as structure. Rewording a docstring or a comment, or
    moving line breaks and blank lines, leaves it unchanged; any change of a token that runs changes it.

    Examples:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     a, b, c = Path(d, "a.py"), Path(d, "b.py"), Path(d, "c.py")
        ...     _ = a.write_text("def f(x):\\n    'Doc.'\\n    return x  # note\\n")
        ...     _ = b.write_text("def f(x):\\n    'Reworded.'\\n\\n    return x\\n")
        ...     _ = c.write_text("def f(x):\\n    'Doc.'\\n    return -x\\n")
        ...     code_digest(a) == code_digest(b) != code_digest(c)
        True
    """
    source = path.read_text(encoding="utf-8")
    bare_strings = [
        ((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset))
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
    ]
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    parts = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in layout or any(start <= tok.start and tok.end <= end for start, end in bare_strings):
            continue
        structural = tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE)
        parts.append(tokenize.tok_name[tok.type] if structural else tok.string)
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1024)
def _code_digest_of(path: Path, version: tuple[int, int]) -> str:
    """:func:`code_digest` of ``path``, computed once for each ``version`` of the file."""
    return code_digest(path)


def source_digests(modules: Iterable[str]) -> dict[str, str | None]:
    """The :func:`code_digest` of the source file of each of the package's ``modules`` (dotted names), by name.

    Examples:
        >>> [len(sha) for sha in source_digests(["shapley.results.records"]).values()]
        [64]
    """
    digests: dict[str, str | None] = {}
    for name in modules:
        path = module_source(name)
        if path is None:
            raise ValueError(f"no source file for module {name!r}")
        digests[name] = _code_digest_of(path, _version(path))
    return digests


def committed_files(folder: Path) -> list[str]:
    """The files under ``folder`` (paths relative to it, sorted) that git tracks and that are there. Outside a git
    repository, every file but hidden ones (a run's ``.lock``)."""
    git = ["git", "-C", str(folder), "ls-files", "--cached", "-z"]
    listed = subprocess.run(git, capture_output=True, text=True)
    if listed.returncode == 0:
        return sorted({p for p in listed.stdout.split("\0") if p and (folder / p).is_file()})
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name[0] != ".")


def write_all(path: Path, data: bytes, flags: int) -> None:
    """Write ``data`` to the file ``path`` opened with ``flags`` (``os.write`` until all is written), then fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_files(texts: Mapping[Path, str | bytes]) -> None:
    """Write each text (UTF-8) or bytes to its path, all together or none: each goes to a temporary file in its
    path's folder first, and only when all are written does each replace its file (``os.replace``, atomic per
    file). A failure before that (e.g. a full disk, whose message names the file, not the temporary one) leaves
    every file as it was and no temporary file behind. A symbolic link is written through (the link stays, its
    target is replaced); a folder, pipe or device is refused (``ValueError``)."""
    temps: dict[Path, Path] = {}
    try:
        for path, text in texts.items():
            p = Path(os.path.realpath(path)) if path.is_symlink() else path
            if p.exists() and not p.is_file():
                raise ValueError(
                    f"{p} is not a regular file (a folder, pipe or device); it is not replaced: give a file name"
                )
            p.parent.mkdir(parents=True, exist_ok=True)
            temps[p] = p.with_name(f".{p.name}.tmp-{os.getpid()}")
            try:
                write_all(temps[p], text.encode("utf-8") if isinstance(text, str) else text, os.O_TRUNC)
            except OSError as exc:
                raise OSError(exc.errno, f"cannot write {p}: {exc.strerror or exc}") from exc
        for p, tmp in temps.items():
            os.replace(tmp, p)
            with contextlib.suppress(OSError):  # the rename itself made durable
                fd = os.open(p.parent, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
    finally:  # written and renamed, or failed (a full disk, an interrupt): no temporary file is left behind
        for tmp in temps.values():
            with contextlib.suppress(OSError):
                tmp.unlink()


def has_keys(**types: type | tuple[type, ...]) -> Callable[[Mapping[str, Any]], None]:
    """A :attr:`PageRecord.check` that the record holds each key of ``types`` with a value of that JSON type.

    Examples:
        >>> has_keys(runs=dict)({"runs": []})
        Traceback (most recent call last):
        ...
        TypeError: 'runs' holds a list, not dict
    """

    def check(record: Mapping[str, Any]) -> None:
        for key, kind in types.items():
            if not isinstance(record[key], kind):
                names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
                raise TypeError(f"{key!r} holds a {type(record[key]).__name__}, not {names}")

    return check


def _check_envelope(record: Any) -> None:
    """Raise unless ``record`` is an object with the command, seconds and freshness block that every record has."""
    if not isinstance(record, dict):
        raise TypeError(f"the record is a {type(record).__name__}, not an object")
    has_keys(command=str, seconds=(int, float), freshness=dict)(record)
    has_keys(settings=object, code=dict, inputs=dict)(record["freshness"])


def _plain(value: Any) -> Any:
    """A numpy array or scalar as JSON holds it (the ``default`` of ``json.dumps``)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def stale_reasons(was: Any, now: Mapping[str, Any]) -> list[str]:
    """Why the freshness block ``was`` (as a record holds it) no longer stands for ``now``, the block of what the
    code would compute now: other ``settings``, or changed digests in any other part (``code``, ``inputs``: name ->
    digest); [] when it is fresh.

    Examples:
        >>> now = {"settings": {"x": 1}, "inputs": {"a.csv": "0f"}}
        >>> stale_reasons(now, now), stale_reasons({**now, "inputs": {}}, now), stale_reasons(None, now)
        ([], ['inputs changed since the record was computed: a.csv'], ['the record has no freshness block'])
    """
    if not isinstance(was, Mapping):
        return ["the record has no freshness block"]
    reasons = []
    if "settings" in now and was.get("settings") != now["settings"]:
        recorded, current = (json.dumps(s, sort_keys=True) for s in (was.get("settings"), now["settings"]))
        reasons.append(f"settings differ: recorded {recorded}, now {current}")
    for part in sorted(now.keys() - {"settings"}):
        old, new = was.get(part) or {}, now[part]
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        if changed:
            reasons.append(f"{part} changed since the record was computed: {', '.join(changed)}")
    return reasons


@dataclass(frozen=True)
class PageRecord:
    """One committed page record: where it lives, what determines it and how it is computed.

    Examples:
        >>> toy = PageRecord("theory/toy.json", "shapley.results.records", lambda settings, results: {},
        ...                  lambda record: "", settings={"x": 1})
        >>> record = {"freshness": toy.freshness(RESULTS)}
        >>> toy.stale_reasons(record, RESULTS), toy.command, toy.code_modules
        ([], 'python -m shapley.results.records', ['shapley.results.records'])
        >>> toy.stale_reasons({"freshness": {**record["freshness"], "settings": {"x": 2}}}, RESULTS)
        ['settings differ: recorded {"x": 2}, now {"x": 1}']
    """

    path: str
    """The record's path under the results folder, e.g. ``theory/psd_searches.json``."""
    module: str
    """The module that declares it, which ``python -m`` runs to write it (``__spec__.name`` there: ``__name__``
    reads ``'__main__'`` under ``python -m``). Its import closure is the code that determines the numbers."""
    compute: Callable[[Mapping[str, Any], Path], dict[str, Any]]
    """(settings, results folder) -> the record's numbers, ready for JSON."""
    summary: Callable[[Mapping[str, Any]], str]
    """The record -> what ``make`` prints after writing it."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """The settings the committed record must have been computed with."""
    inputs: Callable[[Path], Iterable[str]] = lambda results: ()
    """The results folder -> the files git tracks there (paths under it) that the numbers are computed from."""
    check: Callable[[Mapping[str, Any]], None] = lambda record: None
    """Raises ``KeyError``, ``TypeError`` or ``ValueError`` when a record's numbers do not have the shape its
    readers expect (e.g. :func:`has_keys`); such a record counts as missing."""
    command: str = ""
    """The command that writes the record under the results folder; ``python -m MODULE`` when not given."""

    def __post_init__(self) -> None:
        if not self.command:
            object.__setattr__(self, "command", f"python -m {self.module}")

    @property
    def code_modules(self) -> list[str]:
        """The modules whose source the ``code`` digests cover: :func:`import_closure` of :attr:`module`. A
        :attr:`module` outside the package (a script beside it, e.g. ``scripts.crosscheck_lm_polygraph``) contributes
        the package modules it imports; its own file is then one of the inputs."""
        if module_source(self.module) is not None:
            return import_closure(self.module)
        script = PACKAGE.parent.joinpath(*self.module.split(".")).with_suffix(".py")
        return import_closure(*sorted(_imported(self.module, script, _version(script))))

    def freshness(self, results: Path, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The freshness block of the record computed now from ``results`` with ``settings`` (default
        :attr:`settings`; as JSON reads them back). A missing input's digest is None."""
        return {
            "settings": json.loads(json.dumps(self.settings if settings is None else settings)),
            "code": source_digests(self.code_modules),
            "inputs": {path: sha256_file(results / path) for path in self.inputs(results)},
        }

    def text(self, block: Mapping[str, Any], seconds: float, numbers: Mapping[str, Any]) -> str:
        """The record as its file holds it: the command, the freshness ``block``, the ``seconds`` the computation
        took and its ``numbers``."""
        record = {"command": self.command, "freshness": block, "seconds": round(seconds, 1), **numbers}
        return json.dumps(record, indent=1, default=_plain) + "\n"

    def write(self, results: str | os.PathLike[str] = RESULTS, settings: Mapping[str, Any] | None = None) -> Path:
        """Compute the record from ``results`` with ``settings`` (default :attr:`settings`) and write it
        atomically (:meth:`text`) to the file :attr:`path` under ``results``."""
        root, settings = Path(results), self.settings if settings is None else settings
        block = self.freshness(root, settings)  # the inputs as they are read
        start = time.perf_counter()
        numbers = self.compute(settings, root)
        write_files({root / self.path: self.text(block, time.perf_counter() - start, numbers)})
        return root / self.path

    def load(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """The record at ``path``: the file itself or the folder holding it. A missing record, or one that cannot
        be read or has the wrong shape (a truncated file, a missing key, a wrong type), raises
        ``FileNotFoundError`` naming the command that writes it."""
        p = Path(path)
        p = p / Path(self.path).name if p.is_dir() else p
        again = f"run `{self.command}` (`make results` runs every record)"
        if not p.is_file():
            raise FileNotFoundError(f"{p} is missing: {again}")
        try:
            record = json.loads(p.read_text(encoding="utf-8"))
            _check_envelope(record)
            self.check(record)
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise FileNotFoundError(
                f"{p} is unreadable ({type(exc).__name__}: {exc}), as good as missing: {again}"
            ) from exc
        return dict(record)

    def stale_reasons(self, record: Mapping[str, Any], results: str | os.PathLike[str]) -> list[str]:
        """Why ``record`` no longer stands for what the code computes now from the results folder ``results``:
        other settings, or changed code or inputs (:func:`stale_reasons`); [] when it is fresh."""
        return stale_reasons(record.get("freshness"), self.freshness(Path(results)))

    def read(self, results: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, list[str]]:
        """The record under the results folder ``results`` and why it is stale ([] when it is fresh); None and
        why when it is missing or unreadable (:meth:`load`)."""
        try:
            record = self.load(Path(results) / self.path)
        except FileNotFoundError as exc:
            return None, [str(exc)]
        return record, self.stale_reasons(record, results)

    def fresh(self, results: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The record under the results folder ``results`` when it is there and fresh, else None."""
        record, reasons = self.read(results)
        return None if reasons else record

    def main(self) -> int:
        """``python -m MODULE``: write the record computed from the results folder (:data:`RESULTS`) to its
        :attr:`path` there, and print the path, the seconds it took and its summary."""
        path = self.write()
        record = self.load(path)
        print(f"wrote {path} in {record['seconds']} s: {self.summary(record)}")
        return 0
