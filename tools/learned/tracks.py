#!/usr/bin/python3
"""The recorded music that Debian packages ship, listed and split by track into the three uses
that must never share audio: training the sound embedder, the benches' creatives and decoys,
and the unmarked audio that calibrates the threshold.

    tools/learned/tracks.py list            # writes signals/real-audio-tracks.tsv
    tools/learned/tracks.py decode DIR      # decodes every listed track to DIR/<id>.f32 (8 kHz mono)

A track's use is drawn from a hash of its package and file name, not from the order the files
are found in, so adding a package moves no other track. Short cues (under 40 s) are left out:
they are jingles and stingers that a creative would not be cut from.
"""
import hashlib, os, subprocess, sys, tempfile, zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "signals", "real-audio-tracks.tsv")
RATE = 8000
# Debian package -> where its music lies (a folder of .ogg or .opus, or a .pk3 zip archive holding them).
SOURCES = {
    "hyperrogue-music": "/usr/share/hyperrogue/music",
    "warzone2100-music": "/usr/share/games/warzone2100/music",
    "planetblupi-music-ogg": "/usr/share/planetblupi/music",
    "fb-music-high": "/usr/share/games/frozen-bubble/snd",
    "nexuiz-music": "/usr/share/games/nexuiz/data/music.pk3",
    "ufoai-music": "/usr/share/games/ufoai/base/0music.pk3",
    "wesnoth-1.16-music": "/usr/share/games/wesnoth/1.16/data/core/music",
    "singularity-music": "/usr/share/games/singularity/music",
    "drascula-music": "/usr/share/scummvm/drascula/audio",
    "asc-music": "/usr/share/games/asc/music",
}
# Shares of the uses, by hash: about 55 % of the tracks train, 20 % are bench creatives and
# decoys, 25 % are the unmarked calibration audio (which needs the most hours).
SPLIT = [("train", 55), ("bench", 20), ("calibration", 25)]
SHORTEST = 40.0


def role(package, name):
    h = int(hashlib.sha256(f"{package}/{name}".encode()).hexdigest()[:8], 16) % 100
    for r, share in SPLIT:
        if h < share:
            return r
        h -= share
    raise AssertionError


def members(package, where):
    """(name, a reader that returns the encoded bytes) for each audio file of a package."""
    if where.endswith(".pk3"):
        z = zipfile.ZipFile(where)
        for n in sorted(z.namelist()):
            if n.endswith((".ogg", ".opus")):
                yield n, (lambda n=n: z.read(n))
    else:
        for folder, _, files in sorted(os.walk(where)):
            for f in sorted(files):
                if f.endswith((".ogg", ".opus", ".mp3")):
                    n = os.path.relpath(os.path.join(folder, f), where)
                    yield n, (lambda n=n: open(os.path.join(where, n), "rb").read())


def source(where, name):
    """Where the bench finds a track: its path, or an archive's path, '#' and the member."""
    return f"{where}#{name}" if where.endswith(".pk3") else os.path.join(where, name)


def decode(data):
    """Mono float32 samples at RATE through ffmpeg; None (with ffmpeg's words) if it cannot.
    Through a file, not a pipe: some Ogg files need their input seekable."""
    with tempfile.NamedTemporaryFile(suffix=".audio") as f:
        f.write(data)
        f.flush()
        run = subprocess.run(["ffmpeg", "-v", "error", "-i", f.name, "-ac", "1", "-ar", str(RATE), "-f", "f32le", "pipe:1"],
                             capture_output=True)
    if run.returncode != 0:
        print("skipped: " + run.stderr.decode(errors="replace").strip()[:200], file=sys.stderr)
        return None
    return run.stdout


def listing():
    rows = []
    for package, where in sorted(SOURCES.items()):
        if not os.path.exists(where):
            sys.exit(f"{where} is missing: apt-get install {package}")
        for name, read in members(package, where):
            pcm = decode(read())
            if pcm is None:
                print(f"  ({package}/{name})", file=sys.stderr)
                continue
            seconds = len(pcm) / 4 / RATE
            if seconds < SHORTEST:
                continue
            ident = hashlib.sha256(f"{package}/{name}".encode()).hexdigest()[:12]
            rows.append((ident, package, name, f"{seconds:.1f}", role(package, name), source(where, name)))
    return rows


def read_table():
    with open(TABLE) as f:
        return [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#") and not l.startswith("id\t")]


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "list":
        rows = listing()
        with open(TABLE, "w") as f:
            f.write("# Made by tools/learned/tracks.py list: recorded music from Debian packages, one track a line,\n")
            f.write("# with the one use it may serve (train / bench / calibration). Never edit a role by hand.\n")
            f.write("id\tpackage\tfile\tseconds\trole\tsource\n")
            for r in rows:
                f.write("\t".join(r) + "\n")
        hours = {}
        for r in rows:
            hours[r[4]] = hours.get(r[4], 0) + float(r[3]) / 3600
        print(f"{len(rows)} tracks; " + ", ".join(f"{k} {v:.2f} h" for k, v in sorted(hours.items())))
    elif len(sys.argv) == 3 and sys.argv[1] == "decode":
        out = sys.argv[2]
        os.makedirs(out, exist_ok=True)
        rows = read_table()
        wanted = {(r[1], r[2]): r[0] for r in rows}
        for package, where in sorted(SOURCES.items()):
            for name, read in members(package, where):
                ident = wanted.get((package, name))
                if ident is None or os.path.exists(f"{out}/{ident}.f32"):
                    continue
                pcm = decode(read())
                if pcm is None:
                    sys.exit(f"{package}/{name} no longer decodes")
                with open(f"{out}/{ident}.f32.tmp", "wb") as f:
                    f.write(pcm)
                os.rename(f"{out}/{ident}.f32.tmp", f"{out}/{ident}.f32")
        print(f"{len(rows)} tracks in {out}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
