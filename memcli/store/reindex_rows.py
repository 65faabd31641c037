"""What both backends share about the vectors a `reindex` has made but not yet swapped in.

`memcli reindex` embeds every node again in batches, each committed to a side table
(`reindex_vectors`: node id, a digest of the text embedded, the vector as float32 bytes)
while the store keeps its old vectors. Only when every node has its new vector does one
transaction swap them in and drop the side table, so a stopped reindex leaves the store as
it was, and the next one embeds only the nodes whose text the side table lacks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.store.interface import Store

SIDE_TABLE = "reindex_vectors"
# The embedder (provider:model) the side table's vectors come from.
TARGET_KEY = "reindex.target"
# Set by the swap, deleted once the words of the turns are embedded again too.
WORDS_KEY = "reindex.words"


def digest(text: str) -> str:
    """A short fingerprint of the text a node is embedded from."""
    import hashlib  # not at module level: every store import would pay for OpenSSL

    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def to_bytes(vector: Any) -> bytes:
    """A vector as little-endian float32 bytes (what both stores keep bit for bit)."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes) -> Any:
    """The float32 numpy vector of `to_bytes`."""
    import numpy as np

    return np.frombuffer(bytes(data), dtype="<f4").astype(np.float32)


def unfinished_reindex(store: Store) -> tuple[str, int] | None:
    """(the model, how many nodes it has embedded so far) of a reindex stopped before its
    swap, or None."""
    target = store.get_meta(TARGET_KEY)
    return (target, len(store.reindex_digests())) if target else None
