"""Connecting to the Redis that holds Lockstep's data: one standalone server, or a Redis
Cluster (docs/cluster.md).

A cluster is chosen by the URL's scheme (``redis+cluster://`` or ``rediss+cluster://``,
naming any one node) or, for a plain ``redis://`` URL, by ``LOCKSTEP_REDIS_CLUSTER=1``.
The cluster client discovers the other nodes, follows MOVED and ASK, and finds a promoted
replica after a failover. Everything the runtime does is within one slot per command or
script (every per-queue key carries the hash tag ``{topic:queue}``), so the two clients
are used through the same calls; ``connect`` returns the cluster client typed as
``redis.Redis`` because the code calls only commands both offer (pipelines without
MULTI, single-slot scripts, single-key commands).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.client import Pipeline
from redis.cluster import RedisCluster
from redis.exceptions import AskError, RedisClusterException

from lockstep.workers.env import env_bool
from lockstep.workers.errors import ConfigurationError

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}

# Each queue worker holds a connection for the length of its blocking read, so a process
# owning many queues needs as many connections at once; redis-py's default pool (100)
# would make the 101st worker fail as if Redis were down. Connections are opened lazily.
MAX_CONNECTIONS = 10_000


def is_cluster(url: str) -> bool:
    """Whether ``url`` names a Redis Cluster (by its scheme or LOCKSTEP_REDIS_CLUSTER)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in CLUSTER_SCHEMES:
        return True
    return env_bool("LOCKSTEP_REDIS_CLUSTER", False)


def plain_url(url: str) -> str:
    """``url`` with a cluster scheme turned back into the ``redis://``/``rediss://`` one
    redis-py parses (the scheme is ours, not redis-py's)."""
    parts = urlsplit(url)
    scheme = CLUSTER_SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        return url
    return urlunsplit((scheme, *parts[1:]))


def connect(url: str, **options: Any) -> redis.Redis:
    """A client for ``url``: ``redis.Redis`` on a standalone server, ``RedisCluster`` on a
    cluster. ``options`` are connection options both take (timeouts, health checks, the
    pool class). ``retry`` is the standalone client's retry of a failed command; on a
    cluster it is the cluster client's, which re-reads the cluster's layout before it
    retries (a failover, a dead node). MOVED and ASK are always followed."""
    options.setdefault("max_connections", MAX_CONNECTIONS)
    if not is_cluster(url):
        pool_class = options.pop("connection_pool_class", redis.ConnectionPool)
        client = redis.Redis(connection_pool=pool_class.from_url(url, **options))
        client.auto_close_connection_pool = True
        return client
    parts = urlsplit(plain_url(url))
    if parts.path not in ("", "/", "/0"):
        raise ConfigurationError(
            f"a Redis Cluster has only database 0; remove {parts.path!r} from the URL"
        )
    cluster = RedisCluster.from_url(plain_url(url), **options)
    return cast(redis.Redis, cluster)


def cluster_of(client: redis.Redis) -> RedisCluster | None:
    """The cluster client behind ``client``, or None for a standalone server."""
    candidate: object = client
    return candidate if isinstance(candidate, RedisCluster) else None


def has_sharded_pubsub(client: redis.Redis) -> bool:
    """Whether the server has sharded pub/sub (Redis 7 or later; on a cluster, the node
    asked). A server that cannot be asked now is taken to have it: a wake-up it cannot
    send only delays a consumer's wait (docs/reading.md, "On a Redis Cluster")."""
    try:
        info = client.info("server")
    except redis.RedisError:
        return True
    if "redis_version" not in info:  # a cluster client's answer of several nodes
        info = next(iter(info.values()), {})
    version = str(info.get("redis_version", "7"))
    return int(version.split(".")[0]) >= 7


def get_each(client: redis.Redis, names: Sequence[str]) -> list[bytes | None]:
    """GET of each key in one round trip, keys in any slots (MGET needs one slot on a
    cluster; a pipeline without MULTI is split per node by the cluster client)."""
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.get(name)
    return cast(list[bytes | None], pipe.execute())


# A command for ``execute_per_node``: its key, and a call that sends it to what it is
# given (a pipeline, which queues it, or a client, which runs it).
Keyed = tuple[str, Callable[[Any], object]]


def execute_per_node(client: redis.Redis, commands: Sequence[Keyed]) -> None:
    """Run ``commands`` without MULTI: one pipeline on a standalone server; on a cluster
    one pipeline per node serving their keys, the nodes one after the other in the order
    of their first command, each node's connection given back before the next is taken.
    The cluster client's own pipeline holds a connection of every node it spans until
    all have answered: with bounded pools (``outage.runtime_client``) two such pipelines
    could each hold what the other waits for (docs/reading.md, "Connections"). A
    command whose slot moved is sent again through the cluster client, which follows
    the redirection; any other error is raised once its node's pipeline has run."""
    if cluster_of(client) is None:
        pipe = client.pipeline(transaction=False)
        for _, send in commands:
            send(pipe)
        pipe.execute()
        return
    by_node: dict[redis.Redis, list[Callable[[Any], object]]] = {}
    for key, send in commands:
        by_node.setdefault(node_client(client, key), []).append(send)
    for node, sends in by_node.items():
        pipe = node.pipeline(transaction=False)
        for send in sends:
            send(pipe)
        for reply in execute_following(client, pipe, _resender(client, sends)):
            if isinstance(reply, Exception):
                raise reply


def _resender(client: redis.Redis, sends: list[Callable[[Any], object]]) -> Callable[[int], object]:
    """Sends ``sends[i]`` again through ``client`` (``execute_following``)."""
    return lambda i: sends[i](client)


def own_connection(client: redis.Redis) -> redis.Redis:
    """A client of one connection of its own, to the server ``client`` talks to and with
    its settings (name included): for what holds its connection for good (a blocking
    reader named in ``CLIENT UNBLOCK``, sharded subscriptions), outside the shared pool,
    which is bounded (``outage.runtime_client``)."""
    pool = client.connection_pool
    return redis.Redis(
        connection_pool=redis.ConnectionPool(
            connection_class=pool.connection_class, max_connections=1, **pool.connection_kwargs
        )
    )


def refresh_layout(cluster: RedisCluster) -> None:
    """Re-read which node serves which slot, as the cluster client does itself after a
    dead node: for calls made on a node's own connection (``workers.scripts.run_batch``,
    the producer's WAIT). A failure here is left to the caller's own error."""
    # RedisClusterException (no node reachable) is not a RedisError.
    with contextlib.suppress(redis.RedisError, RedisClusterException):
        cluster.nodes_manager.initialize()


def node_client(client: redis.Redis, key: str) -> redis.Redis:
    """The client that talks straight to the server holding ``key``'s slot: ``client``
    itself on a standalone server, the node's own client on a cluster. For what must go
    on one connection or in one plain pipeline (a batch of scripts, WAIT after a write),
    which the cluster client refuses or would spread over connections. Run its
    pipelines with ``execute_on_node``; a MOVED/ASK reply in them is not followed."""
    cluster = cluster_of(client)
    if cluster is None:
        return client
    return cluster.get_redis_connection(cluster.get_node_from_key(key))


def execute_on_node(client: redis.Redis, pipe: Pipeline) -> list[Any]:
    """``pipe`` (of a ``node_client`` of ``client``) executed, each command's error in its
    reply. A connection that fails makes a cluster client re-read the layout, as it does
    itself for its own calls, so the next call finds a promoted replica."""
    try:
        return list(pipe.execute(raise_on_error=False))
    except (redis.ConnectionError, redis.TimeoutError):
        cluster = cluster_of(client)
        if cluster is not None:
            refresh_layout(cluster)
        raise


def execute_following(
    client: redis.Redis, pipe: Pipeline, resend: Callable[[int], Any]
) -> list[Any]:
    """``execute_on_node``, where a command refused because its slot moved (MOVED, ASK)
    is sent again by ``resend(its index)`` through the cluster client, which follows the
    redirection; that reply (or the error it raised) takes the refused one's place. Any
    other error stays in its reply."""
    replies = execute_on_node(client, pipe)
    for i, reply in enumerate(replies):
        if isinstance(reply, AskError):  # MovedError is an AskError
            try:
                replies[i] = resend(i)
            except redis.RedisError as exc:
                replies[i] = exc
    return replies
