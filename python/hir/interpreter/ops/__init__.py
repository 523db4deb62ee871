"""Interpreter op handlers, one module per op group (the dialect's group names, plus upstream groups)."""
