#!/usr/bin/python3
"""The learned reading's decision constants side by side: for each CUSUM drift (and cap on what
one step may add), the threshold that unmarked audio sets for it and how soon the real-music
bench's creatives through the living room are named at that threshold; beside CUSUM, a sum
over a fixed number of the latest steps. The network, the
references and their cohorts are the ones separability.py builds; the decision is
EmbeddingMatcher's (S <- max(0, S + min(z, cap) - drift) along each alignment, named at the
threshold with the rival margin's lead).

    tools/learned/decision.py --hosts .bench/real/hosts --unmarked .bench/calibration/hosts \\
        [--unmarked-catalogue DIR] [--settings cusum:2:inf,window:8:-2:6] [--weights FILE] [--cache DIR --state NAME]

--unmarked is the learned calibration's host folder (tools/bench-learned --definitions
signals/sound-calibration-learned.json --work .bench/calibration makes it): each file named
KIND-99-* is unmarked audio, listened to for the bench's 99 decoys as the calibration listens
for 100 (or for the decoys of --unmarked-catalogue: the calibration's own folder reproduces
its figures). Each setting's threshold is calibrate.py's: the level a minute reaches once in 1 000
hours, times 1.25. The bench's 12 creatives are then heard among all 111 (creatives and
decoys) in 10 s windows from 4 starts each, at every SNR; a window counts within W seconds when
its creative is named before W, and a wrong name is any other creative named first.
"""
import argparse, glob, os, re, sys, tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
import separability as S  # noqa: E402
import train as T  # noqa: E402

MARGIN, HOURS, RIVAL = 1.25, 1000.0, 2.0


class Cusum:
    """EmbeddingMatcher's CUSUM along every alignment; rows of one creative are consecutive
    from `first`."""

    def __init__(self, drift, cap, rows, first):
        self.drift, self.cap, self.first = drift, cap, first
        self.E = np.zeros(rows, np.float32)

    def step(self, z):
        prev = np.zeros_like(self.E)
        prev[1:] = self.E[:-1]
        prev[self.first] = 0
        self.E = np.maximum(0, prev + np.minimum(z, self.cap) - self.drift)
        return self.E


class Window:
    """The sum of the last n steps' z along each alignment, each z held within [lo, hi]: a
    fixed-horizon test (n steps of 0.25 s after the first second), where CUSUM is sequential."""

    def __init__(self, n, lo, hi, rows, first):
        self.n, self.lo, self.hi, self.first = n, lo, hi, first
        self.A = np.zeros((n, rows), np.float32)     # A[m]: the last m + 1 steps' sum

    def step(self, z):
        z = np.clip(z, self.lo, self.hi)
        prev = np.zeros_like(self.A)
        prev[1:, 1:] = self.A[:-1, :-1]
        prev[:, self.first] = 0
        self.A = prev + z[None, :]
        return self.A[-1]


class Decisions:
    """Every setting's statistic side by side: `cusum:drift:cap` or `window:n:lo:hi`."""

    def __init__(self, settings, rows, first):
        self.parts = []
        for s in settings:
            kind, *v = s
            self.parts.append(Cusum(v[0], v[1], rows, first) if kind == "cusum" else Window(int(v[0]), v[1], v[2], rows, first))

    def step(self, z):
        return np.stack([p.step(z) for p in self.parts])


def parse(text):
    out = []
    for s in text.split(","):
        kind, *v = s.split(":")
        out.append((kind, *map(float, v)))
    return out


def label(s):
    kind, *v = s
    return f"CUSUM, drift {v[0]:g}, cap {v[1]:g}" if kind == "cusum" else f"window of {int(v[0])} steps, z in [{v[1]:g}, {v[2]:g}]"


def held_out(own, own_kind, settings):
    """Whether one creative's own fit can be extrapolated: fitted on one half of each kind's
    minutes, the levels it says a minute reaches once in R hours, counted on the other half
    (each way), summed over the creatives, beside what the fit expects."""
    halves = ([], [])
    for kind in dict.fromkeys(own_kind):
        idx = [i for i, k in enumerate(own_kind) if k == kind]
        halves[0].extend(idx[:len(idx) // 2])
        halves[1].extend(idx[len(idx) // 2:])
    for s in range(len(settings)):
        print(f"{label(settings[s])}, each creative's own fit on one half, counted on the other (one way / the other):")
        print("| R | expected | fit as it is | x1.25 | x1.5 |\n|---|---|---|---|---|")
        for hours in (10, 30, 100, 300):
            cells, expected = [], 0.0
            for margin in (1.0, 1.25, 1.5):
                counts = []
                for a, b in ((0, 1), (1, 0)):
                    fit_on, count_on = own[halves[a], s, :], own[halves[b], s, :]
                    counts.append(sum(int((count_on[:, c] >= margin * calibrate.fit(sorted(fit_on[:, c].tolist()), hours)[2]).sum())
                                      for c in range(own.shape[2])))
                    expected = own.shape[2] * len(halves[b]) / 60 / hours
                cells.append(" / ".join(map(str, counts)))
            print(f"| {hours} h | {expected:.1f} | " + " | ".join(cells) + " |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--unmarked", required=True)
    ap.add_argument("--unmarked-catalogue", help="a folder of other decoys (track-decoy-*.wav) to listen for on the unmarked "
                    "audio instead of the bench's: the calibration's own, say")
    ap.add_argument("--settings", default="cusum:2:inf,cusum:3:inf,window:8:-2:6,window:12:-2:6")
    ap.add_argument("--per-creative", type=int, metavar="N", default=0,
                    help="also give each creative a threshold of its own: the unmarked audio listened to for the bench's "
                         "creatives and decoys together, each creative's minutes fitted at once in 1 000 x N hours (N "
                         "creatives in a catalogue, so that the catalogue's rate stays once in 1 000 h), x1.25")
    ap.add_argument("--minutes-out", help="with --per-creative: save each minute's most per creative (NumPy)")
    ap.add_argument("--bank-music", type=int, default=0,
                    help="add this many embeddings of clean training music (--cache) to every reference's cohort: a study "
                         "of the background bank")
    S.add_network_arguments(ap)
    args = ap.parse_args()
    settings = parse(args.settings)
    model = S.network(args)
    files = S.bench_files(args.hosts)
    extra = None
    if args.bank_music:
        if not args.cache:
            sys.exit("--bank-music needs --cache")
        _, music = T.load_tracks(args.cache, "train")
        rng = np.random.default_rng(11)
        picks = []
        for _ in range(args.bank_music):
            x = music[int(rng.integers(len(music)))]
            s0 = int(rng.integers(0, len(x) - T.SEG))
            picks.append(x[s0:s0 + T.SEG])
        extra = np.concatenate([S.embed(model, p)[0] for p in picks]).astype(np.float32)

    # Unmarked audio, for the 99 decoys: each minute's most evidence per setting.
    decoys = sorted(glob.glob(f"{args.unmarked_catalogue}/track-decoy-*.wav")) if args.unmarked_catalogue else files[len(S.CREATIVES):]
    # The bench's creatives among all 111; with --per-creative the unmarked audio is listened to
    # for all of them too, so that each has a tail of its own.
    ix = S.Index(model, files, args.weights, extra)
    null = ix if args.per_creative else S.Index(model, decoys, args.weights, extra)
    minutes = [[] for _ in settings]
    own = []                                   # with --per-creative: each minute's most, settings x creatives
    own_kind = []                              # and that minute's kind
    kinds = {}
    per_minute = int(60 / T.GRID)
    for path in sorted(glob.glob(f"{args.unmarked}/*-99-*.wav")):
        kind = re.sub(r"-99-.*", "", os.path.basename(path))
        e, _ = S.embed(model, S.load(path))
        c = Decisions(settings, len(null.R), null.first)
        most = np.zeros((len(settings), null.creatives), np.float32)
        for i in range(0, len(e), 4096):
            Z = null.z(e[i:i + 4096])
            for k in range(len(Z)):
                most = np.maximum(most, np.maximum.reduceat(c.step(Z[k]), null.first, axis=1))
                if (i + k + 1) % per_minute == 0:
                    m = most.max(axis=1)
                    for s in range(len(settings)):
                        minutes[s].append(float(m[s]))
                    kinds.setdefault(kind, []).append(m.copy())
                    own.append(most.copy())
                    own_kind.append(kind)
                    most[:] = 0
        print(f"unmarked {kind}: {len(e) * T.GRID / 60:.0f} min", file=sys.stderr, flush=True)
    thresholds, lines = [], []
    for s in range(len(settings)):
        v = sorted(minutes[s])
        level = calibrate.fit(v, HOURS)[2]
        thresholds.append(level * MARGIN)
        worst = max(kinds, key=lambda k: max(m[s] for m in kinds[k]))
        lines.append((v[-1], worst, level))
    # Each creative's own threshold: its own minutes' tail at a rate N times lower.
    own_th = None
    if args.per_creative:
        own = np.stack(own)                    # minutes x settings x creatives
        own_th = np.array([[calibrate.fit(sorted(own[:, s, c].tolist()), HOURS * args.per_creative)[2] * MARGIN
                            for c in range(ix.creatives)] for s in range(len(settings))], np.float32)
        for s in range(len(settings)):
            t = own_th[s]
            print(f"{label(settings[s])}: own thresholds over {ix.creatives} creatives: min {t.min():.2f}, median "
                  f"{np.median(t):.2f}, 90th pct {np.percentile(t, 90):.2f}, max {t.max():.2f} "
                  f"({os.path.basename(files[int(t.argmax())])}); the bench's 12: "
                  + ", ".join(f"{x:.1f}" for x in t[:len(S.CREATIVES)]), flush=True)
        if args.minutes_out:
            np.save(args.minutes_out, own)
        held_out(own, own_kind, settings)
    talk = glob.glob(f"{args.hosts}/talk-*.wav")[0]
    snrs = [100, 10, 0]
    # Rows: each setting at the one threshold, then (with --per-creative) at each creative's own.
    rows = list(range(len(settings))) + (list(range(len(settings))) if own_th is not None else [])
    named = {(s, snr): [] for s in range(len(rows)) for snr in snrs}   # seconds to the right name, or inf
    wrong = {(s, snr): 0 for s in range(len(rows)) for snr in snrs}
    th = np.repeat(np.array(thresholds, np.float32)[:, None], ix.creatives, axis=1)
    if own_th is not None:
        th = np.concatenate([th, own_th])
    with tempfile.TemporaryDirectory() as tmp:
        for snr in snrs:
            for ci, host in enumerate(files[:len(S.CREATIVES)]):
                x = S.room(args.hark, host, f"{tmp}/room.wav", ci + 1, talk, snr)
                for t0 in S.STARTS:
                    s0 = int(t0 * T.RATE)
                    e, _ = S.embed(model, x[s0:s0 + 10 * T.RATE])
                    Z = ix.z(e)
                    c = Decisions(settings, len(ix.R), ix.first)
                    when = [np.inf] * len(rows)
                    for k in range(len(Z)):
                        E = c.step(Z[k])
                        best = np.maximum.reduceat(E, ix.first, axis=1)[rows]  # rows x creatives
                        # As the bench asks: the trial's creative among the 99 decoys alone.
                        best[:, [c for c in range(len(S.CREATIVES)) if c != ci]] = -np.inf
                        order = np.argsort(-best, axis=1)
                        for s in range(len(rows)):
                            if when[s] != np.inf:
                                continue
                            top, second = order[s, 0], order[s, 1]
                            if best[s, top] >= th[s, top] and best[s, top] - best[s, second] >= RIVAL:
                                if top == ci:
                                    when[s] = (k * T.GRID * T.RATE + T.SEG) / T.RATE
                                else:
                                    wrong[(s, snr)] += 1
                                    when[s] = -1
                    for s in range(len(rows)):
                        named[(s, snr)].append(when[s] if when[s] >= 0 else np.inf)
            print(f"bench SNR {snr}: done", file=sys.stderr, flush=True)

    print(f"Unmarked: {len(minutes[0])} minutes ({len(minutes[0]) / 60:.2f} h), {null.creatives} decoys. "
          f"Bench: {len(S.CREATIVES)} creatives among {ix.creatives}, {len(S.STARTS)} windows each; "
          "named within 3 / 6 / 10 s, learned reading alone.\n")
    print("| decision | unmarked: highest (kind) | once in 1 000 h | threshold (x1.25) | clean | SNR 10 dB | SNR 0 dB | wrong |")
    print("|---|---|---|---|---|---|---|---|")
    for r, s in enumerate(rows):
        cells = []
        for snr in snrs:
            t = np.array(named[(r, snr)])
            cells.append(" / ".join(f"{100 * np.mean(t <= w):.0f}" for w in (3, 6, 10)))
        high, worst, level = lines[s]
        own = r >= len(settings)
        th_cell = (f"each its own: {th[r, :len(S.CREATIVES)].min():.2f}–{th[r, :len(S.CREATIVES)].max():.2f} (the 12), "
                   f"at most {th[r].max():.2f}") if own else f"{thresholds[s]:.2f}"
        print(f"| {label(settings[s])}{', own thresholds' if own else ''} | {high:.2f} ({worst}) | {level:.2f} | {th_cell} | "
              f"{' | '.join(cells)} | {sum(wrong[(r, snr)] for snr in snrs)} |", flush=True)


if __name__ == "__main__":
    main()
