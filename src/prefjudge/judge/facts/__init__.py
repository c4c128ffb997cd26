"""Deterministic evidence judges: facts that decide a pair."""
