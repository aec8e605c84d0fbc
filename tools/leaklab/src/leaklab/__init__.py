"""Leak Lab harness: build, run, measure and compare the course's leaking services."""

__version__ = "0.1.0"
