"""Trials: the run's targets as the trials use them, ordering the rounds, sizing a trial,
laying out its data file, running one, and the figures it yields."""
