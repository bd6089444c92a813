"""Forem (dev.to): articles and their comment threads."""
