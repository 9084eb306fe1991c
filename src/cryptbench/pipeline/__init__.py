"""The stages of a measurement that the commands share (run, serve, fleet, selftest,
cleanup), so that no command imports another."""
