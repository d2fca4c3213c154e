"""A local stand-in of the Hugging Face Hub API on 127.0.0.1, for tests that push.

It answers what ``huggingface_hub`` calls when it creates repositories, commits files (directly or as
pull requests), reads a dataset's info and its leaderboard and downloads a file: ``/api/repos/create``,
``/api/validate-yaml``, ``/api/<type>s/<repo>/preupload/<rev>``, ``/api/<type>s/<repo>/commit/<rev>``, ``/api/datasets/<repo>``,
``/api/datasets/<repo>/leaderboard`` (what a test puts in ``leaderboards[repo]``: the Hub's JSON entries)
and ``/<prefix><repo>/resolve/<rev>/<path>``. Every upload mode is "regular" (files travel inline in
the commit), so no LFS or Xet storage is involved. Repositories live in memory.

    with HubStandIn() as hub:            # then point huggingface_hub at hub.endpoint
        ...
        hub.repos[("dataset", "ns/name")].files   # {path: bytes} on main
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import threading
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

import yaml

PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}


@dataclass
class Repo:
    type: str
    id: str
    files: dict[str, bytes] = field(default_factory=dict)
    sha: str = "0" * 40
    commits: list[dict] = field(default_factory=list)
    pull_requests: list[dict] = field(default_factory=list)


class HubStandIn:
    def __init__(self):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.requests: list[tuple[str, str]] = []
        self.validated: list[tuple[str, str]] = []
        self.leaderboards: dict[str, list[dict]] = {}
        self.lock = threading.Lock()
        standin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body=b"", headers=None, content_type="application/json"):
                if isinstance(body, (dict, list)):
                    body = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_POST(self):
                standin._handle(self, "POST")

            def do_GET(self):
                standin._handle(self, "GET")

            def do_HEAD(self):
                standin._handle(self, "HEAD")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------------------------------
    def add_repo(self, repo_type: str, repo_id: str, files: dict[str, bytes] | None = None) -> Repo:
        repo = self.repos.setdefault((repo_type, repo_id), Repo(repo_type, repo_id))
        if files:
            repo.files.update(files)
            repo.sha = hashlib.sha1(json.dumps(sorted(repo.files)).encode() + repo.sha.encode()).hexdigest()
        return repo

    def url(self, repo_type: str, repo_id: str) -> str:
        return f"{self.endpoint}/{PREFIX[repo_type]}{repo_id}"

    def _handle(self, handler, method):
        path = unquote(urlparse(handler.path).path)
        query = urlparse(handler.path).query
        with self.lock:
            self.requests.append((method, path))
        if method == "POST" and path == "/api/repos/create":
            payload = json.loads(handler._body())
            repo_type = payload.get("type") or "model"
            repo_id = f"{payload['organization']}/{payload['name']}"
            self.add_repo(repo_type, repo_id)
            return handler._send(200, {"url": self.url(repo_type, repo_id)})
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate_yaml(handler, json.loads(handler._body()))
        match = re.fullmatch(r"/api/(model|dataset|space)s/([^/]+/[^/]+)/(preupload|commit)/([^/]+)", path)
        if method == "POST" and match:
            repo_type, repo_id, action, _revision = match.groups()
            repo = self.repos.get((repo_type, repo_id))
            if repo is None:
                return handler._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            body = handler._body()
            if action == "preupload":
                files = json.loads(body)["files"]
                return handler._send(200, {"files": [
                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]})
            return self._commit(handler, repo, body, "create_pr=1" in query)
        match = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/leaderboard", path)
        if method == "GET" and match:
            if match.group(1) not in self.leaderboards:
                return handler._send(404, {"error": "This dataset has no leaderboard"})
            return handler._send(200, self.leaderboards[match.group(1)])
        match = re.fullmatch(r"/api/(model|dataset|space)s/([^/]+/[^/]+)(?:/revision/[^/]+)?", path)
        if method == "GET" and match:
            repo = self.repos.get((match.group(1), match.group(2)))
            if repo is None:
                return handler._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            return handler._send(200, {"id": repo.id, "sha": repo.sha, "private": False,
                                       "siblings": [{"rfilename": name} for name in sorted(repo.files)]})
        match = re.fullmatch(r"/(datasets/|spaces/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if method in ("GET", "HEAD") and match:
            repo_type = {"datasets/": "dataset", "spaces/": "space"}.get(match.group(1) or "", "model")
            repo = self.repos.get((repo_type, match.group(2)))
            if repo is None:
                return handler._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            data = repo.files.get(match.group(4))
            if data is None:
                return handler._send(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"})
            etag = hashlib.sha1(data).hexdigest()
            return handler._send(200, data, {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"'},
                                 content_type="application/octet-stream")
        return handler._send(404, {"error": f"not served by the stand-in: {method} {path}"})

    def _validate_yaml(self, handler, body):
        """The card's YAML header must parse to a mapping (the real Hub checks much more)."""
        content = body.get("content", "")
        self.validated.append((body.get("repoType"), content))
        header = content.split("---", 2)[1] if content.startswith("---") and content.count("---") >= 2 else ""
        try:
            ok = isinstance(yaml.safe_load(header), dict)
        except yaml.YAMLError:
            ok = False
        if not ok:
            return handler._send(400, {"errors": [{"message": "the YAML header is not a mapping"}]})
        return handler._send(200, {"errors": [], "warnings": []})

    def _commit(self, handler, repo: Repo, body: bytes, create_pr: bool):
        header, files = {}, {}
        for line in body.decode().splitlines():
            item = json.loads(line)
            if item["key"] == "header":
                header = item["value"]
            elif item["key"] == "file":
                value = item["value"]
                files[value["path"]] = base64.b64decode(value["content"]) if value.get("encoding") == "base64" \
                    else value["content"].encode()
        with self.lock:
            commit = {"summary": header.get("summary"), "description": header.get("description"), "files": files}
            oid = hashlib.sha1(json.dumps({k: hashlib.sha1(v).hexdigest() for k, v in files.items()},
                                          sort_keys=True).encode() + repo.sha.encode()).hexdigest()
            if create_pr:
                repo.pull_requests.append(commit)
                number = len(repo.pull_requests)
                pr_url = f"{self.url(repo.type, repo.id)}/discussions/{number}"
            else:
                repo.files.update(files)
                repo.commits.append(commit)
                repo.sha = oid
                pr_url = None
        return handler._send(200, {"commitUrl": f"{self.url(repo.type, repo.id)}/commit/{oid}", "commitOid": oid,
                                   "pullRequestUrl": pr_url})


def point_huggingface_hub_at(standin: HubStandIn, monkeypatch, cache_dir) -> None:
    """Make ``huggingface_hub`` (HfApi, downloads) talk to ``standin``, with a token and online."""
    import huggingface_hub

    constants = huggingface_hub.constants
    monkeypatch.setattr(constants, "ENDPOINT", standin.endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                        standin.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache_dir))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_standin_token")
