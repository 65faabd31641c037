"""Shared fixtures. Helpers for one area live in their own module and are imported here."""

from __future__ import annotations
