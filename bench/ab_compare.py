#!/usr/bin/env python3
"""A/B comparison of flowsketch builds on one trace: many short interleaved runs.

usage: bench/ab_compare.py TRACE ROUNDS LABEL=COMMAND [LABEL=COMMAND ...]

Each round runs every COMMAND once, in turn, with `-r TRACE` appended (the
word `floor` runs bench/pcap_floor of the build next to this script's
default, build/, on the trace instead). A COMMAND that starts with `|` reads
the trace from a pipe instead: `cat TRACE | COMMAND -r -` (`|floor`:
`cat TRACE | pcap_floor -`); its CPU time is the command's alone, its wall
time the pipeline's. The trace is read once through the
page cache first. For each label it prints the wall and CPU (user + system,
from wait4, to the microsecond) minimum, first quartile and median, and the
ratio of its quartile to the first label's.

Why short runs and the quartile: this machine's speed drifts by tens of
percent over minutes, so a 2-second replay repeated 7 times cannot show a 5%
change. A trace of ~2 million packets (0.3 s) repeated 15 times per variant,
interleaved, shows it: the noise only ever slows a run down, and the lower
quartile of many short runs tracks the undisturbed speed: two copies of one
binary agree within about 1% this way. Make such a trace with
  build/src/flowsketch gen --out /tmp/a2m.pcap --packets 2000000 --flows 100000 --seed 7
  build/src/flowsketch gen --out /tmp/b2m.pcap --packets 1000000 --flows 20000 \
      --syn-flood 1000000 --seed 7
and quote the whole-process figures from bench/replay_benchmark.sh.
"""
import collections
import os
import subprocess
import sys
import time


def quantile(values, fraction):
    ordered = sorted(values)
    return ordered[int((len(ordered) - 1) * fraction)]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("\n\n")[1])
    trace, rounds, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    floor = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bench",
                         "pcap_floor")
    subprocess.run(["cat", trace], stdout=subprocess.DEVNULL, check=True)
    wall = collections.defaultdict(list)
    cpu = collections.defaultdict(list)
    for _ in range(rounds):
        for spec in specs:
            label, command = spec.split("=", 1)
            piped = command.startswith("|")
            command = command.lstrip("|")
            source = "-" if piped else trace
            argv = [floor, source] if command == "floor" else command.split() + ["-r", source]
            start = time.perf_counter()
            feed = subprocess.Popen(["cat", trace], stdout=subprocess.PIPE) if piped else None
            process = subprocess.Popen(argv, stdin=feed.stdout if feed else None,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if feed:
                feed.stdout.close()  # the command holds the only reading end
            _, status, usage = os.wait4(process.pid, 0)
            if feed:
                feed.wait()
            wall[label].append(time.perf_counter() - start)
            cpu[label].append(usage.ru_utime + usage.ru_stime)
            if status != 0:
                sys.exit(f"{label}: {' '.join(argv)} failed (status {status})")
    first = specs[0].split("=", 1)[0]
    for label in wall:
        w, c = wall[label], cpu[label]
        print(f"{label:10s} wall min {min(w):.3f} q25 {quantile(w, .25):.3f} "
              f"med {quantile(w, .5):.3f} | cpu min {min(c):.3f} q25 {quantile(c, .25):.3f} "
              f"med {quantile(c, .5):.3f} | q25/{first} "
              f"{quantile(w, .25) / quantile(wall[first], .25):.3f}")


if __name__ == "__main__":
    main()
