"""The result model and its vocabulary: the document every output renders, units,
metrics, errors, JSON types."""
