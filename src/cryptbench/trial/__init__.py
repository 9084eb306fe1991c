"""Trials: ordering the rounds, sizing a trial, laying out its data file, running one, and
the figures it yields."""
