"""Passes that schedule a training step's communication: ``hir-schedule-data-parallel``
(:mod:`.schedule`; its patterns in :mod:`.waits` and :mod:`.prefetch`)."""
