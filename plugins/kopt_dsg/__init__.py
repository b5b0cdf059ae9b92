"""Placeholder until the dsg solver plugin lands; registers nothing."""
