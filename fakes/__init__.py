"""Stateful fakes of the upstreams (NHTSA, GitHub, dev.to, Sanity's Content Lake), served
through respx. The tests serve them through ``tests/fixtures/``; the offline demo's
recordings (``demo/sessions/``) were made from them (``demo.upstreams``)."""
