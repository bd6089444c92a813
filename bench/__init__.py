"""Benchmarks: each figure beside a baseline measured in the same run (`make bench`)."""
