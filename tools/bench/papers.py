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
