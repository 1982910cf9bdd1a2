"""The cluster index's calls to Redis: one pipeline a step, whatever nodes it reaches.

redis-py's :class:`~redis.cluster.RedisCluster` routes each command to the node of its
key's slot (following ``MOVED``/``ASK``) and a pipeline sends each node its commands
at once. Scripts run with ``EVALSHA`` on the slot of their keys; a node that lost them
(restarted) answers ``NOSCRIPT``, and those commands run again once they are loaded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import redis
from redis.cluster import RedisCluster

from .._client import glob_escape
from ._layout import ClusterNames, entry
from ._lua import DROP, DROP_HOME, SCRIPTS

#: Commands of one step: (args...) tuples for ``execute_command``.
Command = tuple[Any, ...]
_SHA = {source: hashlib.sha1(source.encode()).hexdigest() for source in SCRIPTS}


def script(source: str, keys: Sequence[str], *args: Any) -> Command:
    """An ``EVALSHA`` of *source* on the slot of *keys*."""
    return ("EVALSHA", _SHA[source], len(keys), *keys, *args)


class ClusterStore:
    """Runs steps (lists of commands) on a cluster, loading scripts where they are missing."""

    def __init__(self, client: RedisCluster, names: ClusterNames) -> None:
        self.client, self.names = client, names
        self.crc_bits = 8  # of the key records' names: the design's bucket bits, once known

    def run(self, commands: Sequence[Command]) -> list[Any]:
        """Each command's reply; the first error raised (after ``NOSCRIPT`` ones ran again)."""
        if not commands:
            return []
        replies = self._pipelined(commands)
        missing = [n for n, reply in enumerate(replies) if isinstance(reply, redis.exceptions.NoScriptError)]
        if missing:
            for source in SCRIPTS:
                self.client.script_load(source)  # (on every primary)
            for n, reply in zip(missing, self._pipelined([commands[n] for n in missing])):
                replies[n] = reply
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    def one(self, command: Command) -> Any:
        return self.run([command])[0]

    def _pipelined(self, commands: Sequence[Command]) -> list[Any]:
        with self.client.pipeline() as pipe:
            for command in commands:
                pipe.execute_command(*command)
            return list(pipe.execute(raise_on_error=False))

    def drop_commands(self, tables: Sequence[int], buckets: Sequence[int], rid: bytes, crc: int) -> list[Command]:
        """Remove a record everywhere: its home, its other buckets, its key's records."""
        names = self.names
        commands = [script(DROP_HOME, names.home(buckets[0]), rid)]
        commands += [script(DROP, [names.bucket(t, b)], rid) for t, b in zip(tables[1:], buckets[1:])]
        return [*commands, script(DROP, [names.key_records(crc, self.crc_bits)], rid)]

    def append_commands(self, tables: Sequence[int], buckets: Sequence[int], fingerprint: int, rid: bytes,
                        crc: int) -> list[Command]:
        """The entries of a record in its buckets but the home, and in its key's records."""
        data = entry(fingerprint, rid)
        commands: list[Command] = [("APPEND", self.names.bucket(t, b), data) for t, b in zip(tables[1:], buckets[1:])]
        return [*commands, ("APPEND", self.names.key_records(crc, self.crc_bits), data)]

    def scan_homes(self) -> Iterator[str]:
        """The names of every home hash of the namespace, on every primary."""
        for name in self.client.scan_iter(match=self.names.home_pattern, count=1000,
                                          target_nodes=RedisCluster.PRIMARIES):
            yield name.decode() if isinstance(name, bytes) else name

    def delete_namespace(self) -> None:
        pattern = glob_escape(self.names.prefix) + "*"
        names = list(self.client.scan_iter(match=pattern, count=1000, target_nodes=RedisCluster.PRIMARIES))
        for start in range(0, len(names), 1000):
            self.run([("UNLINK", name) for name in names[start : start + 1000]])
