"""What a finished writing run tells the world: a typed summary (:mod:`.report`) handed to
the configured observers (notifications, a metrics file, lineage events).

An observer that fails is a warning of the run, never a failed command.
"""
