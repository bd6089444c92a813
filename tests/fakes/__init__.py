"""Stateful fakes of the upstreams, one per service, served through respx."""
