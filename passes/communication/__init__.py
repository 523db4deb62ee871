"""Passes that move data between devices: ``hir-insert-reshardings`` (a ``hir.set`` before
each op whose operands are placed differently from what it needs) and
``hir-convert-to-communication`` (resharding ops to collectives), with nvFuser's resharding
rules and decision table in ``_resharding.py``."""
