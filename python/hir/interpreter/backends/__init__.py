"""Run-time backends the op handlers use: process groups, symmetric memory, copy-engine transfers."""
