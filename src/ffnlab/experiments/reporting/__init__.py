"""The report of a sweep: its model (every number as a string), the pages (Jinja2 templates),
the figures, the browser check."""
