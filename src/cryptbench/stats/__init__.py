"""The statistics: estimates with their intervals, paired ratios, and the rule that stops a run."""
