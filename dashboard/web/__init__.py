"""The dashboard's foundation: the web plumbing every feature app shares (docs/architecture.md).

It imports no feature app (``monitor``, ``deadletters``, ``alerts``, ``reports``,
``demo``); they import it. Here: the Redis and channel-layer access (``redis_conn``), the
request decorators and JSON errors (``pages``, ``views``, ``errors``), declared JSON
bodies (``json_input``), the live sockets' contract (``push_socket``, ``publish``), the
roles, the lease, the viewer's time zone, the registries the apps fill in
``AppConfig.ready()``, and the stored data every feature reads (``store``: the models, the
shared event queries and the one *stuck* rule).
"""
