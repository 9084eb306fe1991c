"""The suites shipped with cryptbench, as TOML files beside this module."""
