"""Customers' recurring schedules and the expressions they are written in."""
