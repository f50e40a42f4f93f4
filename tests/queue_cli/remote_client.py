"""An independent remote worker for `scaffold queue serve`: Python's standard library for
HTTP and `cryptography` for Ed25519, nothing of scaffold's. Enrolls with the token in argv,
opens a session, claims a job, heartbeats it, uploads an output and completes it; prints
one JSON line of what it saw. Exits 1 on any surprise."""

import base64
import hashlib
import json
import sys
import urllib.error
import urllib.request

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization


def b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def unb64(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def call(base, method, path, body=None, token=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Scaffold-Protocol", "1")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req) as r:
            text = r.read()
            return r.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def main():
    base, token, name, lane = sys.argv[1:5]
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    status, enrolled = call(base, "POST", "/v1/enroll", {
        "token": token, "worker_name": name, "public_key": b64(public),
        "protocol": {"min": 1, "max": 1},
    })
    assert status == 200, (status, enrolled)
    wid = enrolled["worker_id"]
    status, challenge = call(base, "POST", "/v1/session/challenge", {"worker_id": wid})
    assert status == 200, (status, challenge)
    nonce = unb64(challenge["nonce"])
    message = b"scaffold-session-v1\0" + wid.encode() + b"\0" + nonce + b"\0" + base.encode()
    status, session = call(base, "POST", "/v1/session", {
        "worker_id": wid, "nonce": challenge["nonce"], "signature": b64(key.sign(message)),
    })
    assert status == 200, (status, session)
    ses = session["token"]
    status, claimed = call(base, "POST", "/v1/jobs/claim", {"lane": lane, "max": 10, "wait_ms": 2000}, ses)
    assert status == 200 and len(claimed["jobs"]) == 1, (status, claimed)
    job = claimed["jobs"][0]
    status, lease = call(base, "POST", f"/v1/jobs/{job['job']}/heartbeat", {"fence": job["fence"]}, ses)
    assert status == 200 and lease["lease_ms"] > 0, (status, lease)
    output = b"done by python"
    digest = hashlib.sha256(output).hexdigest()
    status, stored = call(base, "PUT", f"/v1/artifacts/{digest}", token=ses, raw=output)
    assert status == 200 and stored == {"sha256": digest, "size": len(output)}, (status, stored)
    body = {"fence": job["fence"], "outputs": [{"name": "result.txt", "sha256": digest}]}
    status, _ = call(base, "POST", f"/v1/jobs/{job['job']}/complete", body, ses)
    assert status == 204, status
    status, again = call(base, "POST", f"/v1/jobs/{job['job']}/complete", body, ses)
    assert status == 204, (status, again)
    print(json.dumps({"worker_id": wid, "job": job["job"], "kind": job["kind"], "output": digest}))


if __name__ == "__main__":
    main()
