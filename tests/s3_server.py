"""An S3-compatible server on 127.0.0.1 for the lake tests on an ``s3://`` data path: moto's
server (``moto[server]``, the dev extra) as a process of its own, with authentication on, so
that refused credentials are refused as AWS refuses them (moto checks each request's SigV4
signature against the IAM access keys it holds: SignatureDoesNotMatch, InvalidAccessKeyId);
and a TCP relay in front of it that a test can cut and restore, as an endpoint going away
mid-run and coming back (moto's objects stay: the server itself keeps running)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REGION = "us-east-1"
BUCKET = "receipts-lake"
# moto authenticates every request after the first N (moto.core's INITIAL_NO_AUTH_ACTION_COUNT):
# the three IAM calls that make the tests' user, its policy and its key.
_UNAUTHENTICATED_SETUP = 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the S3 server exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


class S3Server:
    """moto's S3 server, one IAM user with S3 rights and its key, and one bucket."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        with log.open("wb") as out:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                env={
                    **os.environ,
                    "INITIAL_NO_AUTH_ACTION_COUNT": str(_UNAUTHENTICATED_SETUP),
                    # No credential of the developer's reaches the fake.
                    "AWS_ACCESS_KEY_ID": "setup",
                    "AWS_SECRET_ACCESS_KEY": "setup",
                },
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_listening(self.port, self._process)
            self.key_id, self.secret = self._make_key()
            self.client().create_bucket(Bucket=BUCKET)
        except BaseException:
            self.stop()
            raise

    def _make_key(self) -> tuple[str, str]:
        import boto3

        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        iam.create_user(UserName="receipts")
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
        }
        iam.put_user_policy(UserName="receipts", PolicyName="s3", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="receipts")["AccessKey"]
        return str(key["AccessKeyId"]), str(key["SecretAccessKey"])

    def client(self):  # type: ignore[no-untyped-def]
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret,
        )

    def keys(self, prefix: str) -> list[str]:
        """Every object key under ``prefix`` of the bucket."""
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        )
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def env(self, endpoint: str | None = None) -> dict[str, str]:
        """The environment a receipts process needs for this server (or a relay to it)."""
        return {
            "AWS_ENDPOINT_URL": endpoint or self.endpoint,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
        }

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


class Relay:
    """A TCP relay on its own loopback port to ``target_port``: :meth:`cut` closes it and
    every connection through it (the endpoint goes away), :meth:`restore` listens again on
    the same port."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._sockets.clear()
