"""What the tests share: leak checks, real targets, the command line as a user runs it,
the reliability figures, fleet hosts, a bootstrap oracle, a fake executor, an HTML
page's reader. conftest.py keeps only pytest's hooks and fixtures."""
