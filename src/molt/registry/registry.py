"""The registry: what molt is made of and how it got there.

Records are immutable: bases, datasets, training jobs, adapter revisions, routers, HCP versions,
(model, harness) pairs and evaluations, each naming its parents. Artefacts are keyed by their
content (``adapter-<hash>``), so registering the same files twice returns the same record (the
first registration's parents stay). Aliases (``production``, ``candidate``, any name) are the only
thing that moves, and every move is recorded with who made it and why; ``rollback`` moves an
alias back to where its last move took it from.

Writes are crash-safe in this order: files into the content store (whole or not at all), then
one transaction for the record and its edges. A crash in between leaves an orphan folder and no
record (``gc`` removes it), never a record that points at missing files.
"""

import hashlib
import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from molt.registry.database import for_writing, open_database
from molt.registry.schema import KINDS, Alias, AliasMove, Edge, Record
from molt.registry.store import ContentStore

CRASH_ENV = "MOLT_REGISTRY_CRASH_AT"
"""Test hook: the name of a point in ``add`` where the process dies (``stored``, ``before-commit``)."""
ADAPTER_FILES = ["adapter_config.json", "adapter_model.safetensors"]


class RegistryError(ValueError):
    """A reference that names nothing, an ambiguous prefix, a missing parent, nothing to roll back to."""


@dataclass(frozen=True)
class Entry:
    """One record, detached from the database."""

    id: str
    kind: str
    name: str
    content_hash: str | None
    created_at: datetime
    attributes: dict
    parents: dict[str, str] = field(default_factory=dict)
    """Role → parent record id."""


@dataclass(frozen=True)
class Move:
    id: int
    alias: str
    from_id: str | None
    to_id: str
    actor: str
    reason: str
    at: datetime


@dataclass
class Lineage:
    entry: Entry
    role: str
    parents: list["Lineage"]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Registry:
    def __init__(self, url: str | None = None, store: ContentStore | None = None):
        self.engine = open_database(url)
        self.store = store or ContentStore()
        self._session = sessionmaker(self.engine, expire_on_commit=False)
        self._writing = sessionmaker(for_writing(self.engine), expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    # -- records ---------------------------------------------------------------------------------
    def add(self, kind: str, name: str, attributes: dict, parents: dict[str, str] | None = None, content_hash: str | None = None) -> Entry:
        """Record one artefact or event; with ``content_hash``, the same content is the same record."""
        if kind not in KINDS:
            raise RegistryError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
        record_id = f"{kind}-{(content_hash or uuid.uuid4().hex)[:16]}"
        _crash_point("stored")
        try:
            with self._writing.begin() as session:
                existing = session.get(Record, record_id)
                if existing is not None:
                    return _entry(existing)
                for role, parent in (parents or {}).items():
                    if session.get(Record, parent) is None:
                        raise RegistryError(f"parent {role}={parent!r} is not in the registry")
                now = datetime.now(timezone.utc)
                record = Record(id=record_id, kind=kind, name=name, content_hash=content_hash, created_at=now, attributes=json.loads(json.dumps(attributes)))
                session.add(record)
                session.flush()
                session.add_all(Edge(child_id=record_id, parent_id=parent, role=role) for role, parent in (parents or {}).items())
                session.flush()
                _crash_point("before-commit")
        except IntegrityError:  # the same content, registered by another writer first
            pass
        return self.get(record_id)

    def add_base(self, source: str, **attributes) -> Entry:
        return self.add("base", source, {"source": source, **attributes}, content_hash=text_hash(f"base:{source}"))

    def add_dataset(self, path: Path, source: str, parents: dict[str, str] | None = None) -> Entry:
        content_hash = self.store.put_file(path, "data.jsonl")
        rows = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
        attributes = {"source": source, "rows": rows, "bytes": path.stat().st_size, "path": f"store/{content_hash}/data.jsonl"}
        return self.add("dataset", path.name, attributes, parents, content_hash)

    def add_job(self, name: str, recipe: str, hyperparameters: dict, metrics: dict, parents: dict[str, str] | None = None, made: str | None = None) -> Entry:
        """A training run: an event, never merged with another, unless ``made`` names the content
        it produced (a stored adapter's hash): the run that made those weights is one job, so
        recording it again (a stopped run resumed after it finished) adds nothing."""
        content_hash = text_hash(f"job made {made}") if made else None
        return self.add("job", name, {"recipe": recipe, "hyperparameters": hyperparameters, "metrics": metrics}, parents, content_hash)

    def add_trained_adapter(self, folder: Path, name: str, recipe: str, hyperparameters: dict, metrics: dict, parents: dict[str, str], started_from: str | None = None) -> Entry:
        """The adapter revision in ``folder`` and the job that trained it (``parents``: the job's
        base and data); its ``trained_by`` and ``started_from`` edges."""
        weights = self.store.put(folder, ADAPTER_FILES)
        job = self.add_job(name, recipe, hyperparameters, metrics, parents, made=weights)
        return self._stored_adapter(folder, name, {"base": parents["base"], "trained_by": job.id} | ({"started_from": started_from} if started_from else {}), weights)

    def add_adapter(self, folder: Path, name: str, parents: dict[str, str] | None = None) -> Entry:
        """A PEFT adapter folder: its two files go into the store; served as ``store/<hash>``."""
        return self._stored_adapter(folder, name, parents, self.store.put(folder, ADAPTER_FILES))

    def _stored_adapter(self, folder: Path, name: str, parents: dict[str, str] | None, content_hash: str) -> Entry:
        """The record of an adapter whose files are already in the store under ``content_hash``."""
        config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
        target = config.get("target_modules")
        attributes = {
            "rank": config.get("r"), "lora_alpha": config.get("lora_alpha"),
            "target_modules": sorted(target) if isinstance(target, list) else target, "revision": f"store/{content_hash}",
        }
        return self.add("adapter", name, attributes, parents, content_hash)

    def add_router(self, folder: Path, name: str, info: dict, parents: dict[str, str] | None = None) -> Entry:
        content_hash = self.store.put(folder)
        return self.add("router", name, {"folder": f"adapters/store/{content_hash}", "info": info}, parents, content_hash)

    def add_hcp(self, text: str, name: str, parents: dict[str, str] | None = None) -> Entry:
        return self.add("hcp", name, {"toml": text}, parents, text_hash(text))

    def add_pair(self, name: str, base: str, hcp: str, router: str | None, specialists: dict[str, str]) -> Entry:
        """One base, one HCP version, one router (None: the HCP's label scoring), one adapter revision per trained specialist."""
        members = {"base": base, "hcp": hcp, "router": router, "specialists": dict(sorted(specialists.items()))}
        parents = {"base": base, "hcp": hcp} | ({"router": router} if router else {}) | {f"specialist:{label}": a for label, a in specialists.items()}
        return self.add("pair", name, {"members": members}, parents, text_hash(json.dumps(members, sort_keys=True)))

    def add_evaluation(self, suite: str, subject: str, metrics: dict, verdict: str, parents: dict[str, str] | None = None, evidence: dict | None = None) -> Entry:
        """``metrics``: name → {"value", "low", "high"} (a confidence interval); ``evidence``: what
        the verdict rests on (per-case results, the test's settings)."""
        attributes = {"suite": suite, "metrics": metrics, "verdict": verdict} | ({"evidence": evidence} if evidence else {})
        return self.add("evaluation", suite, attributes, {"subject": subject, **(parents or {})})

    def get(self, ref: str) -> Entry:
        """A record by id, alias name, or unique id prefix."""
        with self._session() as session:
            return _entry(self._resolve(session, ref))

    def records(self, kind: str | None = None) -> list[Entry]:
        with self._session() as session:
            query = select(Record).order_by(Record.created_at, Record.id)
            if kind:
                query = query.where(Record.kind == kind)
            return [_entry(r) for r in session.scalars(query)]

    def lineage(self, ref: str) -> Lineage:
        """The record and, recursively, everything it was made from."""
        with self._session() as session:
            def walk(record: Record, role: str) -> Lineage:
                return Lineage(_entry(record), role, [walk(session.get(Record, e.parent_id), e.role) for e in record.parents])

            return walk(self._resolve(session, ref), "")

    def _resolve(self, session: Session, ref: str) -> Record:
        record = session.get(Record, ref)
        if record is None:
            alias = session.get(Alias, ref)
            record = session.get(Record, alias.record_id) if alias else None
        if record is None:
            matches = session.scalars(select(Record).where(Record.id.startswith(ref, autoescape=True)).limit(2)).all() if ref else []
            if len(matches) > 1:
                raise RegistryError(f"{ref!r} is the start of several record ids; give more of it")
            record = matches[0] if matches else None
        if record is None:
            raise RegistryError(f"no record or alias named {ref!r} (see `molt registry list`)")
        return record

    # -- aliases ---------------------------------------------------------------------------------
    def move(self, alias: str, ref: str, actor: str, reason: str) -> Move:
        """Point ``alias`` at ``ref``, recording the move; the alias row and the move commit together."""
        return self._moved(alias, actor, reason, lambda session, current: self._resolve(session, ref).id)

    def rollback(self, alias: str, actor: str, reason: str = "rollback") -> Move:
        """Move ``alias`` back to the record its last move took it from (read and moved in one transaction)."""

        def previous(session: Session, current: Alias | None) -> str:
            if current is None:
                raise RegistryError(f"no alias named {alias!r}")
            last = session.get(AliasMove, current.move_id)
            if last.from_id is None:
                raise RegistryError(f"alias {alias!r} has never pointed anywhere else: nothing to roll back to")
            return last.from_id

        return self._moved(alias, actor, reason, previous)

    def _moved(self, alias: str, actor: str, reason: str, target_of) -> Move:
        """``target_of(session, current alias row or None)`` names the new target, under the row's lock."""
        for _ in range(5):  # a concurrent first move of the same alias: retry on the row it created
            try:
                with self._writing.begin() as session:
                    current = session.get(Alias, alias, with_for_update=True)
                    target = target_of(session, current)
                    move = AliasMove(alias=alias, from_id=current.record_id if current else None, to_id=target, actor=actor, reason=reason, at=datetime.now(timezone.utc))
                    session.add(move)
                    session.flush()
                    if current is None:
                        session.add(Alias(name=alias, record_id=target, move_id=move.id))
                    else:
                        current.record_id, current.move_id = target, move.id
                    session.flush()
                    return _as_move(move)
            except IntegrityError:
                continue
        raise RegistryError(f"could not move alias {alias!r}: too many concurrent first moves")

    def aliases(self) -> dict[str, str]:
        with self._session() as session:
            return {a.name: a.record_id for a in session.scalars(select(Alias).order_by(Alias.name))}

    def resolve_alias(self, alias: str) -> tuple[str, Move] | None:
        """The alias's target and the move that put it there, read together (one row, one query)."""
        with self._session() as session:
            row = session.execute(select(Alias, AliasMove).join(AliasMove, Alias.move_id == AliasMove.id).where(Alias.name == alias)).first()
            return (row[0].record_id, _as_move(row[1])) if row else None

    def history(self, alias: str | None = None) -> list[Move]:
        with self._session() as session:
            query = select(AliasMove).order_by(AliasMove.id)
            if alias:
                query = query.where(AliasMove.alias == alias)
            return [_as_move(m) for m in session.scalars(query)]

    # -- files -----------------------------------------------------------------------------------
    def gc(self, min_age_s: float = 3600) -> list[Path]:
        """Remove stored folders that no record names (a crash between storing and committing),
        left alone while younger than ``min_age_s`` (a registration may be under way)."""
        with self._session() as session:
            referenced = set(session.scalars(select(Record.content_hash).where(Record.kind.in_(("adapter", "router", "dataset")))))
        return self.store.remove_unreferenced(referenced, min_age_s)


def _entry(record: Record) -> Entry:
    return Entry(record.id, record.kind, record.name, record.content_hash, as_utc(record.created_at), record.attributes, {e.role: e.parent_id for e in record.parents})


def _as_move(move: AliasMove) -> Move:
    return Move(move.id, move.alias, move.from_id, move.to_id, move.actor, move.reason, as_utc(move.at))


def as_utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were written in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os._exit(70)
