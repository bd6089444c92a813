"""The offline demo: recorded upstream sessions, their generator, and the driver."""
