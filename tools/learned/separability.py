#!/usr/bin/python3
"""How far one room embedding tells its creative from everything else: the measurement under
the learned reading's speed. For each creative of the real-music bench heard through the
bench's living room (hark simulate: AAC 64k, small speaker, RT60 0.5 s at 2.7 m, the bench's
talkers, phone microphone, +100 ppm), every 0.25 s step's similarity to the creative's own
reference at the true alignment, and the most that step scores against any reference of the
99 decoys; both also in the cohort's terms the decision reads (s − the reference's cohort 95th
percentile) / its spread.

    tools/learned/separability.py --hosts .bench/real/hosts [--weights FILE] [--cache DIR --state NAME] [--hark .build/release/hark]

--hosts is the real-audio bench's host folder (tools/bench-learned makes it); --cache holds
train.py's trained state (--state, as train.py names it); without --state, the network is the
one --weights holds (the file in force by default). Prints a Markdown table, a row per path.
"""
import argparse, glob, os, subprocess, sys, tempfile

import numpy as np
import soundfile as sf
import torch
from scipy.signal import resample_poly

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train as T  # noqa: E402

CREATIVES = ["track-0", "track-1", "track-2", "track-3", "track-4", "track-5", "track-advert-0", "track-advert-1",
             "track-advert-2", "speech-0", "speech-1", "sparse-speech-0"]
STARTS = [1.3, 6.7, 11.1, 17.9]   # seconds into each creative where a 10 s window begins


def load(path):
    x, rate = sf.read(path, dtype="float32")
    if x.ndim > 1:
        x = x.mean(1)
    return resample_poly(x, T.RATE, rate).astype(np.float32) if rate != T.RATE else x


def embed(model, x, chunk=2048):
    starts = list(range(0, len(x) - T.SEG + 1, int(T.GRID * T.RATE)))
    out = []
    with torch.no_grad():
        for i in range(0, len(starts), chunk):
            seg = np.stack([x[s:s + T.SEG] for s in starts[i:i + chunk]])
            out.append(model(T.features(torch.from_numpy(seg))).numpy())
    e = np.concatenate(out) if out else np.zeros((0, T.DIM), np.float32)
    return e, np.array([np.sqrt((x[s:s + T.SEG] ** 2).mean()) for s in starts])


def add_network_arguments(ap):
    ap.add_argument("--cache", help="the folder of train.py's trained state; needed with --state")
    ap.add_argument("--hark", default=os.path.join(T.ROOT, ".build", "release", "hark"))
    ap.add_argument("--weights", default=os.path.join(T.ROOT, "Sources", "CSoundModel", "sound-embedder.hkse"))
    ap.add_argument("--state")


def network(args):
    model = T.Embedder()
    if args.state:
        if not args.cache:
            sys.exit("--state needs --cache")
        model.load_state_dict(torch.load(os.path.join(args.cache, args.state)))
    else:
        T.read_weights(model, args.weights)
    model.eval()
    return model


class Index:
    """The references of a catalogue as EmbeddingIndex builds them: each creative's embeddings,
    8-bit, the quiet ones zero, and each reference's cohort level and spread (the weights file's
    background bank and up to 1 024 rows of other creatives)."""

    def __init__(self, model, files, weights, extra=None):
        refs, owner = [], []
        for i, h in enumerate(files):
            e, rms = embed(model, load(h))
            q = np.round(e * 127)
            q[rms < rms.max() * 0.01] = 0          # the catalogue's quiet segments (CreativeEmbeddings.quietBelow)
            norm = np.linalg.norm(q, axis=1, keepdims=True)
            refs.append(np.where(norm > 0, q / np.maximum(norm, 1e-6), 0))
            owner += [i] * len(e)
        self.R, self.owner = np.concatenate(refs).astype(np.float32), np.array(owner)
        self.first = np.cumsum([0] + [len(r) for r in refs])[:-1]
        self.creatives = len(files)
        B = T.read_tensors(weights)[1].get("background", np.zeros((0, T.DIM), np.float32))
        if extra is not None:
            B = np.concatenate([B, extra])
        others = max(1024, 2048 - len(B))
        picked = np.arange(0, len(self.R), max(1, len(self.R) // others))[:others]
        C = np.concatenate([B, self.R[picked]])
        cown = np.concatenate([-np.ones(len(B), int), self.owner[picked]])
        S = self.R @ C.T
        self.level, self.spread = np.zeros(len(self.R), np.float32), np.ones(len(self.R), np.float32)
        for r in range(len(self.R)):
            o = np.sort(S[r, cown != self.owner[r]])
            self.level[r], self.spread[r] = o[min(len(o) - 1, int(0.95 * len(o)))], max(o.std(), 0.02)

    def z(self, e):
        return (e @ self.R.T - self.level) / self.spread


def bench_files(hosts):
    return [glob.glob(f"{hosts}/{c}-30s-*.wav")[0] for c in CREATIVES] + sorted(glob.glob(f"{hosts}/track-decoy-*.wav"))


def room(hark, host, out, seed, talk=None, snr=100):
    """The bench's living room, as the real-audio bench's rows hear it."""
    path = ["--codec", "aac64", "--speaker", "150:12000", "--rt60", "0.5", "--mic", "100:8000", "--drift-ppm", "100",
            "--rate", "8000", "--seed", str(seed)]
    if snr < 100:
        path += ["--noise", talk, "--snr", str(snr)]
    subprocess.run([hark, "simulate", host, out] + path, check=True, capture_output=True)
    return load(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", required=True)
    add_network_arguments(ap)
    args = ap.parse_args()
    model = network(args)
    hosts = bench_files(args.hosts)
    ix = Index(model, hosts, args.weights)
    R, owner, first = ix.R, ix.owner, ix.first
    talk = glob.glob(f"{args.hosts}/talk-*.wav")[0]
    decoys = owner >= len(CREATIVES)
    print(f"| path | steps | own similarity, median (10th pct) | best of {len(hosts) - len(CREATIVES)} decoys' {int(decoys.sum())} "
          "references, median (90th pct) | own above best | own z, median (10th pct) | best decoy z, median (90th pct) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for snr in [100, 10, 0]:
            own, other, zown, zother = [], [], [], []
            for ci, host in enumerate(hosts[:len(CREATIVES)]):
                x = room(args.hark, host, f"{tmp}/room.wav", ci + 1, talk, snr)
                for t0 in STARTS:
                    s0 = int(t0 * T.RATE)
                    e, _ = embed(model, x[s0:s0 + 10 * T.RATE])
                    sims = e @ R.T
                    z = (sims - ix.level) / ix.spread
                    j0 = int(round(t0 / T.GRID))
                    for k in range(len(e)):
                        r = first[ci] + j0 + k
                        if r >= len(R) or owner[r] != ci:
                            break
                        own.append(sims[k, r]); zown.append(z[k, r])
                        other.append(sims[k, decoys].max()); zother.append(z[k, decoys].max())
            own, other, zown, zother = map(np.array, (own, other, zown, zother))
            name = "clean path" if snr == 100 else f"{snr} dB"
            print(f"| {name} | {len(own)} | {np.median(own):.3f} ({np.percentile(own, 10):.3f}) | {np.median(other):.3f} "
                  f"({np.percentile(other, 90):.3f}) | {100 * np.mean(own > other):.0f} % | {np.median(zown):.2f} "
                  f"({np.percentile(zown, 10):.2f}) | {np.median(zother):.2f} ({np.percentile(zother, 90):.2f}) |", flush=True)


if __name__ == "__main__":
    main()
