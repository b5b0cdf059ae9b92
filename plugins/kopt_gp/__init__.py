"""Placeholder until the gp solver plugin lands; registers nothing."""
