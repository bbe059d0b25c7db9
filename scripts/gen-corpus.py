#!/usr/bin/env python3
"""Write N small, distinct text files (about 80-120 words each) into DIR, for scale and
memory measurements: scripts/gen-corpus.py N DIR"""
import os
import random
import sys

WORDS = ("harbour tide ledger survey station buoy vessel anchor cliff puffin seal ferry lamp "
         "keeper engine pump sensor pressure weather wind gale current depth chart datum "
         "crew schedule budget delivery trial season archive record photograph notebook "
         "radio battery kit route plan office island skerry fjord channel shoal reef").split()


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(42)
    for i in range(n):
        sub = os.path.join(out, f"batch{i // 100:03d}")
        os.makedirs(sub, exist_ok=True)
        words = [rng.choice(WORDS) for _ in range(rng.randint(80, 120))]
        text = f"Report {i}: " + " ".join(words) + ".\n"
        with open(os.path.join(sub, f"report-{i:05d}.txt"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
