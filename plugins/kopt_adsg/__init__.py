"""Placeholder until the adsg solver plugin lands; registers nothing."""
