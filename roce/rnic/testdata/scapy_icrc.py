#!/usr/bin/python3
"""ICRC oracle for rnic's capture test: reads a pcap, rebuilds every RoCEv2
frame with scapy.contrib.roce computing the ICRC afresh, and prints one line
per frame: "ok" when scapy's frame equals the captured one, "bad" otherwise,
"nobth" for frames without a BTH."""
import sys

from scapy.contrib.roce import BTH
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

for p in rdpcap(sys.argv[1]):
    raw = bytes(p)
    pkt = Ether(raw)
    if BTH not in pkt:
        print("nobth")
        continue
    pkt[BTH].icrc = None
    print("ok" if bytes(pkt) == raw else "bad")
