#!/usr/bin/env python3
"""Synthesises signals/carriage.flac, the demo recording `tools/run` analyses.

Not a real recording: a stand-in with the ingredients of one, so the demo needs no download.
10 s at 48 kHz, mono:
  - rolling noise: pink noise shaped towards low frequencies (train interiors are dominated
    by 50-500 Hz rumble), slowly modulated;
  - rail joints: pairs of short thumps every 1.1 s (bogie crossing a joint);
  - a brake squeal at 2.9 kHz with vibrato from 6.0 s to 7.8 s;
  - a two-tone announcement chime at 2.0 s.
Digital levels are chosen so that with the calibration offset in carriage.txt the clip reads
about 75 dB(A), a typical carriage interior.

Needs numpy and sox (for the FLAC encoding). Deterministic: the seed is fixed.
"""
import subprocess
import wave

import numpy as np

RATE = 48_000
SECONDS = 10
rng = np.random.default_rng(20261121)
n = RATE * SECONDS
t = np.arange(n) / RATE

# Rolling noise: white noise shaped in the frequency domain.
spectrum = np.fft.rfft(rng.standard_normal(n))
f = np.fft.rfftfreq(n, 1 / RATE)
shape = np.where(f > 0, 1 / np.sqrt(np.maximum(f, 1)), 0)      # pink
shape *= 1 / np.sqrt(1 + (f / 400) ** 2)                         # extra roll-off above 400 Hz
shape *= f / np.sqrt(f ** 2 + 30 ** 2)                           # little below 30 Hz
rolling = np.fft.irfft(spectrum * shape, n)
rolling /= np.sqrt(np.mean(rolling ** 2))
rolling *= 1 + 0.15 * np.sin(2 * np.pi * 0.13 * t)               # speed changes

# Rail joints: decaying 80 Hz thumps in pairs.
joints = np.zeros(n)
for start in np.arange(0.4, SECONDS, 1.1):
    for offset in (0.0, 0.16):
        i = int((start + offset) * RATE)
        k = np.arange(min(int(0.12 * RATE), n - i))
        joints[i:i + len(k)] += np.exp(-k / (0.025 * RATE)) * np.sin(2 * np.pi * 80 * k / RATE)

# Brake squeal.
squeal = np.zeros(n)
on = (t >= 6.0) & (t < 7.8)
phase = 2 * np.pi * 2900 * t + 3 * np.sin(2 * np.pi * 5 * t)
envelope = np.clip(np.minimum(t - 6.0, 7.8 - t) / 0.15, 0, 1)
squeal[on] = (envelope * np.sin(phase))[on]

# Chime: two tones, 0.4 s each, with a soft decay.
chime = np.zeros(n)
for k, (freq, start) in enumerate(((660, 2.0), (523, 2.45))):
    i = int(start * RATE)
    m = np.arange(int(0.4 * RATE))
    chime[i:i + len(m)] += np.exp(-m / (0.2 * RATE)) * np.sin(2 * np.pi * freq * m / RATE)

signal = 0.018 * rolling + 0.08 * joints + 0.03 * squeal + 0.02 * chime
samples = np.clip(np.round(signal * 32767), -32768, 32767).astype("<i2")
with wave.open("carriage.wav", "wb") as w:
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(RATE)
    w.writeframes(samples.tobytes())
subprocess.run(["sox", "carriage.wav", "carriage.flac"], check=True)
subprocess.run(["rm", "carriage.wav"], check=True)
