"""Everything computed from stored trials, rendering nothing: the result document's
building, the ranking, the diagnosis and warning rules, option effects, study
summaries, speed change, run comparison and the history model. Below pipeline/ and
report/, which both read it; it reads only the components and foundations."""
