"""The transparency log's formats, free of I/O: the RFC 6962 / RFC 9162 Merkle tree kept as a
flat sequence of stored hashes, C2SP signed notes and checkpoints, proofs and static tiles."""
