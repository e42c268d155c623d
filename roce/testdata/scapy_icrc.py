#!/usr/bin/python3
"""ICRC oracle for roce's tests: reads one Ethernet frame per line (hex) on
stdin, dissects it with scapy, clears the BTH ICRC so that scapy.contrib.roce
recomputes it, and prints the rebuilt frame (hex), one line per input line.
A frame without a BTH prints "nobth"."""
import sys

from scapy.contrib.roce import BTH
from scapy.layers.l2 import Ether

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    pkt = Ether(bytes.fromhex(line))
    if BTH not in pkt:
        print("nobth", flush=True)
        continue
    pkt[BTH].icrc = None
    print(bytes(pkt).hex(), flush=True)
