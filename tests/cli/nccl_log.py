#!/usr/bin/env python3
"""Write an nccl-tests result table with known timing, for the calibration tests.

    nccl_log.py OUT OP FACTOR A B E D SIZE...

OP names the collective (sendrecv, all_reduce, ...; the header line says it), FACTOR is
busbw / algbw (sendrecv 1, all-reduce over 4 ranks 1.5). Size i's median time is
(A + S B)(1 + q_i D), q = +1, -1, -1, +1, ... (D = 0: on the line), written as the
out-of-place and in-place pair median (1 +- E), so the medians the importer takes are exact.
Times in microseconds with two decimals, as nccl-tests prints them.
"""
import sys


def main(argv):
    out, op = argv[1], argv[2]
    factor, a, b, e, d = (float(x) for x in argv[3:8])
    sizes = [int(s) for s in argv[8:]]
    q = (1, -1, -1, 1)
    rows, bws = [], []
    for i, s in enumerate(sizes):
        m = (a + b * s) * (1 + q[i % 4] * d)
        cells = []
        for t in (m * (1 + e), m * (1 - e)):
            us = "%.2f" % (t * 1e6)
            alg = "%.2f" % (s / float(us) / 1e3)
            bus = "%.2f" % (float(alg) * factor)
            cells.append((us, alg, bus))
            bws.append(float(bus))
        rows.append("%12d  %12d     float     sum      -1  %7s  %6s  %6s      0  %7s  %6s  %6s      0"
                    % (s, s // 4, *cells[0], *cells[1]))
    with open(out, "w") as f:
        f.write("# Collective test starting: %s_perf\n#\n" % op)
        f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong"
                "     time   algbw   busbw #wrong\n")
        f.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
                "            (us)  (GB/s)  (GB/s)\n")
        f.write("\n".join(rows) + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.3f\n#\n"
                % (sum(bws) / len(bws)))


if __name__ == "__main__":
    main(sys.argv)
