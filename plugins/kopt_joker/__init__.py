"""Placeholder until the joker solver plugin lands; registers nothing."""
