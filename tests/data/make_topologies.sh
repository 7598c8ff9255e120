#!/bin/sh
# Makes the synthetic hwloc topologies of tests/discover_tests.cpp: a machine
# shape from lstopo's synthetic description, then subtypes and HMAT-like
# memory attributes from hwloc-annotate (bandwidths in MiB/s, latencies in
# ns, seen from the CPUs of the package: initiator cpuset 0xf). Run it from
# tests/data after changing a topology, and update the tests' expectations.
set -eu

memattrs() {  # file node read-bandwidth write-bandwidth latency
  hwloc-annotate "$1" "$1" "numa:$2" memattr ReadBandwidth 0xf "$3"
  hwloc-annotate "$1" "$1" "numa:$2" memattr WriteBandwidth 0xf "$4"
  hwloc-annotate "$1" "$1" "numa:$2" memattr Latency 0xf "$5"
}

# One socket with its DRAM (node 0) and three CPU-less CXL memory expanders
# whose bandwidth order, latency order and node order all differ: node 1 on a
# x16 link behind a switch (most bandwidth, most latency), nodes 2 and 3 on
# x8 links, node 3 a newer card (less latency, more bandwidth than node 2).
# Node 2 has the subtype hwloc >= 2.10 gives CXL memory; nodes 1 and 3 have
# none, as hwloc 2.9 reports them.
rm -f topology_cxl.xml
lstopo-no-graphics -i "pack:1 [numa(memory=32GiB)] [numa(memory=128GiB)] [numa(memory=64GiB)] [numa(memory=256GiB)] core:4 pu:1" \
  --of xml topology_cxl.xml
hwloc-annotate topology_cxl.xml topology_cxl.xml numa:2 subtype CXL-DRAM
memattrs topology_cxl.xml 0 92160 61440 110
memattrs topology_cxl.xml 1 46080 35840 310
memattrs topology_cxl.xml 2 25600 20480 260
memattrs topology_cxl.xml 3 30720 25600 240

# One socket with DDR (node 0) and on-package HBM in flat mode (node 1,
# CPU-less, subtype HBM): four times the bandwidth, a little more latency.
rm -f topology_hbm.xml
lstopo-no-graphics -i "pack:1 [numa(memory=64GiB)] [numa(memory=16GiB)] core:4 pu:1" --of xml topology_hbm.xml
hwloc-annotate topology_hbm.xml topology_hbm.xml numa:1 subtype HBM
memattrs topology_hbm.xml 0 102400 81920 120
memattrs topology_hbm.xml 1 409600 307200 140

# Firmware without HMAT (no memory attributes at all): two sockets, each
# with DDR (nodes 0, 2) and HBM (nodes 1, 3), and a CPU-less node 4 local to
# the whole machine, persistent memory onlined as system RAM from dax0.0.
rm -f topology_no_memattrs.xml
lstopo-no-graphics -i "[numa(memory=256GiB)] pack:2 [numa(memory=16GiB)] [numa(memory=8GiB)] core:2 pu:1" \
  --of xml topology_no_memattrs.xml
hwloc-annotate topology_no_memattrs.xml topology_no_memattrs.xml -- numa:1 numa:3 -- subtype HBM
hwloc-annotate topology_no_memattrs.xml topology_no_memattrs.xml numa:4 info DAXDevice dax0.0
