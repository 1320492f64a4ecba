"""The compaction engine (SPEC §5): one way to claim, run, finish and reap a
job, whatever it is bound to (``compaction.bindings``).

* ``claim``      the atomic claim: one conditional UPDATE
* ``run``        one attempt end to end: load, admission, claim, request,
                 model call outside any transaction, contract, finish
* ``finish``     the attempt's record and the immutable generation
* ``leases``     expired leases, due retries, lost jobs
* ``scan``       the periodic scan: one at a time, on the maintenance queue
* ``outages``    infrastructure faults: reconnect, bounded backoff (issue 12)
* ``attempts``   the attempt limit and exhaustion
* ``admission``  the per-process and global bounds on model calls
* ``prepared``   server-side prepared statements for the hot path
* ``dispatch``   the one sender of tasks, by name, after commit
* ``metrics``    events, logs and counters
"""
