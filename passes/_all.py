"""Imports every pass module so that each registers itself (add new passes here)."""
