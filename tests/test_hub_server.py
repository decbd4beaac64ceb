"""`--hf` against a Hub served here: an HTTP server on 127.0.0.1, in this process, that answers
``HEAD``/``GET /{repo}/resolve/{revision}/{file}`` as huggingface.co does (``X-Repo-Commit``,
``ETag``, ``X-Error-Code``, byte ranges), with ``HF_ENDPOINT`` pointed at it."""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, Invoke

MAIN = "1" * 40
TAGGED = "2" * 40
GPT2 = (FIXTURES / "hf" / "gpt2.json").read_bytes()
TINY = {
    "model_type": "gpt2",
    "vocab_size": 16,
    "n_positions": 4,
    "n_embd": 8,
    "n_layer": 1,
    "n_head": 2,
}
TINY_TENSORS = {
    "wte.weight": [16, 8],
    "wpe.weight": [4, 8],
    "h.0.ln_1.weight": [8],
    "h.0.ln_1.bias": [8],
    "h.0.attn.c_attn.weight": [8, 24],
    "h.0.attn.c_attn.bias": [24],
    "h.0.attn.c_proj.weight": [8, 8],
    "h.0.attn.c_proj.bias": [8],
    "h.0.ln_2.weight": [8],
    "h.0.ln_2.bias": [8],
    "h.0.mlp.c_fc.weight": [8, 32],
    "h.0.mlp.c_fc.bias": [32],
    "h.0.mlp.c_proj.weight": [32, 8],
    "h.0.mlp.c_proj.bias": [8],
    "ln_f.weight": [8],
    "ln_f.bias": [8],
}
TINY_TOTAL = 16 * 8 + 4 * 8 + 4 * 8 + 8 * 24 + 24 + 8 * 8 + 8 + 8 * 32 + 32 + 32 * 8 + 8 + 2 * 8
"""2,032 parameters: the tensors above, summed by hand."""


def safetensors(shapes: dict[str, list[int]]) -> bytes:
    """A safetensors file of F32 zeros with these tensors."""
    header: dict[str, Any] = {}
    offset = 0
    for name, shape in shapes.items():
        size = 4
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def shard_files() -> dict[str, bytes]:
    """The tiny model in two shards with their index."""
    names = list(TINY_TENSORS)
    first = {name: TINY_TENSORS[name] for name in names[:5]}
    second = {name: TINY_TENSORS[name] for name in names[5:]}
    shards = {"model-00001-of-00002.safetensors": first, "model-00002-of-00002.safetensors": second}
    index = {
        "metadata": {"total_size": TINY_TOTAL * 4},
        "weight_map": {tensor: shard for shard, part in shards.items() for tensor in part},
    }
    files = {shard: safetensors(part) for shard, part in shards.items()}
    return {**files, "model.safetensors.index.json": json.dumps(index).encode()}


@dataclass
class Repo:
    commits: dict[str, dict[str, bytes]]
    refs: dict[str, str]
    gated: bool = False
    ranges: bool = True
    """Whether the server honours Range headers (a plain file server may not)."""
    trickle: tuple[str, ...] = ()
    """Files whose body is sent a byte at a time, a tenth of a second apart."""


REPOS = {
    "org/gpt2": Repo({MAIN: {"config.json": GPT2}}, {"main": MAIN}),
    "org/tiny": Repo(
        {
            MAIN: {
                "config.json": json.dumps(TINY).encode(),
                "model.safetensors": safetensors(TINY_TENSORS),
            },
            TAGGED: {"config.json": json.dumps(TINY).encode(), **shard_files()},
        },
        {"main": MAIN, "v1.0": TAGGED},
    ),
    "org/gated": Repo({MAIN: {"config.json": GPT2}}, {"main": MAIN}, gated=True),
    "org/slow": Repo({MAIN: {"config.json": GPT2}}, {"main": MAIN}, trickle=("config.json",)),
    "org/slow-header": Repo(
        {
            MAIN: {
                "config.json": json.dumps(TINY).encode(),
                "model.safetensors": safetensors(TINY_TENSORS),
            }
        },
        {"main": MAIN},
        trickle=("model.safetensors",),
    ),
    "org/no-ranges": Repo(
        {
            MAIN: {
                "config.json": json.dumps(TINY).encode(),
                "model.safetensors": safetensors(TINY_TENSORS),
            }
        },
        {"main": MAIN},
        ranges=False,
    ),
}


@dataclass
class Hub:
    """The served Hub: its address and every request it answered (method, path, Range)."""

    url: str
    server: ThreadingHTTPServer
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


class Handler(BaseHTTPRequestHandler):
    hub: Hub

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def do_GET(self) -> None:
        self.answer(body=True)

    def answer(self, body: bool) -> None:
        self.hub.requests.append((self.command, self.path, self.headers.get("Range")))
        parts = self.path.split("/resolve/", 1)
        repo = REPOS.get(parts[0].lstrip("/"))
        if repo is None or len(parts) != 2:
            return self.fail(404, "RepoNotFound", "Repository not found")
        if repo.gated and not self.headers.get("authorization"):
            return self.fail(401, "GatedRepo", "Access to this model is restricted")
        revision, _, name = parts[1].partition("/")
        commit = revision if revision in repo.commits else repo.refs.get(revision)
        if commit is None:
            return self.fail(404, "RevisionNotFound", "Invalid rev id")
        data = repo.commits[commit].get(name)
        if data is None:
            return self.fail(404, "EntryNotFound", "Entry not found", commit)
        status, chunk, headers = 200, data, {"ETag": f'"{hashlib.sha1(data).hexdigest()}"'}
        wanted = self.headers.get("Range")
        if wanted and repo.ranges:
            first, last = (int(n) for n in wanted.removeprefix("bytes=").split("-"))
            last = min(last, len(data) - 1)
            status, chunk = 206, data[first : last + 1]
            headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
        self.send_response(status)
        self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Length", str(len(chunk)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if body and name in repo.trickle:
            for byte in chunk:
                if self.hub.stopping.wait(0.1):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        elif body:
            self.wfile.write(chunk)

    def fail(self, status: int, code: str, message: str, commit: str | None = None) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Hub]:
    """A Hub on 127.0.0.1, online mode, a fresh cache and no token."""
    import huggingface_hub.constants

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served = Hub(f"http://127.0.0.1:{server.server_address[1]}", server)
    Handler.hub = served
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setenv("HF_ENDPOINT", served.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    yield served
    served.stop()
    # a read left past its deadline ends once the server is gone: wait for it here, so that
    # nothing it logs as it fails lands in a later test's output
    for worker in threading.enumerate():
        if worker.name == "costcalc-hub":
            worker.join(60)
            assert not worker.is_alive(), "a Hub read outlived its server by 60 s"


def params(cli: Invoke, *args: str) -> dict[str, Any]:
    result = cli("params", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_download_into_the_cache(cli: Invoke, hub: Hub, tmp_path: Path) -> None:
    data = params(cli, "--hf", "org/gpt2")
    assert data["name"] == "org/gpt2"
    assert data["parameters"]["total"] == 124_439_808  # transformers' count (golden)
    config = tmp_path / "hub" / "models--org--gpt2" / "snapshots" / MAIN / "config.json"
    assert data["origin"] == str(config)
    assert config.read_bytes() == GPT2
    assert (tmp_path / "hub" / "models--org--gpt2" / "refs" / "main").read_text() == MAIN
    assert hub.requests == [
        ("HEAD", "/org/gpt2/resolve/main/config.json", None),  # costcalc: its size and commit
        ("HEAD", "/org/gpt2/resolve/main/config.json", None),  # hf_hub_download
        ("GET", "/org/gpt2/resolve/main/config.json", None),
        ("HEAD", f"/org/gpt2/resolve/{MAIN}/model.safetensors", None),  # no checkpoint
        ("HEAD", f"/org/gpt2/resolve/{MAIN}/model.safetensors.index.json", None),
    ]


def test_safetensors_headers_by_range_requests_only(cli: Invoke, hub: Hub) -> None:
    data = params(cli, "--hf", "org/tiny")
    checkpoint = data["checkpoint"]
    assert checkpoint["source"] == f"hf://org/tiny@{MAIN}"
    assert checkpoint["parameters_total"] == data["parameters"]["total"] == TINY_TOTAL
    assert checkpoint["formula"]["equal"] is True
    header = len(safetensors(TINY_TENSORS)) - TINY_TOTAL * 4 - 8
    weights = [r for r in hub.requests if r[1].endswith("model.safetensors") and r[0] == "GET"]
    assert weights == [
        ("GET", f"/org/tiny/resolve/{MAIN}/model.safetensors", "bytes=0-7"),
        ("GET", f"/org/tiny/resolve/{MAIN}/model.safetensors", f"bytes=8-{header + 7}"),
    ]


def test_revision_by_tag_reads_the_sharded_index(cli: Invoke, hub: Hub) -> None:
    by_at = params(cli, "--hf", "org/tiny@v1.0")
    by_option = params(cli, "--hf", "org/tiny", "--revision", "v1.0")
    assert by_at["name"] == by_option["name"] == "org/tiny@v1.0"
    assert TAGGED in by_at["origin"]
    assert by_at["checkpoint"]["files"] == 2
    assert by_at["checkpoint"]["parameters_total"] == TINY_TOTAL
    ranged = [r for r in hub.requests if r[2] is not None]
    assert all(r[2] in {"bytes=0-7"} or r[2].startswith("bytes=8-") for r in ranged)


def test_revision_by_commit(cli: Invoke, hub: Hub) -> None:
    data = params(cli, "--hf", f"org/tiny@{TAGGED}")
    assert data["name"] == f"org/tiny@{TAGGED}"
    assert data["checkpoint"]["source"] == f"hf://org/tiny@{TAGGED}"


def test_offline_from_the_cache(cli: Invoke, hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    online = params(cli, "--hf", "org/gpt2")
    hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert params(cli, "--hf", "org/gpt2") == online
    assert hub.requests == []


def test_gated_model(cli: Invoke, hub: Hub) -> None:
    result = cli("params", "--hf", "org/gated")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: org/gated: a gated model (the Hub at {hub.url} answered 401); request access "
        f"at {hub.url}/org/gated, then set HF_TOKEN to a token of the account that has it\n"
    )


def test_missing_model_revision_and_file(cli: Invoke, hub: Hub) -> None:
    missing = cli("params", "--hf", "org/nothing")
    assert missing.exit_code == 1
    assert missing.stderr == (
        f"error: org/nothing: no such model, or a private one (the Hub at {hub.url} answered "
        "404); check the name, or set HF_TOKEN to a token that can read it\n"
    )
    revision = cli("params", "--hf", "org/gpt2@v9")
    assert revision.stderr == (
        f"error: org/gpt2@v9: no such revision (branch, tag or commit) (the Hub at {hub.url} "
        "answered 404)\n"
    )


def test_network_down(cli: Invoke, hub: Hub, tmp_path: Path) -> None:
    cached = params(cli, "--hf", "org/gpt2")
    hub.stop()
    assert params(cli, "--hf", "org/gpt2") == cached  # the cache answers
    result = cli("params", "--hf", "org/tiny")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: org/tiny: config.json is not in the cache ({tmp_path / 'hub'}) and the Hub "
        f"({hub.url}) cannot be reached: connection refused\n"
    )


def test_offline_never_connects(
    cli: Invoke, hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params(cli, "--hf", "org/gpt2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("connecting is not allowed offline")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    assert params(cli, "--hf", "org/gpt2")["parameters"]["total"] == 124_439_808
    result = cli("params", "--hf", "org/tiny")
    assert result.stderr == (
        f"error: org/tiny: config.json is not in the cache ({tmp_path / 'hub'}) and "
        "HF_HUB_OFFLINE is set (unset it to download)\n"
    )
    assert attempts == []


def test_a_server_ignoring_ranges_is_refused_unread(cli: Invoke, hub: Hub) -> None:
    result = cli("params", "--hf", "org/no-ranges")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: hf://org/no-ranges@{MAIN}/model.safetensors: the server answered 200 without "
        "the byte range 0-7; only headers are read, never weights\n"
    )


def test_revision_options(cli: Invoke, hub: Hub) -> None:
    both = params(cli, "--hf", "org/tiny@v1.0", "--hf", "org/gpt2", "--revision", "main")
    assert [model["name"] for model in both] == ["org/tiny@v1.0", "org/gpt2"]
    alone = cli("params", "-p", "gpt2-small", "--revision", "v1.0")
    assert alone.exit_code == 2
    assert alone.stderr == (
        "error: --revision chooses the revision of --hf models; name one with --hf\n"
    )
    asked = len(hub.requests)
    bad = cli("params", "--hf", "org/tiny@../main")
    assert bad.exit_code == 2
    assert bad.stderr == (
        "error: a revision is a branch, tag or commit like main, v1.0 or a 40-hex hash "
        "(got '../main')\n"
    )
    assert len(hub.requests) == asked  # refused before anything is asked


def test_a_trickling_hub_meets_the_deadline_of_each_file(
    cli: Invoke, hub: Hub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server sending a byte at a time never holds costcalc past a file's deadline: a config
    counts as the Hub not reached (the cache is asked), a header as a failed read."""
    import costcalc.hub

    monkeypatch.setattr(costcalc.hub, "DEADLINE_SECONDS", 1.0)
    config = cli("params", "--hf", "org/slow")
    assert config.exit_code == 1
    assert config.stderr == (
        f"error: org/slow: config.json is not in the cache ({tmp_path / 'hub'}) and the Hub "
        f"({hub.url}) cannot be reached: no complete answer within 1 seconds\n"
    )
    header = cli("params", "--hf", "org/slow-header")
    assert header.exit_code == 1
    assert header.stderr == (
        "error: org/slow-header: reading model.safetensors: no complete answer within 1 seconds\n"
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "HF_ENDPOINT",
            "http://256.256.256.256",
            "org/gpt2: no request for config.json can be made to HF_ENDPOINT "
            "'http://256.256.256.256': Invalid IPv4 address: '256.256.256.256'; set HF_ENDPOINT "
            "to the Hub's address, like https://huggingface.co",
        ),
        (
            "HF_ENDPOINT",
            "http://[::1",
            "org/gpt2: no request for config.json can be made to HF_ENDPOINT 'http://[::1': "
            "Invalid port: ':1'; set HF_ENDPOINT to the Hub's address, like https://huggingface.co",
        ),
        (
            "HF_ENDPOINT",
            "",
            "org/gpt2: config.json is not in the cache ({cache}) and the Hub ('') cannot be "
            "reached: request URL is missing an 'http://' or 'https://' protocol.",
        ),
        (
            "HF_TOKEN",
            "caf\N{LATIN SMALL LETTER E WITH ACUTE}",
            "org/gpt2: HF_TOKEN (or the saved token) holds '\xe9', which a request's headers "
            "cannot carry (ASCII only); set it to the token as the Hub shows it",
        ),
    ],
)
def test_settings_no_request_can_be_made_with_are_said(
    cli: Invoke,
    hub: Hub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    message: str,
) -> None:
    monkeypatch.setenv(variable, value)
    result = cli("params", "--hf", "org/gpt2")
    assert result.exit_code == 1
    assert result.stderr == f"error: {message.format(cache=tmp_path / 'hub')}\n"


def test_repository_ids_as_huggingface_hub_takes_them(cli: Invoke, hub: Hub) -> None:
    """96 characters a part are read; 97, a '--' or a '.git' at the end are refused at once."""
    longest = cli("params", "--hf", "org/" + "n" * 96)
    assert "no such model, or a private one" in longest.stderr
    for refused in ("org/" + "n" * 97, "org/a--b", "org/a.git", "org/caf\u00e9"):
        result = cli("params", "--hf", refused)
        assert result.exit_code == 2, refused
        assert result.stderr.startswith("error: --hf expects a model id like ORG/NAME")
    result = cli("params", "--hf", "a/b/c")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: 'a/b/c' is a path, not a Hub id ORG/NAME")
    assert all("/org/nnn" in path for _, path, _ in hub.requests)  # the refused asked nothing


def test_offline_after_an_online_run_of_a_sharded_model(
    cli: Invoke, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The online run reads the shards' headers by range requests and caches the index alone;
    offline (or with the Hub down), the cache answers from config.json and that index."""
    online = params(cli, "--hf", "org/tiny@v1.0")
    assert online["checkpoint"]["files"] == 2
    hub.requests.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = params(cli, "--hf", "org/tiny@v1.0")
    assert hub.requests == []
    assert offline["parameters"] == online["parameters"]
    assert "checkpoint" not in offline  # the shards are not in the cache: no headers
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.stop()
    assert params(cli, "--hf", "org/tiny@v1.0")["parameters"] == online["parameters"]


def test_a_downloaded_config_resolving_outside_the_cache_is_refused(
    cli: Invoke, hub: Hub, tmp_path: Path
) -> None:
    """huggingface_hub answers with the snapshot's file when it is there already: a link put in
    its place that leads out of the cache is refused online as it is offline."""
    params(cli, "--hf", "org/gpt2")
    config = tmp_path / "hub" / "models--org--gpt2" / "snapshots" / MAIN / "config.json"
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(GPT2)
    config.unlink()
    config.symlink_to(outside)
    result = cli("params", "--hf", "org/gpt2")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: org/gpt2: {config} resolves outside the cache ({tmp_path / 'hub'}); refused\n"
    )
