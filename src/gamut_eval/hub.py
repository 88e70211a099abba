"""Datasets and runs on the Hugging Face Hub: ``hf://datasets/OWNER/NAME[@REVISION]/PATH``.

Reading goes through ``huggingface_hub`` (the optional ``hub`` extra) into its own cache
(``HF_HOME`` / ``HF_HUB_CACHE``): :func:`download` fetches the file a URL names together
with every file under the folder that holds it (a dataset's images sit beside its
``dataset.jsonl``; for a file at the repository's root, that is the whole repository), or
every file under the folder it names (a run folder), and returns the local path of what
the URL names. :func:`push` uploads a local file or folder to a path in a
dataset repository, creating the repository if needed, in one commit; a run folder's verdict
store (``store.sqlite`` and its companions, a local cache) is left out.

``HF_ENDPOINT`` (read at each call) points at another Hub, ``HF_TOKEN`` holds the token; both
are huggingface_hub's own variables.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gamut_eval._extras import require_extra
from gamut_eval.errors import InputError

__all__ = ["CARD_MARKER", "PREFIX", "HubPath", "download", "is_hub_path", "parse_hub_path", "push"]

CARD_MARKER = "<!-- written by gamut-eval: `gamut push` rewrites this card -->"
"""Marks a dataset card ``gamut push`` wrote and may write again; a ``README.md`` without
it is the owner's, and a push leaves it as it is."""

PREFIX = "hf://"
_URL = re.compile(
    r"hf://datasets/(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)(?:@(?P<revision>[\w.\-/]+?))?"
    r"(?:/(?P<path>.*))?"
)
_FORM = "hf://datasets/OWNER/NAME[@REVISION]/PATH"
_NOT_PUSHED = ("store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "store.sqlite.lock",
               "*.lock", ".gamut-tmp-*", "*.tmp", ".finished.json")  # fmt: skip
"""A run folder's local verdict cache, lock files, temporary files an interrupted write left
and the record of what its last finished invocation made its files from (the local store's
state): not part of what is shared."""


@dataclass(frozen=True)
class HubPath:
    """A parsed ``hf://datasets/...`` URL."""

    repo_id: str
    """``OWNER/NAME``."""
    path: str
    """The path inside the repository ('' for its root)."""
    revision: str | None = None
    """Branch, tag or commit (None: the default branch)."""

    def __str__(self) -> str:
        revision = f"@{self.revision}" if self.revision else ""
        return f"{PREFIX}datasets/{self.repo_id}{revision}/{self.path}".rstrip("/")


def is_hub_path(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def parse_hub_path(url: str) -> HubPath:
    """Parse ``url``; an ``InputError`` names the expected form when it does not fit."""
    match = _URL.fullmatch(url)
    if match is None:
        raise InputError(
            f"{url!r} is not a Hugging Face dataset path: expected {_FORM} "
            "(only dataset repositories are read and written)"
        )
    path = (match["path"] or "").strip("/")
    if ".." in path.split("/"):
        raise InputError(f"{url!r}: a Hub path cannot contain '..'")
    return HubPath(f"{match['owner']}/{match['name']}", path, match["revision"])


def _api() -> Any:
    require_extra("hub", "reading or writing hf:// paths")
    from huggingface_hub import HfApi

    return HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)


def _hub_error(url: HubPath, exc: Exception, endpoint: str) -> InputError:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, RepositoryNotFoundError):
        why = "no such dataset repository (or no access to it: set HF_TOKEN)"
    elif isinstance(exc, RevisionNotFoundError):
        why = f"no revision {url.revision!r} in the repository"
    elif isinstance(exc, EntryNotFoundError):
        why = "no such file or folder in the repository"
    elif isinstance(exc, HfHubHTTPError):
        status = getattr(exc.response, "status_code", None)
        hint = " (set HF_TOKEN to a token that may write there)" if status in (401, 403) else ""
        why = f"the Hub at {endpoint} answered {exc}{hint}"
    else:
        why = f"could not reach the Hub at {endpoint} ({type(exc).__name__}: {exc})"
    return InputError(f"{url}: {why}")


def _fetch(api: Any, where: HubPath, name: str) -> str:
    """The local path of the file ``name`` of ``where``'s repository, through the Hub cache."""
    from huggingface_hub import hf_hub_download

    return hf_hub_download(
        where.repo_id,
        name,
        repo_type="dataset",
        revision=where.revision,
        endpoint=api.endpoint,
        cache_dir=os.environ.get("HF_HUB_CACHE") or None,
    )


def download(url: str) -> Path:
    """The local copy of what ``url`` names (a file or a folder), fetched into the Hub
    cache with the rest of its folder; files already cached are not fetched again."""
    where = parse_hub_path(url)
    api = _api()
    from huggingface_hub.hf_api import RepoFile

    try:
        entries = list(
            api.list_repo_tree(
                where.repo_id, recursive=True, repo_type="dataset", revision=where.revision
            )
        )
        files = {e.path for e in entries if isinstance(e, RepoFile)}
        if where.path in files:  # a file: it and its folder's files
            folder = where.path.rpartition("/")[0]
        elif where.path == "" or any(f.startswith(where.path + "/") for f in files):
            folder = where.path
        else:
            raise InputError(f"{where}: no such file or folder in the repository")
        wanted = sorted(f for f in files if not folder or f.startswith(folder + "/"))
        if not wanted:
            raise InputError(f"{where}: the repository has no files")
        local = ""
        for name in wanted:
            local = _fetch(api, where, name)
    except InputError:
        raise
    except Exception as exc:  # huggingface_hub's errors and the network's
        raise _hub_error(where, exc, api.endpoint) from exc
    root = Path(local)
    for _ in Path(wanted[-1]).parts:  # from the last file back up to the snapshot's root
        root = root.parent
    return root / where.path if where.path else root


def _owners_card(api: Any, where: HubPath) -> bool:
    """Whether the repository has a ``README.md`` that gamut-eval did not write."""
    try:
        if not api.file_exists(
            where.repo_id, "README.md", repo_type="dataset", revision=where.revision
        ):
            return False
        card = _fetch(api, where, "README.md")
    except Exception:  # a new repository, or one without a card
        return False
    return CARD_MARKER not in Path(card).read_text(encoding="utf-8", errors="replace")


def _pushed_files(source: Path, into: str) -> list[tuple[str, Path]]:
    """(repository path, local file) for each file of ``source`` that is shared: a run
    folder's store and lock files are not."""
    if source.is_file():
        return [(into or source.name, source)]
    files = []
    for file in sorted(p for p in source.rglob("*") if p.is_file()):
        relative = file.relative_to(source).as_posix()
        if any(fnmatch.fnmatch(relative, pattern) for pattern in _NOT_PUSHED):
            continue
        files.append((f"{into}/{relative}".lstrip("/"), file))
    return files


def push(
    local: str | Path,
    url: str,
    *,
    message: str | None = None,
    extra: Mapping[str, bytes] | None = None,
) -> str:
    """Upload the file or folder ``local`` to ``url`` in one commit (creating the dataset
    repository if it does not exist); returns the commit's URL.

    ``extra``: more files for the same commit (repository path -> content), such as a
    dataset card; a ``README.md`` among them replaces only a card gamut-eval wrote
    (``CARD_MARKER``), never the owner's."""
    source = Path(local)
    if not source.exists():
        raise InputError(f"{source}: no such file or folder to push")
    where = parse_hub_path(url)
    api = _api()
    from huggingface_hub import CommitOperationAdd

    summary = message or f"Add {source.name} with gamut-eval"
    try:
        api.create_repo(where.repo_id, repo_type="dataset", exist_ok=True)
        added = dict(extra or {})
        if "README.md" in added and _owners_card(api, where):
            del added["README.md"]
        operations = [
            CommitOperationAdd(path_in_repo=path, path_or_fileobj=file)
            for path, file in _pushed_files(source, where.path)
            if path not in added
        ]
        operations += [
            CommitOperationAdd(path_in_repo=path, path_or_fileobj=content)
            for path, content in added.items()
        ]
        info = api.create_commit(
            where.repo_id,
            operations=operations,
            commit_message=summary,
            repo_type="dataset",
            revision=where.revision,
        )
    except Exception as exc:
        raise _hub_error(where, exc, api.endpoint) from exc
    return str(getattr(info, "commit_url", info))
