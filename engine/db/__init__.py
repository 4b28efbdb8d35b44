"""The only SQL: one module per table or concept (``tenant_rows``, ``stack_rows``,
``stack_list``, ``stack_trees``, ``resource_rows``, ``event_rows``, ``steps``,
``leases``, ``signals``, ``admin``), the named state changes (``transitions``) and the
models, sessions and migrations they share.

In the row modules ``get_*`` raises ``EntityNotFound``, ``find_*`` returns None and
``list_*`` a list; callers pass the session of their transaction
(``Database.transaction``).
"""
