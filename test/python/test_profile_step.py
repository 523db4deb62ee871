"""benchmarks/profile_step.py's timeline: how far each kernel moves a call's end."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import profile_step


def test_overlapping_kernels_count_only_what_they_add():
    # b starts while a runs (a programmatic dependent) and ends 2 us later; c runs inside the second a
    spans = [("a", 0.0, 10.0), ("b", 2.0, 12.0), ("a", 12.0, 15.0), ("c", 13.0, 14.0)]
    table = profile_step.advances(spans)
    assert table == {"a": [2, 13.0, 13.0], "b": [1, 2.0, 10.0], "c": [1, 0.0, 1.0]}
    assert sum(moved for _, moved, _ in table.values()) == 15.0  # the call's first start to last end


def test_no_kernels():
    assert profile_step.advances([]) == {}
