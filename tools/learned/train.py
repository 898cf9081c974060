#!/usr/bin/python3
"""Trains Hark's sound embedder: about a second of audio (8 kHz, 32 frames of a 64-band log-mel
spectrogram) to a 64-dimensional unit vector, so that a creative heard through a room lands near
the creative itself and far from every other second of audio.

Contrastive learning (NT-Xent, as Chang et al.'s neural audio fingerprint) on pairs of a clean
segment and a replica of it made as a room would make it: a time offset within the reference
grid's half step, a loudspeaker's and a microphone's band, a room's impulse response, talkers,
music or noise at SNR -3 to 15 dB, level and clipping. Every segment of a batch is a negative of
every other; four segments of each track (at least 1.5 s apart) share a batch, so that places
within one track are told apart, which is what an alignment needs.

Hard negatives (--same-soundtrack, --twins): most of a batch's tracks come from two soundtracks,
so the network must tell apart the tracks of one composer, as a catalogue's creatives and decoys
are; and a voice-over's bed place also enters the batch bare or under another voice, so a voice
over a bed is told from the bed and from another voice over it, rather than read as the bed.

    tools/learned/train.py --cache DIR [--steps N] [--init FILE.hkse] [--out FILE]

--init starts from a weights file (the network's folded state; batch normalisation then stays
as folded, its statistics fixed): a fine-tuning of the network in force.

DIR holds the tracks decoded by tools/learned/tracks.py decode DIR; only the tracks whose role
in signals/real-audio-tracks.tsv is "train" are read, and the talkers are espeak-ng voices and
texts that no bench uses. PyTorch on the CPU (Debian's python3-torch); fixed seed. Writes the
weights with batch normalisation folded into the convolutions (the format: docs/sound-embedder.md)
and, beside them, the inputs and embeddings that the inference test compares with Hark's.
"""
import argparse, hashlib, json, math, os, struct, subprocess, sys, tempfile, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import tracks  # noqa: E402

# The front end. Hark computes the same (Sources/HarkDSP/SoundEmbedding): the window and the
# mel matrix travel in the weights file, so neither side computes them twice.
RATE = 8000
NFFT = 512          # 64 ms: a room's early reflections fall within one frame
HOP = 256           # 32 ms
FRAMES = 32         # a segment: 512 + 31 x 256 = 8448 samples, 1.056 s
MELS = 64
FMIN, FMAX = 125.0, 3800.0   # what a small loudspeaker and a phone's microphone both pass
FLOOR = 1e-10       # power floor of the log, about -100 dB re a full-scale sine's band power
DIM = 64
SEG = NFFT + (FRAMES - 1) * HOP
GRID = 0.25         # seconds between a creative's reference embeddings (and the room's)
TAIL = 4096         # samples of impulse response kept (0.51 s)

# Voices and texts that no bench uses (the benches' are in Sources/HarkEngine/Bench/BenchHosts.swift).
TALK_VOICES = ["en+m2", "en+m5", "en+m6", "en+f5", "en-us+m1", "en-us+m3", "en-gb-x-rp", "en-029+m1",
               "en-gb-scotland+f1", "en-us+f2", "en+klatt", "en+whisper", "de", "fr", "es", "it", "nl", "pl"]
TEXT_FILES = ["/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0",
              "/usr/share/common-licenses/MPL-2.0", "/usr/share/common-licenses/GFDL-1.3"]


def hann():
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(NFFT) / NFFT)).astype(np.float32)  # periodic


def mel_matrix():
    """(NFFT/2 + 1) x MELS triangles on the HTK mel scale, each of unit area in bins."""
    def mel(f): return 2595.0 * np.log10(1 + f / 700.0)
    def hz(m): return 700.0 * (10 ** (m / 2595.0) - 1)
    edges = hz(np.linspace(mel(FMIN), mel(FMAX), MELS + 2))
    freqs = np.arange(NFFT // 2 + 1) * RATE / NFFT
    m = np.zeros((NFFT // 2 + 1, MELS), np.float32)
    for j in range(MELS):
        lo, mid, hi = edges[j], edges[j + 1], edges[j + 2]
        up = (freqs - lo) / (mid - lo)
        down = (hi - freqs) / (hi - mid)
        m[:, j] = np.maximum(0, np.minimum(up, down))
        m[:, j] /= max(m[:, j].sum(), 1e-9)
    return m


WINDOW = torch.from_numpy(hann())
MEL = torch.from_numpy(mel_matrix())


def features(x):
    """x: (B, SEG) samples -> (B, 1, MELS, FRAMES) log-mel, its mean over the segment taken out
    (so that the level of the room does not matter)."""
    frames = x.unfold(1, NFFT, HOP) * WINDOW                      # (B, FRAMES, NFFT)
    spec = torch.fft.rfft(frames, dim=2) / (NFFT / 2)
    power = spec.real ** 2 + spec.imag ** 2                       # (B, FRAMES, bins)
    logmel = torch.log(power @ MEL + FLOOR)                       # (B, FRAMES, MELS)
    logmel = logmel - logmel.mean(dim=(1, 2), keepdim=True)
    return logmel.transpose(1, 2).unsqueeze(1)


class Embedder(nn.Module):
    CHANNELS = [1, 32, 64, 128, 128]

    def __init__(self):
        super().__init__()
        c = self.CHANNELS
        self.convs = nn.ModuleList(nn.Conv2d(c[i], c[i + 1], 3, stride=2, padding=1, bias=False) for i in range(len(c) - 1))
        self.norms = nn.ModuleList(nn.BatchNorm2d(c[i + 1]) for i in range(len(c) - 1))
        flat = c[-1] * (MELS // 16) * (FRAMES // 16)
        self.fc1 = nn.Linear(flat, 128)
        self.fc2 = nn.Linear(128, DIM)

    def forward(self, f):
        for conv, norm in zip(self.convs, self.norms):
            f = F.relu(norm(conv(f)))
        f = F.relu(self.fc1(f.flatten(1)))
        return F.normalize(self.fc2(f), dim=1)


def nt_xent(a, b, temperature):
    z = torch.cat([a, b])
    sim = z @ z.t() / temperature
    n = a.shape[0]
    sim.fill_diagonal_(-1e9)
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, target)


# ---------------------------------------------------------------- audio for training

def load_tracks(cache, role):
    rows = [r for r in tracks.read_table() if r[4] == role]
    audio = []
    for r in rows:
        path = f"{cache}/{r[0]}.f32"
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: run tools/learned/tracks.py decode {cache}")
        x = np.fromfile(path, np.float32)
        peak = np.abs(x).max()
        audio.append(x / max(peak, 1e-6) * 0.5)
    return rows, audio


def talkers(cache, seconds):
    """Speech in the training voices, from licence texts (what no bench says), at RATE."""
    path = f"{cache}/train-talk-{int(seconds)}s.f32"
    if os.path.exists(path):
        return np.fromfile(path, np.float32)
    words = " ".join(open(f).read() for f in TEXT_FILES if os.path.exists(f)).split()
    rng = np.random.default_rng(7)
    out, total, k = [], 0, 0
    while total < seconds * RATE:
        start = int(rng.integers(0, max(1, len(words) - 60)))
        text = " ".join(words[start:start + 40])
        voice = TALK_VOICES[k % len(TALK_VOICES)]
        k += 1
        with tempfile.NamedTemporaryFile(suffix=".wav") as w:
            subprocess.run(["espeak-ng", "-v", voice, "-s", str(int(rng.integers(140, 190))), "-w", w.name],
                           input=text.encode(), check=True, capture_output=True)
            pcm = subprocess.run(["ffmpeg", "-v", "error", "-i", w.name, "-ac", "1", "-ar", str(RATE), "-f", "f32le", "pipe:1"],
                                 check=True, capture_output=True).stdout
        x = np.frombuffer(pcm, np.float32)
        x = x / max(np.abs(x).max(), 1e-6) * 0.5
        out.append(x)
        total += len(x)
    x = np.concatenate(out).astype(np.float32)
    x.tofile(path)
    return x


class Replicas:
    """What a room makes of a segment, a batch at a time."""

    def __init__(self, music, speech, rng):
        self.music, self.speech, self.rng = music, speech, rng

    def excerpt(self, length, kind):
        r = self.rng
        if kind == "speech":
            i = int(r.integers(0, len(self.speech) - length))
            return self.speech[i:i + length]
        x = self.music[int(r.integers(0, len(self.music)))]
        if len(x) <= length:
            return np.resize(x, length)
        i = int(r.integers(0, len(x) - length))
        return x[i:i + length]

    def impulse(self):
        r = self.rng
        rt60 = r.uniform(0.15, 1.0)
        t = np.arange(TAIL) / RATE
        h = r.standard_normal(TAIL).astype(np.float32) * np.exp(-6.9 * t / rt60)
        h[: int(0.002 * RATE)] = 0
        for _ in range(int(r.integers(2, 7))):  # early reflections
            h[int(r.uniform(0.002, 0.02) * RATE)] += r.uniform(-0.7, 0.7)
        drr = r.uniform(-15, 6)  # direct-to-reverberant ratio, dB
        h *= 10 ** (-drr / 20) / max(np.sqrt((h ** 2).sum()), 1e-9)
        h[0] = 1.0
        return h

    def band(self):
        """A loudspeaker's and a microphone's response as a gain per bin of the segment's FFT."""
        r = self.rng
        n = SEG + TAIL
        f = np.fft.rfftfreq(n, 1 / RATE)
        lo, hi = r.uniform(80, 450), r.uniform(2500, 4000)
        g = 1 / np.sqrt(1 + (lo / np.maximum(f, 1)) ** 4) / np.sqrt(1 + (f / hi) ** 8)
        tilt = r.uniform(-4, 4) * np.log2(np.maximum(f, 50) / 1000)        # dB
        ripple = sum(r.uniform(-3, 3) * np.sin(2 * np.pi * f / r.uniform(300, 2000) + r.uniform(0, 6.3)) for _ in range(2))
        return (g * 10 ** ((tilt + ripple) / 20)).astype(np.float32)

    def noise(self, length):
        r = self.rng
        kind = r.choice(["talk", "talk", "talk", "music", "pink", "brown"])
        if kind == "talk":
            return sum(self.excerpt(length, "speech") * r.uniform(0.5, 1) for _ in range(int(r.integers(1, 7))))
        if kind == "music":
            return self.excerpt(length, "music")
        w = np.fft.rfft(r.standard_normal(length))
        f = np.maximum(np.fft.rfftfreq(length, 1 / RATE), 20)
        return np.fft.irfft(w / (np.sqrt(f) if kind == "pink" else f), length).astype(np.float32)

    def make(self, sources, shifts):
        """sources: (B, TAIL + SEG + 2*max shift) clean audio; shifts: samples by which each
        replica leads or lags its anchor. Returns (anchors, replicas), each (B, SEG)."""
        B = len(sources)
        pad = (sources.shape[1] - TAIL - SEG) // 2
        anchors = sources[:, TAIL + pad:TAIL + pad + SEG]
        n = SEG + TAIL
        out = np.empty((B, SEG), np.float32)
        for i in range(B):
            x = sources[i, pad + shifts[i]:pad + shifts[i] + n]
            h = self.impulse()
            spec = np.fft.rfft(x, 2 * n) * np.fft.rfft(h, 2 * n)
            y = np.fft.irfft(spec, 2 * n)[:n]
            y = np.fft.irfft(np.fft.rfft(y) * self.band(), n)[TAIL:]
            p = (y ** 2).mean() + 1e-12
            if self.rng.uniform() < 0.9:
                v = self.noise(SEG)
                snr = self.rng.uniform(-3, 15)
                y = y + v * np.sqrt(p / ((v ** 2).mean() + 1e-12) / 10 ** (snr / 10))
            y = y * 10 ** (self.rng.uniform(-25, 10) / 20)
            if self.rng.uniform() < 0.05:
                y = np.clip(y, -0.3, 0.3)
            y = y + self.rng.standard_normal(SEG) * 1e-4
            out[i] = y
        return anchors, out


def batch(music, speech, rng, pairs, per_track=4, soundtracks=None, same=0.0, twins=0.0):
    """Clean sources: per_track places of each drawn track at least 1.5 s apart; a fifth of the
    sources are a voice-over on the track (an advert's shape), a tenth speech alone.
    soundtracks: each track's package; a track is drawn from one of two packages picked for the
    batch with probability same. twins: the probability that a voice-over's bed place also
    enters the batch, bare or under another voice (each its own pair)."""
    shift = int(GRID / 2 * RATE)
    length = TAIL + SEG + 2 * shift
    src = np.empty((pairs, length), np.float32)
    pool = None
    if soundtracks is not None and same > 0:
        names = sorted(set(soundtracks))
        picked = set(rng.choice(names, size=min(2, len(names)), replace=False))
        pool = [i for i, n in enumerate(soundtracks) if n in picked]
    k = 0
    while k < pairs:
        if pool and rng.uniform() < same:
            t = pool[int(rng.integers(0, len(pool)))]
        else:
            t = int(rng.integers(0, len(music)))
        x = music[t]
        if len(x) < length * per_track * 2:
            continue
        places = np.sort(rng.integers(0, len(x) - length, size=per_track))
        if np.any(np.diff(places) < int(1.5 * RATE)):
            continue
        for p in places:
            if k == pairs:
                break
            s, twin = x[p:p + length].copy(), None
            if np.sqrt((s[TAIL:] ** 2).mean()) < 10 ** (-50 / 20):
                continue
            u = rng.uniform()
            if u < 0.2:
                i = int(rng.integers(0, len(speech) - length))   # drawn in this order: without the options,
                bed = s * 10 ** (-rng.uniform(5, 15) / 20)       # the stream that trained the network in force
                s = bed + speech[i:i + length]
                if twins > 0 and k + 1 < pairs and rng.uniform() < twins:
                    if rng.uniform() < 0.5:
                        twin = bed
                    else:
                        j = int(rng.integers(0, len(speech) - length))
                        twin = bed + speech[j:j + length]
            elif u < 0.3:
                i = int(rng.integers(0, len(speech) - length))
                s = speech[i:i + length].copy()
                if np.sqrt((s[TAIL:] ** 2).mean()) < 10 ** (-45 / 20):
                    continue
            src[k] = s
            k += 1
            if twin is not None:
                src[k] = twin
                k += 1
    shifts = rng.integers(0, 2 * shift + 1, size=pairs)
    return src, shifts


class Batches(torch.utils.data.IterableDataset):
    """(anchors, replicas) for each step, from one fixed seed (one worker, so one order)."""

    def __init__(self, music, speech, pairs, steps, soundtracks=None, same=0.0, twins=0.0):
        self.music, self.speech, self.pairs, self.steps = music, speech, pairs, steps
        self.soundtracks, self.same, self.twins = soundtracks, same, twins

    def __iter__(self):
        rng = np.random.default_rng(1)
        replicas = Replicas(self.music, self.speech, rng)
        for _ in range(self.steps):
            src, shifts = batch(self.music, self.speech, rng, self.pairs, soundtracks=self.soundtracks, same=self.same,
                                twins=self.twins)
            a, b = replicas.make(src, shifts)
            yield torch.from_numpy(a), torch.from_numpy(b)


# ---------------------------------------------------------------- export

def folded(model):
    """(kind, weight, bias) per layer with batch normalisation folded into each convolution."""
    out = []
    for conv, norm in zip(model.convs, model.norms):
        scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
        out.append(("conv", conv.weight * scale[:, None, None, None], norm.bias - norm.running_mean * scale))
    out.append(("dense", model.fc1.weight, model.fc1.bias))
    out.append(("dense", model.fc2.weight, model.fc2.bias))
    return [(k, w.detach().numpy().astype(np.float32), b.detach().numpy().astype(np.float32)) for k, w, b in out]


def background(model, music, speech, rng, count=1024):
    """Embeddings of audio that is no creative, for each reference to be read against beside
    the other creatives (docs/sound-embedder.md, "The decision"): clean training music, the
    same through rooms with talkers, talkers alone, babble, and pink, brown and white noise at
    several levels. A quarter each of music and rooms, the rest an eighth each."""
    replicas = Replicas(music, speech, rng)
    shift = int(GRID / 2 * RATE)
    parts = []
    src, shifts = batch(music, speech, rng, count // 4)
    parts.append(src[:, TAIL + shift:TAIL + shift + SEG])
    src, shifts = batch(music, speech, rng, count // 4)
    parts.append(replicas.make(src, shifts)[1])
    talk = np.stack([replicas.excerpt(SEG, "speech") for _ in range(count // 8)])
    babble = np.stack([sum(replicas.excerpt(SEG, "speech") for _ in range(int(rng.integers(2, 8)))) for _ in range(count // 8)])
    noise = []
    for i in range(count - count // 2 - 2 * (count // 8)):
        kind = ["pink", "brown", "white"][i % 3]
        w = np.fft.rfft(rng.standard_normal(SEG))
        f = np.maximum(np.fft.rfftfreq(SEG, 1 / RATE), 20)
        x = np.fft.irfft(w / {"pink": np.sqrt(f), "brown": f, "white": np.ones_like(f)}[kind], SEG)
        noise.append((x / (np.sqrt((x ** 2).mean()) + 1e-12) * 10 ** (rng.uniform(-60, -10) / 20)).astype(np.float32))
    x = np.concatenate(parts + [talk, babble, np.stack(noise)]).astype(np.float32)
    with torch.no_grad():
        return model(features(torch.from_numpy(x))).numpy().astype(np.float32)


def read_tensors(path):
    """A weights file's header and its tensors by name (the format: docs/sound-embedder.md)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"HKSE":
        sys.exit(f"{path} is not a sound embedder's weights file")
    _, size = struct.unpack("<II", data[4:12])
    header = json.loads(data[12:12 + size])
    at, blobs = 12 + size, {}
    for t in header["tensors"]:
        n = int(np.prod(t["shape"]))
        blobs[t["name"]] = np.frombuffer(data, "<f4", n, at).reshape(t["shape"]).copy()
        at += 4 * n
    return header, blobs


def read_weights(model, path):
    """Loads a weights file into the network: each folded convolution's weight and bias, the batch
    normalisation then an identity with the folded bias (running mean 0, variance 1 - eps), so
    that the network computes exactly what the file does."""
    header, blobs = read_tensors(path)
    with torch.no_grad():
        for i, (conv, norm) in enumerate(zip(model.convs, model.norms)):
            conv.weight.copy_(torch.from_numpy(blobs[f"layer{i}.weight"]))
            norm.weight.fill_(1.0)
            norm.bias.copy_(torch.from_numpy(blobs[f"layer{i}.bias"]))
            norm.running_mean.zero_()
            norm.running_var.fill_(1.0 - norm.eps)
        n = len(model.convs)
        for j, fc in enumerate([model.fc1, model.fc2]):
            fc.weight.copy_(torch.from_numpy(blobs[f"layer{n + j}.weight"]))
            fc.bias.copy_(torch.from_numpy(blobs[f"layer{n + j}.bias"]))
    return header


def write_weights(model, path, provenance, bank=None):
    layers, blobs = [], [("window", hann()), ("mel", mel_matrix())]
    for i, (kind, w, b) in enumerate(folded(model)):
        if kind == "conv":
            layers.append({"kind": "conv", "in": int(w.shape[1]), "out": int(w.shape[0]), "kernel": 3, "stride": 2, "pad": 1, "relu": True})
        else:
            layers.append({"kind": "dense", "in": int(w.shape[1]), "out": int(w.shape[0]), "relu": i < len(model.convs) + 1})
        blobs += [(f"layer{i}.weight", w), (f"layer{i}.bias", b)]
    if bank is not None:
        blobs.append(("background", bank))
    header = {"format": "hark-sound-embedder", "version": 1, "rate": RATE, "nfft": NFFT, "hop": HOP, "frames": FRAMES,
              "mels": MELS, "floor": FLOOR, "dim": DIM, "grid": GRID, "layers": layers,
              "tensors": [{"name": n, "shape": list(a.shape)} for n, a in blobs], "trained": provenance}
    text = json.dumps(header, sort_keys=True).encode()
    with open(path, "wb") as f:
        f.write(b"HKSE" + struct.pack("<II", 1, len(text)) + text)
        for _, a in blobs:
            f.write(np.ascontiguousarray(a, "<f4").tobytes())


def write_fixture(model, path, rng):
    """Fixed inputs and what the trained network (eval mode, unfolded) makes of them: the
    inference test's reference. Three seconds: a chord, a noise burst and a swept tone, so
    that every band carries something."""
    t = np.arange(3 * RATE) / RATE
    x = 0.2 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.sin(2 * np.pi * 660 * t)
    x[RATE:2 * RATE] += 0.05 * rng.standard_normal(RATE)
    x += 0.1 * np.sin(2 * np.pi * (200 * t + 300 * t ** 2))
    x = x.astype(np.float32)
    starts = list(range(0, len(x) - SEG + 1, int(GRID * RATE)))
    segs = torch.from_numpy(np.stack([x[s:s + SEG] for s in starts]))
    with torch.no_grad():
        e = model(features(segs)).numpy().astype(np.float32)
    with open(path, "wb") as f:
        f.write(b"HKSF" + struct.pack("<III", len(x), len(starts), DIM))
        f.write(x.astype("<f4").tobytes())
        f.write(np.array(starts, "<i4").tobytes())
        f.write(e.astype("<f4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--pairs", type=int, default=160)
    ap.add_argument("--temperature", type=float, default=0.05)
    ap.add_argument("--same-soundtrack", type=float, default=0.0,
                    help="probability that a batch's track comes from one of the batch's two soundtracks")
    ap.add_argument("--twins", type=float, default=0.0,
                    help="probability that a voice-over's bed also enters the batch, bare or under another voice")
    ap.add_argument("--init", help="a weights file to start from (fine-tuning; batch normalisation stays folded)")
    ap.add_argument("--max-lr", type=float, default=2e-3)
    ap.add_argument("--state", default="sound-embedder.pt", help="the trained state's name in --cache")
    ap.add_argument("--out", default=os.path.join(ROOT, "Sources", "CSoundModel", "sound-embedder.hkse"))
    ap.add_argument("--fixture", default=os.path.join(ROOT, "Tests", "HarkDSPTests", "Fixtures", "sound-embedder-fixture.bin"))
    ap.add_argument("--export-only", action="store_true",
                    help="write the weights, the background bank and the fixture from the trained state in --cache, without training")
    args = ap.parse_args()

    torch.manual_seed(1)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    rows, music = load_tracks(args.cache, "train")
    speech = talkers(args.cache, 1800)
    print(f"train: {len(rows)} tracks, {sum(len(x) for x in music) / RATE / 3600:.2f} h; talkers {len(speech) / RATE / 60:.0f} min",
          flush=True)
    # The batches are made in a worker process of their own while the network trains on the
    # last one (two cores: augmentation in numpy takes about as long as a step).
    soundtracks = [r[1] for r in rows]
    loader = torch.utils.data.DataLoader(Batches(music, speech, args.pairs, args.steps, soundtracks, args.same_soundtrack,
                                                 args.twins), batch_size=None, num_workers=1, prefetch_factor=4)
    model = Embedder()
    if args.export_only:
        model.load_state_dict(torch.load(os.path.join(args.cache, args.state)))
        export(model, args, rows, music, speech, time.time())
        return
    if args.init:
        read_weights(model, args.init)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.max_lr, total_steps=args.steps, pct_start=0.05)
    began = time.time()
    model.train()
    if args.init:
        for norm in model.norms:   # the folded statistics stay: the network keeps computing what the file does
            norm.eval()
    for step, (a, b) in enumerate(loader, start=1):
        ea, eb = model(features(a)), model(features(b))
        loss = nt_xent(ea, eb, args.temperature)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == 1:
            with torch.no_grad():
                top1 = ((eb @ ea.t()).argmax(1) == torch.arange(len(ea))).float().mean().item()
            print(f"step {step} loss {loss.item():.3f} top1 {top1:.3f} {time.time() - began:.0f} s", flush=True)
    torch.save(model.state_dict(), os.path.join(args.cache, args.state))
    export(model, args, rows, music, speech, began)


def export(model, args, rows, music, speech, began):
    model.eval()
    digest = hashlib.sha256(open(tracks.TABLE, "rb").read()).hexdigest()[:16]
    script = hashlib.sha256(open(os.path.abspath(__file__), "rb").read()).hexdigest()[:16]
    provenance = {"script": "tools/learned/train.py", "scriptDigest": script, "steps": args.steps, "pairs": args.pairs,
                  "sameSoundtrack": args.same_soundtrack, "twins": args.twins, "maxLr": args.max_lr,
                  "init": os.path.basename(args.init) if args.init else None,
                  "temperature": args.temperature, "seed": 1, "torch": torch.__version__,
                  "tracks": "signals/real-audio-tracks.tsv, role train", "tracksDigest": digest,
                  "trainTracks": len(rows), "talkers": TALK_VOICES, "texts": TEXT_FILES}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    os.makedirs(os.path.dirname(args.fixture), exist_ok=True)
    write_weights(model, args.out, provenance, bank=background(model, music, speech, np.random.default_rng(11)))
    weights = hashlib.sha256(open(args.out, "rb").read()).hexdigest()[:16]
    with open(os.path.join(os.path.dirname(args.out), "model_digest.h"), "w") as f:
        f.write(f'#define HARK_SOUND_MODEL_DIGEST "{weights}"\n')
    write_fixture(model, args.fixture, np.random.default_rng(2))
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) and {args.fixture} in {time.time() - began:.0f} s")


if __name__ == "__main__":
    main()
