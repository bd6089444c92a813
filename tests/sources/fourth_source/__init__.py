"""A fourth upstream that exists only in the tests: one package, registered from the test."""
