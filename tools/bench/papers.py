"""The seed papers' own numbers, copied from their text, each citing its
table, figure or section, for tools/bench/papers_report.py to set beside
ours. Where a figure is only a plot, its numbers are not in the text: only
what the text states about it is here, and the report says so.

Papers (docs/bibliography.md):
  TENDER  the Tender real-memory exchange paper (Tender vs Linux 2.6.30
          packet sockets, two PCs joined by 1 Gbit/s Ethernet)
  HXB     PM/Ethernet-HXB for PACS-CS (Xeon 2.8 GHz, Intel dual E1000 x 4,
          Linux 2.6.11, SCore 5.8.2)
  LB      multi-NIC load balancing by past overload (Pentium 4 sender, two
          100 Mbit/s NICs, Linux bonding balance-tlb as the baseline)
"""

TENDER = {
    "fig5": {  # throughput from T0, 128 packets and a 1-byte reply (section 4.5.3)
        "small_sizes": "Linux faster than Tender (4.5.3 (1)): the exchange on receive "
                       "costs more than a copy of a small packet",
        "plateau_mbps": 800,  # 4.5.3 (2): both stop rising near 800 Mbps
        "link_mbps": 1000,
        "plateau_share": 0.8,  # "about 80 % of what the link offers"
    },
    "fig6_t1_share_8k": 0.034,  # 4.5.3 (3): Tender's T1 about 3.4 % of Linux's at 8 KB
    "fig7": {  # round trip, one packet each way (section 4.5.4)
        "small_sizes": "Linux's T0 shorter than Tender's (4.5.4 (1))",
        "cut_8k_sec454": 0.63,  # 4.5.4 (3): "T0 cut by about 63 % against Linux" at 8 KB
        "cut_conclusion": 0.37,  # section 5: "processing time cut by about 37 %"
    },
}

HXB = {
    # Table 1: arrival interval (us) of one packet, one way, per NIC count and
    # packet size: the time a send and a receive each have per packet.
    "table1_us": {
        1: {1500: 12.0, 4096: 32.8, 8192: 65.5},
        2: {1500: 6.0, 4096: 16.4, 8192: 32.8},
        4: {1500: 3.0, 4096: 8.2, 8192: 16.4},
        6: {1500: 2.0, 4096: 5.5, 8192: 10.9},
        8: {1500: 1.5, 4096: 4.1, 8192: 8.2},
        10: {1500: 1.2, 4096: 3.3, 8192: 6.6},
    },
    "table1_goal_us": 5.5,  # section 3.1: Giga x 6 both ways at 4 KB, the design goal
    "map_us_per_page": 0.064,  # section 3.3 (from its ref. 6): mapping a 4 KB page
    "map_unmap_jumbo_us": 0.384,  # mapping and unmapping a 9000-byte frame
    "lock_pair_us": 0.10,  # section 3.2: two test-and-set locks a packet (2 % of 5.5 us)
    # Table 4: PM-level peak bandwidth, MB/s
    "table4_mbs": {"HXB Gigx2": 246, "HXB Gigx3": 368, "HXB Gigx4": 491, "HXB Gigx6": 737,
                   "HXB Gigx8": 979, "NT Gigx3": 366, "MyrinetXP": 244, "InfiniBand-FJ": 803},
    "table4_share_6": 0.979,  # 737 MB/s is 97.9 % of six links
    # Fig. 3 (bandwidth against message size) is a plot: its text says HXB
    # Gigx3 has about NT Gigx3's peak but more than twice its bandwidth up
    # to about 2 KB messages (section 5.1).
    "fig3_small_ratio_vs_nt": 2.0,
    "fig3_small_upto_bytes": 2048,
    # Table 5: PM-level round trip (us; each includes 6.0 us of switch round trip)
    "table5_us": {"MyrinetXP": 8.3, "InfiniBand-FJ": 15.6, "Ethernet NT": 29.6, "Ethernet-HXB": 30.1},
    "table5_switch_us": 6.0,
    # Fig. 4: per-packet cost (us) derived from Fig. 3, 4-byte packets
    # (section 5.3; the plot's other points are not in the text)
    "fig4_us": {"HXB Gigx2": 3.6, "HXB Gigx3": 3.9, "HXB Gigx8": 5.0, "NT Gigx3": 11.9,
                "MyrinetXP": 3.8, "InfiniBand-FJ (32-64 B)": 3.5},
    "fig4_cut_vs_nt": 0.68,  # HXB Gigx3 cuts NT Gigx3's per-packet cost by 68 %
}

LB = {
    # Fig. 4: which NIC each sender is bound to, 10-20 s, per state (section 4.3)
    "fig4": {
        "Z": "C alone on NIC0; A and B on NIC1 (the proposed method, 100 of 100 runs)",
        "X": "C shares its NIC with A or B (balance-tlb; X and Y differ only in which one)",
        "Y": "as X, C's volume rising late (balance-tlb, 5 of 100 runs)",
    },
    "fig4_runs": {"balance-tlb": {"X": 95, "Y": 5, "Z": 0}, "proposed": {"X": 0, "Y": 0, "Z": 100}},
    # CPU use while all three senders run, per state (section 4.3)
    "cpu_pct": {"X": 11.46, "Y": 10.13, "Z": 11.18},
}

# SRFS on Ether (JAXA-RR-05-004): the file service's paper. Throughput in
# Mbit/s (the tables' column b = MB/s x 8), I/O lengths in bytes (its KB and
# MB are 2^10 and 2^20: the lengths of its test program).
_K, _M = 1 << 10, 1 << 20
SRFS = {
    # Table 3 (section 4.2): TCP window 128 KB (netperf -s 131072), RTT by
    # ping; theoretical a = window / RTT, measured b = netperf's best.
    "table3": {"window_bytes": 128 * _K,
               "direct": {"rtt_ms": 3.3, "theory_mbps": 310, "netperf_mbps": 252.6, "share": 0.815},
               "vpn": {"rtt_ms": 4.0, "theory_mbps": 256, "netperf_mbps": 146.8, "share": 0.573}},
    # Tables A-1 and B-1: netperf -l 30 -s 131072 -M SIZE, the two columns
    # of each (both NIED -> JAXA), Mbit/s.
    "netperf_direct": {524288: (252.58, 246.75), 2097152: (251.94, 249.19), 8388608: (235.60, 247.19),
                       33554432: (238.00, 245.43)},
    "netperf_vpn": {524288: (152.98, 135.12), 2097152: (158.56, 149.84), 8388608: (147.18, 147.54),
                    33554432: (142.95, 145.76)},
    # Fig. 3 is the plot of the B tables (the VPN path, RTT 4.0 ms): SRFS
    # (B-6 .. B-9) and NFS with noac (B-2 .. B-5), Mbit/s per I/O length.
    "b_srfs": {
        "create_write": {8 * _K: 9.184, 16 * _K: 2.464, 64 * _K: 4.376, 128 * _K: 20.187, 512 * _K: 54.829,
                         _M: 79.133, 2 * _M: 121.419, 4 * _M: 164.699, 8 * _M: 191.851, 16 * _M: 193.072,
                         32 * _M: 169.768},  # B-6
        "overwrite": {8 * _K: 9.461, 16 * _K: 2.915, 64 * _K: 6.955, 128 * _K: 20.083, 512 * _K: 56.003,
                      _M: 79.648, 2 * _M: 122.720, 4 * _M: 169.109, 8 * _M: 193.672, 16 * _M: 191.976,
                      32 * _M: 193.219},  # B-7
        "read_after_mount": {8 * _K: 0.029, 16 * _K: 3.824, 64 * _K: 12.125, 128 * _K: 20.528, 512 * _K: 55.827,
                             _M: 76.691, 2 * _M: 123.088, 4 * _M: 165.080, 8 * _M: 195.677, 16 * _M: 204.675,
                             32 * _M: 207.429},  # B-8
        "read_after_write": {8 * _K: 0.045, 16 * _K: 4.016, 64 * _K: 11.693, 128 * _K: 20.075, 512 * _K: 54.040,
                             _M: 78.387, 2 * _M: 119.029, 4 * _M: 156.656, 8 * _M: 201.595, 16 * _M: 203.219,
                             32 * _M: 201.336},  # B-9
    },
    "b_nfs": {
        "create_write": {8 * _K: 5.856, 64 * _K: 5.987, 256 * _K: 5.541, _M: 6.541, 4 * _M: 6.747,
                         16 * _M: 7.645},  # B-2
        "overwrite": {8 * _K: 4.773, 64 * _K: 4.685, 256 * _K: 4.528, _M: 7.117, 4 * _M: 6.451,
                      16 * _M: 6.784},  # B-3
        "read_after_mount": {8 * _K: 5.808, 64 * _K: 5.917, 256 * _K: 5.971, _M: 5.877, 4 * _M: 5.915,
                             16 * _M: 5.891},  # B-4
        "read_after_write": {8 * _K: 14.725, 64 * _K: 14.840, 256 * _K: 14.768, _M: 13.096, 4 * _M: 12.957,
                             16 * _M: 12.851},  # B-5
    },
    # Section 5: "where the I/O length is small, SRFS on Ether fell below NFS"
    # (it was designed for large I/O; small I/O goes over UDP with the data
    # in the control message); its peaks over VPN: read 200, write 180 Mbit/s.
    "b_peak_mbps": {"read": 200, "write": 180},
}

# RI2N/DRV applied to NFS (Miura et al.): NFSv3 over TCP, two Xeon 5110
# nodes, Intel PRO/1000 PT, a tmpfs export, bonnie++ 1.03 sequential write of
# a 1.4 GB file (section 4.1). MB/s and the client's %CPU.
RI2N = {
    "file_bytes": 1.4e9,
    # Table 2: per condition and rwsize (bytes): (MB/s, %CPU)
    "table2": {"10GbE": {8192: (297.0, 29), 32768: (316.4, 24)},
               "GbE": {8192: (107.9, 8), 32768: (109.8, 7)},
               "LCB": {8192: (153.2, 16), 32768: (179.9, 15)},
               "RI2N/DRV": {8192: (131.6, 15), 32768: (157.2, 15)}},
    # Table 3 (from its ref. 4): one-way TCP burst, MB/s
    "table3_tcp_mbs": {"GbE": 112, "LCB": 222, "RI2N/DRV": 222},
    # section 4.1: LCB and RI2N/DRV 22 % to 64 % above GbE; RI2N/DRV 12 % (8 KB)
    # and 14 % (32 KB) below LCB
    "gain_over_gbe": (0.22, 0.64), "ri2n_below_lcb": {8192: 0.12, 32768: 0.14},
    # Table 4: MB/s before and during a 10 s cut of one of the two links,
    # writes continuing (section 4.2, rwsize 32 KB)
    "table4": {"LCB": (179.9, 108.7), "RI2N/DRV": (157.2, 109.0)},
    "table4_cut_s": 10,
}
