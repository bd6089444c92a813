"""Where settings are read from: the config file and the secrets file (see
:mod:`warehouse.settings`). Apart from the model so that finding them imports nothing heavy:
``receipts --help`` and shell completion look for a config file too."""

from __future__ import annotations

import os
from pathlib import Path

ENV_CONFIG = "RECEIPTS_CONFIG"
ENV_SECRETS = "RECEIPTS_SECRETS"
CONFIG_NAME = "receipts.toml"
SECRETS_NAME = "secrets.toml"

# --config, set by the command line before anything reads a setting.
_config_option: Path | None = None


def use_config(path: Path | None) -> None:
    """The config file ``--config`` names (None: the environment's or the default)."""
    global _config_option
    _config_option = path


def config_path() -> Path | None:
    """The config file in use: ``--config``, ``$RECEIPTS_CONFIG``, else ``./receipts.toml``
    if it exists."""
    if _config_option is not None:
        return _config_option
    named = os.environ.get(ENV_CONFIG, "").strip()
    if named:
        return Path(named)
    default = Path(CONFIG_NAME)
    return default if default.is_file() else None


def cache_dir() -> Path:
    """Where receipts keeps what it can make again: ``$XDG_CACHE_HOME/receipts``, else
    ``~/.cache/receipts``."""
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(cache) if cache else Path.home() / ".cache") / "receipts"


def secrets_path() -> Path | None:
    """The secrets file in use: ``$RECEIPTS_SECRETS``, else ``secrets.toml`` beside the config
    file if it exists."""
    named = os.environ.get(ENV_SECRETS, "").strip()
    if named:
        return Path(named)
    config = config_path()
    if config is None:
        return None
    beside = config.parent / SECRETS_NAME
    return beside if beside.is_file() else None
