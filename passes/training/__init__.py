"""Passes that schedule a training step's communication: ``hir-schedule-data-parallel``
(:mod:`.schedule`; its patterns in :mod:`.waits`, :mod:`.prefetch` and :mod:`.buckets`, its
update walk in :mod:`.update_early`)."""
