"""The renderers of a result document: the terminal, JSON, Markdown, CSV, HTML and charts."""
