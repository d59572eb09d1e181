#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check the RoCEv2 encoder against Wireshark: frames written by
# 'test-roce --write-pcap' must dissect as RoCEv2 ("RRoCE", InfiniBand over
# UDP 4791) with the expected opcodes, correct IPv4 header checksums, no
# malformed packets and no expert warnings/errors except the one we accept:
# UDP checksum 0 over IPv6, which rxe and RoCE hardware send too (the ICRC
# protects the packet). Wireshark does not verify the ICRC, so a Python
# (zlib) re-implementation of the IBTA A17 ICRC checks it independently.
#
# Usage: tshark-check.sh [path/to/test-roce]     exit 77 (skip): no tshark
set -eu

if ! command -v tshark >/dev/null 2>&1; then
    echo "tshark not installed: skipping"
    exit 77
fi

bin=${1:-}
if [ -z "$bin" ]; then
    here=$(cd "$(dirname "$0")/../.." && pwd)
    for b in "$here"/build*/tests/unit/test-roce "$here"/build/*/tests/unit/test-roce; do
        if [ -x "$b" ]; then
            bin=$b
            break
        fi
    done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "test-roce binary not found (pass it as the first argument)" >&2
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
pcap=$tmp/roce.pcap
"$bin" --write-pcap "$pcap"

# rpcordma's heuristic would try to parse our random SEND payloads.
ts() {
    tshark -r "$pcap" -o ip.check_checksum:TRUE --disable-protocol rpcordma "$@" 2>/dev/null
}

fail=0

# 1. Every frame is RoCEv2 with the opcode test-roce wrote (same order).
expected="4 6 11 12 16 17 19 18 23 36 101 100"
got=$(ts -T fields -e frame.protocols -e infiniband.bth.opcode |
      awk -F'\t' '$1 ~ /:udp:infiniband/ { printf "%s ", $2 }' | sed 's/ $//')
if [ "$got" != "$expected" ]; then
    echo "FAIL: opcodes '$got', expected '$expected'"
    fail=1
else
    echo "ok: 12 frames dissect as RoCEv2 with opcodes $got"
fi

# 2. IPv4 header checksums verified by tshark.
bad_ip=$(ts -Y 'ip.checksum.status != 2 && ip.checksum.status != 1' \
            -T fields -e frame.number | wc -l)
good_ip=$(ts -Y 'ip.checksum.status == 1' -T fields -e frame.number | wc -l)
if [ "$bad_ip" -ne 0 ] || [ "$good_ip" -eq 0 ]; then
    echo "FAIL: IPv4 checksum: $good_ip good, $bad_ip not good"
    fail=1
else
    echo "ok: $good_ip IPv4 header checksums good"
fi

# 3. No malformed packets; no expert info >= warning except UDP checksum 0
#    on IPv6.
complaints=$(ts -T fields -E separator='|' -E aggregator='~' -e frame.number -e ipv6.version \
                -e _ws.malformed -e _ws.expert.message -e _ws.expert.severity |
             awk -F'|' '
                 $3 != "" { print "frame " $1 ": malformed"; next }
                 {
                     n = split($4, msg, "~"); split($5, sev, "~")
                     for (i = 1; i <= n; i++) {
                         # severity: 4194304 = warning, 8388608 = error
                         if (sev[i] + 0 < 4194304) continue
                         if ($2 == "6" && msg[i] ~ /Illegal checksum value \(0\)/)
                             continue
                         print "frame " $1 ": " msg[i]
                     }
                 }')
if [ -n "$complaints" ]; then
    echo "FAIL: tshark complains:"
    echo "$complaints"
    fail=1
else
    echo "ok: no malformed packets, no expert warnings (IPv6 zero UDP checksum accepted)"
fi

# 4. ICRC: independent Python/zlib implementation of IBTA A17.3.3, and the
#    value tshark shows.
tshark_icrc=$(ts -T fields -e infiniband.invariant.crc | tr '\n' ' ')
if command -v python3 >/dev/null 2>&1; then
    if python3 - "$pcap" "$tshark_icrc" <<'EOF'
import struct, sys, zlib

data = open(sys.argv[1], 'rb').read()
shown = [int(x, 16) for x in sys.argv[2].split()]
off, n, bad = 24, 0, 0
while off < len(data):
    incl = struct.unpack_from('<I', data, off + 8)[0]
    f = data[off + 16:off + 16 + incl]
    off += 16 + incl
    l3 = 14
    etype = struct.unpack_from('!H', f, 12)[0]
    if etype == 0x8100:
        l3, etype = 18, struct.unpack_from('!H', f, 16)[0]
    if etype == 0x0800:
        iplen = struct.unpack_from('!H', f, l3 + 2)[0]
        ip = bytearray(f[l3:l3 + 20])
        ip[1] = ip[8] = ip[10] = ip[11] = 0xff
    else:
        iplen = 40 + struct.unpack_from('!H', f, l3 + 4)[0]
        ip = bytearray(f[l3:l3 + 40])
        ip[0] |= 0x0f
        ip[1] = ip[2] = ip[3] = ip[7] = 0xff
    hl = len(ip)
    udp = bytearray(f[l3 + hl:l3 + hl + 8])
    udp[6] = udp[7] = 0xff
    rest = bytearray(f[l3 + hl + 8:l3 + iplen - 4])
    rest[4] = 0xff
    crc = zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(rest))
    wire = f[l3 + iplen - 4:l3 + iplen]
    ok = wire == crc.to_bytes(4, 'little')
    if n < len(shown):
        ok = ok and shown[n] == int.from_bytes(wire, 'big')
    if not ok:
        print('frame %d: ICRC %s, computed %08x' % (n + 1, wire.hex(), crc))
        bad += 1
    n += 1
print('ok: %d ICRCs match an independent zlib computation%s' %
      (n - bad, ' and tshark' if len(shown) == n else ''))
sys.exit(1 if bad or n == 0 else 0)
EOF
    then :; else fail=1; fi
else
    echo "python3 missing: ICRC cross-check skipped"
fi

exit $fail
