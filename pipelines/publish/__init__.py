"""Publishing: curate current revisions, plan mutations, confine them to the namespace, push
them to a target (a Sanity dataset or an NDJSON file) and record the receipt."""
