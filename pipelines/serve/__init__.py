"""``receipts serve``: a read-only web view of the warehouse (:mod:`pipelines.serve.app`)."""
