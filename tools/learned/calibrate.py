#!/usr/bin/python3
"""The learned reading's threshold from unmarked audio: reads each minute's most evidence at
any alignment of any creative and that creative (learned-unmarked-minutes.tsv, written by the
bench's falsePositives.learned run), fits an exponential tail above the 90th percentile, and prints
the evidence that a minute of unmarked audio would reach once in RATE hours, the highest seen,
and the threshold with its margin.

    tools/learned/calibrate.py .bench/calibration/learned-unmarked-minutes.tsv [--hours 1000] [--margin 1.25] [--at LEVEL]

The margin multiplies the fitted level: the tail above the fit's range is extrapolated, and a
catalogue on air is not the calibration's.
"""
import argparse, math, sys


def fit(values, hours):
    """(the 90th percentile, the tail's mean excess over it, the level a minute reaches once in
    `hours`, and how many hours pass before a minute reaches a given level) of each minute's most
    evidence, sorted."""
    u = values[int(0.9 * len(values))]
    over = [v - u for v in values if v > u]
    p_u = len(over) / len(values)
    beta = sum(over) / len(over) if over else 1e-9
    rate = 1 / (hours * 60)

    def hours_to(at):
        return 1 / (60 * (p_u * math.exp(-(at - u) / beta) if at > u else 1.0))

    return u, beta, (u + beta * math.log(p_u / rate) if p_u > rate else u), hours_to


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("minutes")
    ap.add_argument("--hours", type=float, default=1000.0, help="one false detection in this many hours")
    ap.add_argument("--margin", type=float, default=1.25)
    ap.add_argument("--at", type=float, action="append", default=[],
                    help="also print how often a minute would reach this level, by the same fit (repeatable)")
    args = ap.parse_args()
    rows = [l.rstrip("\n").split("\t") for l in open(args.minutes)][1:]
    rows = [r for r in rows if len(r) >= 2]
    values = sorted(float(r[1]) for r in rows)
    if len(values) < 100:
        sys.exit(f"{len(values)} minutes: too few to fit a tail")
    by_kind = {}
    by_creative = {}
    for r in rows:
        by_kind.setdefault(r[0], []).append(float(r[1]))
        if len(r) > 2 and r[2]:
            by_creative[r[2]] = max(by_creative.get(r[2], 0.0), float(r[1]))
    u, beta, level, hours_to = fit(values, args.hours)
    print(f"{len(values)} minutes ({len(values) / 60:.2f} h); 90th percentile {u:.2f}; tail mean excess {beta:.3f}")
    for kind, vs in sorted(by_kind.items()):
        print(f"  {kind}: {len(vs)} min, highest {max(vs):.2f}, median {sorted(vs)[len(vs) // 2]:.2f}")
    if by_creative:
        top = sorted(by_creative.items(), key=lambda kv: -kv[1])[:8]
        print("  the creatives that held a minute's most, highest first: " + ", ".join(f"{c} {v:.2f}" for c, v in top))
    print(f"highest seen {values[-1]:.2f}; once in {args.hours:.0f} h: {level:.2f}; with the margin x{args.margin}: {level * args.margin:.2f}")
    for at in args.at:
        print(f"at {at:g}: a minute reaches it once in {hours_to(at):.3g} h by the fit")


if __name__ == "__main__":
    main()
