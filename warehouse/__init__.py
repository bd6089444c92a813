"""DuckDB warehouse: schema and migrations, content-addressed snapshots, revisions, audits."""
