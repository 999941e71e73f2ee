#!/usr/bin/env python3
"""Peak RSS of `envctl outdated` against a fake registry whose tag list has 50 pages of
8.5 MB each (a registry that ignores `n`), as issue 12 measured it.

    tests/bench/outdated-rss.py target/release/envctl
"""
import http.server, json, os, re, subprocess, sys, tempfile, threading

PAGES, PAGE_BYTES = 50, int(8.5 * 1024 * 1024)

def page(number):
    tags, size, index = [], 0, 0
    while size < PAGE_BYTES:
        tag = f"{number}.{index}.0-cuda12"
        tags.append(tag)
        size += len(tag) + 3
        index += 1
    return json.dumps({"name": "team/app", "tags": tags}).encode()

BODIES = {}

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass
    def do_GET(self):
        match = re.search(r"last=p(\d+)", self.path)
        number = int(match.group(1)) + 1 if match else 1
        if "/manifests/" in self.path:
            self.send_response(200)
            self.send_header("Docker-Content-Digest", "sha256:" + "0" * 64)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            return
        body = BODIES.setdefault(number, page(number))
        self.send_response(200)
        if number < PAGES:
            self.send_header("Link", f'</v2/team/app/tags/list?n=1000&last=p{number}>; rel="next"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
binary = os.path.abspath(sys.argv[1])
with tempfile.TemporaryDirectory() as project:
    os.makedirs(f"{project}/envctl")
    with open(f"{project}/envctl/app.toml", "w") as profile:
        profile.write(f'image = "127.0.0.1:{server.server_port}/team/app:1.0.0-cuda12"\n')
    run = subprocess.run(["/usr/bin/time", "-v", binary, "outdated", "--json"], cwd=project,
                         capture_output=True, text=True, timeout=600)
rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1)
wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", run.stderr).group(1)
errors = [line for line in run.stdout.splitlines() if '"error"' in line]
print(f"exit {run.returncode}, peak RSS {int(rss) / 1024:.1f} MiB, wall {wall}")
for line in errors:
    print(line.strip()[:300])
