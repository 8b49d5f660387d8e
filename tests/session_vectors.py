#!/usr/bin/env python3
"""session_vectors.py - the session's frozen handshake vectors, computed
apart from alktunnel.h: hashlib and hmac from Python, X25519 written out from
RFC 7748 and ChaCha20-Poly1305 from RFC 8439 below. Prints the values
tests/test_alktunnel_session.h and tests/test_alktunnel_sealed.h freeze
(the T_* macros and the client HELLO hex), for the test pair those files set
up: secret "the control plane's secret 32 b", client "laptop" and server
"gw", 4 channels, max frame 1024, log 16384, the caller's random bytes 32 x
02 (client) and 32 x 01 (server), now = 5 s with no epoch.

    python3 tests/session_vectors.py          the current format (v2)
    python3 tests/session_vectors.py --v1     the format before (checks this
                                              program against the old values)
"""
import hashlib
import hmac
import struct
import sys

SECRET = b"the control plane's secret 32 b\0"
P = 2 ** 255 - 19


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.digest()


def mac(key, *parts):
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def hkdf_expand(prk, info, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = mac(prk, t, info, bytes([i]))
        out += t
        i += 1
    return out[:n]


# ---- X25519 (RFC 7748 section 5) ----
def x25519(k, u):
    k = bytearray(k)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    k = int.from_bytes(k, "little")
    u = int.from_bytes(u, "little") & ((1 << 255) - 1)
    x1, x2, z2, x3, z3, swap = u, 1, 0, u, 1, 0
    for t in reversed(range(255)):
        kt = (k >> t) & 1
        swap ^= kt
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = kt
        a, b = (x2 + z2) % P, (x2 - z2) % P
        aa, bb = a * a % P, b * b % P
        e = (aa - bb) % P
        c, d = (x3 + z3) % P, (x3 - z3) % P
        da, cb = d * a % P, c * b % P
        x3 = (da + cb) ** 2 % P
        z3 = x1 * (da - cb) ** 2 % P
        x2 = aa * bb % P
        z2 = e * (aa + 121665 * e) % P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, P - 2, P) % P).to_bytes(32, "little")


# ---- ChaCha20-Poly1305 (RFC 8439 sections 2.3-2.8) ----
def rotl(v, n):
    return ((v << n) | (v >> (32 - n))) & 0xffffffff


def chacha_block(key, counter, nonce):
    s = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]
    s += list(struct.unpack("<8I", key)) + [counter] + list(struct.unpack("<3I", nonce))
    w = list(s)

    def qr(a, b, c, d):
        w[a] = (w[a] + w[b]) & 0xffffffff; w[d] = rotl(w[d] ^ w[a], 16)
        w[c] = (w[c] + w[d]) & 0xffffffff; w[b] = rotl(w[b] ^ w[c], 12)
        w[a] = (w[a] + w[b]) & 0xffffffff; w[d] = rotl(w[d] ^ w[a], 8)
        w[c] = (w[c] + w[d]) & 0xffffffff; w[b] = rotl(w[b] ^ w[c], 7)
    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return struct.pack("<16I", *[(w[i] + s[i]) & 0xffffffff for i in range(16)])


def chacha20(key, counter, nonce, data):
    out = bytearray()
    for i in range(0, len(data), 64):
        ks = chacha_block(key, counter + i // 64, nonce)
        out += bytes(a ^ b for a, b in zip(data[i:i + 64], ks))
    return bytes(out)


def poly1305(key, msg):
    r = int.from_bytes(key[:16], "little") & 0x0ffffffc0ffffffc0ffffffc0fffffff
    s = int.from_bytes(key[16:], "little")
    acc, p = 0, (1 << 130) - 5
    for i in range(0, len(msg), 16):
        n = int.from_bytes(msg[i:i + 16] + b"\x01", "little")
        acc = (acc + n) * r % p
    return ((acc + s) & ((1 << 128) - 1)).to_bytes(16, "little")


def aead_seal(key, nonce, aad, plain):
    otk = chacha_block(key, 0, nonce)[:32]
    ct = chacha20(key, 1, nonce, plain)

    def pad(b):
        return b + bytes(-len(b) % 16)
    tag = poly1305(otk, pad(aad) + pad(ct) + struct.pack("<QQ", len(aad), len(ct)))
    return ct + tag


# ---- the session's frames ----
def frame(ftype, payload, chan=0):
    return struct.pack(">BBHI", ftype, 0, len(payload), chan) + payload


def hello(v1, server, plaintext, nonce, sid, eph_pub, ident, fresh):
    p = b"ALKT" + bytes([1 if v1 else 2] * 2) + bytes([2 if server else 1])
    p += bytes([2 if plaintext else 0]) + nonce + sid + bytes(8) + bytes(32)
    p += struct.pack(">III", 1024, 16384, 4) + eph_pub
    if not v1:
        p += struct.pack(">Q", 0 if server else fresh)
    p += bytes([len(ident)]) + ident
    if v1 or server:
        return frame(0x01, p)
    # a client HELLO ends with HMAC(secret, "alkt2 hello" || the frame up
    # to the MAC, its header counting the MAC)
    hdr = struct.pack(">BBHI", 0x01, 0, len(p) + 32, 0)
    return hdr + p + mac(SECRET, b"alkt2 hello", hdr, p)


def vectors(v1):
    out = {}
    rnd_c, rnd_s = bytes([2] * 32), bytes([1] * 32)
    n_c, n_s = sha(b"alkt1 nonce", rnd_c), sha(b"alkt1 nonce", rnd_s)
    sid = sha(b"alkt1 session id", n_s, n_c)[:16]
    fresh = 5000000000
    for plaintext in (1, 0):
        if plaintext:
            e_c = e_s = pub_c = pub_s = bytes(32)
        else:
            e_c, e_s = sha(b"alkt1 ephemeral", rnd_c), sha(b"alkt1 ephemeral", rnd_s)
            base = (9).to_bytes(32, "little")
            pub_c, pub_s = x25519(e_c, base), x25519(e_s, base)
        ch = hello(v1, 0, plaintext, n_c, bytes(16), pub_c, b"laptop", fresh)
        sh = hello(v1, 1, plaintext, n_s, sid, pub_s, b"gw", 0)
        H = sha(ch, sh)
        tag = "plain" if plaintext else "sealed"
        out[tag + " client HELLO"] = ch.hex()
        if plaintext:
            out["T_SERVER_AUTH"] = frame(0x02, mac(SECRET, b"alkt1 server", H)).hex()
            out["T_CLIENT_AUTH"] = frame(0x02, mac(SECRET, b"alkt1 client", H)).hex()
            out["server HELLO length"] = len(sh) - 8
            continue
        dh = x25519(e_c, pub_s)
        assert dh == x25519(e_s, pub_c)
        prk = mac(SECRET, b"alkt1 keys", H, dh)
        okm = hkdf_expand(prk, b"alkt1 session keys", 96)
        k_cs, auth_key = okm[:32], okm[64:]
        out["T_SEALED_SERVER_HELLO_EPH"] = pub_s.hex()
        out["T_SEALED_SERVER_AUTH"] = frame(0x02, mac(auth_key, b"alkt1 server", H)).hex()
        out["T_SEALED_CLIENT_AUTH"] = frame(0x02, mac(auth_key, b"alkt1 client", H)).hex()
        # the client's first records: ACK (frames received 0) and PING 1,
        # nonce = 4 zero bytes | the record counter (64 bits, little endian)
        for name, ctr, f in (("T_SEALED_ACK0", 0, frame(0x20, struct.pack(">Q", 0))),
                             ("T_SEALED_PING1", 1, frame(0x21, struct.pack(">Q", 1)))):
            aad = struct.pack(">H", len(f))
            nonce = bytes(4) + struct.pack("<Q", ctr)
            out[name] = (aad + aead_seal(k_cs, nonce, aad, f)).hex()
    return out


def main():
    v1 = "--v1" in sys.argv[1:]
    for k, v in vectors(v1).items():
        print("%s: %s" % (k, v))


if __name__ == "__main__":
    main()
