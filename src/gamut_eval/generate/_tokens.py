"""The ``o200k_base`` encoding for Inspect's token counts, with no network.

Inspect AI counts tokens with tiktoken's ``o200k_base`` encoding wherever a provider reports
none (``mockllm`` does so for every output without usage). tiktoken downloads that encoding
on first use and keeps it in its cache folder. gamut-eval ships the file (xz-compressed,
byte for byte the one tiktoken pins by SHA-256) and puts it into that cache folder before
Inspect needs it, so an offline machine counts tokens the same as one that downloaded it.

The cache folder is tiktoken's own: ``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``,
else ``<temp>/data-gym-cache``; the file is named by the SHA-1 of its download address, as
tiktoken names it. A cache that is turned off (``TIKTOKEN_CACHE_DIR=""``) or cannot be
written is left alone: tiktoken then does what it would have done without gamut-eval.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import tempfile
from importlib.resources import files
from pathlib import Path

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
"""Where tiktoken would download the encoding from (its cache key is this address's SHA-1)."""
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""The SHA-256 tiktoken checks the encoding file against."""
_BUNDLED = "o200k_base.tiktoken.xz"


def tiktoken_cache_dir() -> Path | None:
    """The folder tiktoken caches encodings in, or ``None`` when its cache is turned off."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            value = os.environ[variable]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ensure_o200k_base() -> Path | None:
    """Put the bundled ``o200k_base`` file into tiktoken's cache unless it is there already;
    return its path (``None`` when the cache is off or cannot be written)."""
    folder = tiktoken_cache_dir()
    if folder is None:
        return None
    target = folder / hashlib.sha1(O200K_URL.encode()).hexdigest()
    try:
        if target.is_file() and _sha256(target) == O200K_SHA256:
            return target
        data = lzma.decompress((files("gamut_eval.data") / "tiktoken" / _BUNDLED).read_bytes())
        if hashlib.sha256(data).hexdigest() != O200K_SHA256:  # a damaged install
            return None
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{target.name}.{os.getpid()}.gamut.tmp"
        partial.write_bytes(data)
        partial.replace(target)  # atomic: a concurrent reader sees the old file or this one
    except OSError:
        return None
    return target
