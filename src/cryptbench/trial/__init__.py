"""Trials: ordering the rounds, sizing a trial, running one, and the figures it yields."""
