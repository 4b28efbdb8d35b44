"""Declares no LicenceCheck: the entry point cannot be loaded."""
