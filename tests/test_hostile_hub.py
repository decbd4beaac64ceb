"""Hub settings exactly as huggingface_hub decides them: for each environment, costcalc's cache,
endpoint and offline mode equal what huggingface_hub.constants computes from it (in a fresh
interpreter per environment, since the library reads them once, at import)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from costcalc.hub import hub_settings

CONSTANTS = """
import importlib, json, os, sys
import huggingface_hub.constants as constants
found = []
for env in json.loads(sys.stdin.read()):
    os.environ.clear()
    os.environ.update(env)
    importlib.reload(constants)
    found.append([constants.HF_HUB_CACHE, constants.ENDPOINT, constants.HF_HUB_OFFLINE])
print(json.dumps(found))
"""

OFFLINE = [
    {"HF_HUB_OFFLINE": hub, "TRANSFORMERS_OFFLINE": transformers}
    for hub in (None, "", "0", "1", "yes", "off", "TRUE")
    for transformers in (None, "", "1", "0")
]
CACHES = [
    {"HF_HOME": "$NOT_SET/h"},
    {"HF_HOME": "${HOME}/h", "XDG_CACHE_HOME": "/x"},
    {"HF_HOME": "~/h"},
    {"HF_HOME": "~"},
    {"HF_HOME": "~nosuchuser/h"},
    {"HF_HOME": ""},
    {"XDG_CACHE_HOME": ""},
    {"XDG_CACHE_HOME": "$HOME/x"},
    {"HUGGINGFACE_HUB_CACHE": "$NOT_SET/c", "HF_HOME": "/h"},
    {"HUGGINGFACE_HUB_CACHE": "~/c"},
    {"HF_HUB_CACHE": "", "HUGGINGFACE_HUB_CACHE": "/l"},
    {"HF_HUB_CACHE": "$HOME/$HOME/${NOT_SET}/$"},
    {"HF_HUB_CACHE": "~root/c"},
    {"HOME": "/", "HF_HOME": "~/h"},
    {"HOME": "", "HF_HUB_CACHE": "~"},
]
ENDPOINTS = [
    {"HF_ENDPOINT": ""},
    {"HF_ENDPOINT": "https://mirror.example/"},
    {"HF_ENDPOINT": "http://localhost:8000//"},
    {"HUGGINGFACE_CO_STAGING": "1", "HF_ENDPOINT": "https://mirror.example"},
    {"HUGGINGFACE_CO_STAGING": "0"},
]


def test_settings_are_huggingface_hubs_own(tmp_path: Path) -> None:
    home = str(tmp_path)
    envs = [
        {"HOME": home, **{k: v for k, v in case.items() if v is not None}}
        for case in [*OFFLINE, *CACHES, *ENDPOINTS]
    ]
    done = subprocess.run(
        [sys.executable, "-c", CONSTANTS],
        input=json.dumps(envs),
        capture_output=True,
        text=True,
        check=True,
    )
    for env, (cache, endpoint, offline) in zip(envs, json.loads(done.stdout), strict=True):
        settings = hub_settings(env)
        assert (str(settings.cache), settings.endpoint, settings.offline) == (
            str(Path(cache)),
            endpoint,
            offline,
        ), env


def test_an_environment_huggingface_hub_cannot_start_from(tmp_path: Path) -> None:
    """huggingface_hub reads its settings as it is imported, and raises its own error for one
    it cannot take: costcalc says which, never a traceback (a fresh interpreter each, since the
    library is imported once)."""
    for env, expected in [
        ({"HF_ENDPOINT": "http://[::1"}, "ValueError: Invalid IPv6 URL"),
        ({"HF_HUB_ETAG_TIMEOUT": "ten"}, "invalid literal for int() with base 10: 'ten'"),
        ({"HF_HUB_DOWNLOAD_TIMEOUT": "1e9", "HF_HUB_OFFLINE": "1"}, "base 10: '1e9'"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "costcalc", "params", "--hf", "org/model"],
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, env
        assert done.stderr.startswith(
            "error: org/model: huggingface_hub cannot start from this environment ("
        ), done.stderr
        assert expected in done.stderr and "Traceback" not in done.stderr, env
