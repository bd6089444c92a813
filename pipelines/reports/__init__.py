"""Reports: the drift report and the claims check as typed values, rendered as text, JSON,
Markdown or HTML through one dispatch (:func:`pipelines.reports.formats.render`)."""
