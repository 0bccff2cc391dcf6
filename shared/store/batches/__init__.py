"""Batch items: a batch's counts, its members' states and its callbacks' flags."""
