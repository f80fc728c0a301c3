"""Hadoop delegation tokens in their URL form (what WebHDFS GETDELEGATIONTOKEN
returns as Token.urlString and the RM REST API takes in credentials.tokens):
URL-safe base64, without padding, of four Writable byte strings: identifier,
password, kind, service (each a zero-compressed VInt length, then the bytes).

Used by hadoop-test-cluster's selftest and by tests/e2e/hadoop.py to give a
token another kind or service (see scripts/hadoop-test-cluster.md: the RM
cannot renew WebHDFS's token as it comes)."""
import base64

HDFS_KIND = "HDFS_DELEGATION_TOKEN"
SWEBHDFS_KIND = "SWEBHDFS delegation"
WEBHDFS_KIND = "WEBHDFS delegation"


def _read_vlong(b, i):
    first = b[i] - 256 if b[i] > 127 else b[i]
    if first >= -112:
        return first, i + 1
    negative = first < -120
    n = (-119 - first) if negative else (-111 - first)  # bytes, this one included
    v = int.from_bytes(b[i + 1:i + n], "big")
    return (~v if negative else v), i + n


def _write_vlong(v):
    if -112 <= v <= 127:
        return bytes([v & 0xFF])
    lead = -112
    if v < 0:
        v, lead = ~v, -120
    n = (v.bit_length() + 7) // 8
    return bytes([(lead - n) & 0xFF]) + v.to_bytes(n, "big")


def _read_bytes(b, i):
    n, i = _read_vlong(b, i)
    if n < 0 or i + n > len(b):
        raise ValueError("truncated token")
    return b[i:i + n], i + n


def decode(url_string):
    """{'identifier': bytes, 'password': bytes, 'kind': str, 'service': str}"""
    raw = base64.urlsafe_b64decode(url_string + "=" * (-len(url_string) % 4))
    fields, i = [], 0
    for _ in range(4):
        f, i = _read_bytes(raw, i)
        fields.append(f)
    return {"identifier": fields[0], "password": fields[1],
            "kind": fields[2].decode(), "service": fields[3].decode()}


def encode(token):
    raw = b""
    for f in (token["identifier"], token["password"], token["kind"].encode(), token["service"].encode()):
        raw += _write_vlong(len(f)) + f
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def with_kind(url_string, kind=HDFS_KIND, service=None):
    """The same token (identifier and password) under another kind and,
    if given, service."""
    t = decode(url_string)
    t["kind"] = kind
    if service is not None:
        t["service"] = service
    return encode(t)


def identifier(token):
    """A delegation token identifier's fields: owner, renewer and realUser
    (short names), issueDate and maxDate (ms), sequenceNumber, masterKeyId."""
    b, i, out = token["identifier"], 1, {"version": token["identifier"][0]}
    for name in ("owner", "renewer", "realUser"):
        v, i = _read_bytes(b, i)
        out[name] = v.decode()
    for name in ("issueDate", "maxDate", "sequenceNumber", "masterKeyId"):
        out[name], i = _read_vlong(b, i)
    return out
