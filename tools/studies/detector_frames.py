"""What the watermark studies share (tools/studies/watermark-ceiling, tools/studies/watermark-format-study,
tools/studies/watermark-tone-to-floor, tools/studies/watermark-host-discount):
32-bit float WAV files, and the detector's own frames and floor, so that they read the audio
as WatermarkDetector does (docs/watermark.md, Detection, step 1)."""
import struct

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def read(p):
    """A WAV file's samples, channels averaged (32-bit float data, as hark simulate writes)."""
    b = open(p, 'rb').read(); i = 12; channels = 1
    while i < len(b):
        cid = b[i:i+4]; n = struct.unpack('<I', b[i+4:i+8])[0]
        if cid == b'fmt ': channels = struct.unpack('<HHIIHH', b[i+8:i+24])[1]
        if cid == b'data':
            return np.frombuffer(b[i+8:i+8+n], '<f4').astype(float).reshape(-1, channels).mean(axis=1)
        i += 8 + n + (n & 1)


def write(p, x, rate=48000):
    """Mono 32-bit float, so that marked - host stays exact."""
    data = x.astype('<f4').tobytes()
    fmt = struct.pack('<HHIIHH', 3, 1, rate, rate * 4, 4, 32)
    open(p, 'wb').write(b'RIFF' + struct.pack('<I', 36 + len(data)) + b'WAVE' + b'fmt '
                        + struct.pack('<I', 16) + fmt + b'data' + struct.pack('<I', len(data)) + data)


L = 19200                      # one 0.4 s symbol at 48 kHz: 2.5 Hz bins
window = np.hanning(L)


def frames(x, offset):
    """One Hann-windowed 0.4 s frame per symbol from `offset` on."""
    starts = range(offset, len(x) - L + 1, L)
    return np.fft.rfft(np.array([x[i:i + L] * window for i in starts]), axis=1)


# A 16-bit recording's quantisation noise in one bin of a frame: where the host is digital
# silence the mark is all but zero too, and a ratio of two nothings would read 10^15.
quantisation = (2.0 ** -15) ** 2 / 12 * np.sum(window ** 2)


def interference(P):
    """A bin's interference: the power within ±4 bins (±10 Hz) around it, plus quantisation."""
    return sliding_window_view(np.pad(P, ((0, 0), (4, 4)), mode='edge'), 9, axis=1).mean(axis=2) + quantisation


def floor(P):
    """The detector's floor: the median power over ±60 Hz (±24 bins)."""
    return np.median(sliding_window_view(np.pad(P, ((0, 0), (24, 24)), mode='edge'), 49, axis=1), axis=2)


def difference(marked, host, out):
    """The mark alone: marked - host, written as 32-bit float."""
    write(out, read(marked) - read(host))
