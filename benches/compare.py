#!/usr/bin/env python3
"""Ratio tables of robustream's corruption kernels against the Python peers (BENCHMARKS.md, issue 3).

Reads criterion's estimates of `cargo bench --bench corruptions` (target/criterion/corruption_<frame>/
<name>/<severity>/new/estimates.json and sweep_19x5/<frame>/..., the median in ns) and the JSON files
benches/peers.py wrote (one per peer), and prints markdown: the sweep table (all 19 x 5 calls on one
frame) and, per frame, one row per corruption with robustream's median per severity and each peer's
ratio per severity. Ratio = peer time / robustream time: 20x means robustream is 20 times faster, 0.5x
that it is twice as slow. Standard library only (runs with any python3).

    python3 benches/compare.py --peers target/peer-bench/*.json            # print the tables
    python3 benches/compare.py --peers ... --update BENCHMARKS.md           # also replace the marked block
    python3 benches/compare.py --placeholder [--update BENCHMARKS.md]       # the same tables, empty cells

The block in BENCHMARKS.md lies between the lines `<!-- corruption-peers:begin -->` and
`<!-- corruption-peers:end -->`; nothing else in the file is touched. `--json FILE` writes the merged
numbers (every cell, both sides, absolute times) for the record.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = [
    "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur", "motion_blur",
    "zoom_blur", "snow", "frost", "fog", "brightness", "contrast", "elastic_transform", "pixelate",
    "jpeg_compression", "speckle_noise", "gaussian_blur", "spatter", "saturate",
]
SEVERITIES = ["1", "2", "3", "4", "5"]
FRAMES = {"224": "224² model view of coffee.png", "1280x720": "coffee.png resized to 1280×720"}
PEERS = ["imagecorruptions", "corrupt-tta", "albumentations"]
PEER_VERSIONS = {"imagecorruptions": "1.1.2", "corrupt-tta": "0.1.7", "albumentations": "2.0.8"}
BEGIN, END = "<!-- corruption-peers:begin -->", "<!-- corruption-peers:end -->"
PLACEHOLDER = "…"


def criterion_median(root: Path, since: float, *parts) -> float | None:
    """criterion's median estimate in seconds, or None when that benchmark has not run (since `since`)."""
    path = root.joinpath(*parts, "new", "estimates.json")
    try:
        if path.stat().st_mtime < since:
            return None
        return json.loads(path.read_text())["median"]["point_estimate"] * 1e-9
    except (OSError, KeyError, ValueError):
        return None


def ours(root: Path, since: float) -> dict:
    cells = {f: {n: {s: criterion_median(root, since, f"corruption_{f}", n, s) for s in SEVERITIES}
                 for n in NAMES} for f in FRAMES}
    sweep = {f: criterion_median(root, since, "sweep_19x5", f) for f in FRAMES}
    return {"cells": cells, "sweep": sweep}


def fmt_time(s) -> str:
    if s is None:
        return PLACEHOLDER
    if s >= 1:
        return f"{s:.2f} s"
    ms = s * 1e3
    return f"{ms:.3g} ms" if ms >= 0.1 else f"{ms * 1e3:.3g} µs"


def fmt_ms(s) -> str:
    if s is None:
        return PLACEHOLDER
    ms = s * 1e3
    return f"{ms:.3g}" if ms < 1000 else f"{ms:.0f}"


def fmt_ratio(peer, mine) -> str:
    if peer is None or mine is None or mine <= 0:
        return PLACEHOLDER
    r = peer / mine
    return f"{r:.3g}×" if r < 100 else f"{r:.0f}×"


def peer_cell(peer: dict | None, frame: str, name: str, sev: str):
    if peer is None:
        return None
    c = peer.get("cells", {}).get(frame, {}).get(name, {}).get(sev)
    return None if c is None else c["median_s"]


def render(mine: dict, peers: dict, threads: str, placeholder: bool) -> str:
    """The markdown block: the sweep table, then one per-severity table per frame."""
    lines = []
    a = lines.append
    if placeholder:
        a("**To be filled by the final run** (`bash benches/compare.sh --update`); the cells marked "
          f"{PLACEHOLDER} are empty until then.")
        a("")
    else:
        meta = next(iter(peers.values()), {})
        m = meta.get("machine", {})
        a(f"Measured by `benches/compare.sh`: robustream with {threads} rayon thread(s), peers single-threaded; "
          f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, load average {m.get('load_average_start', 0):.2f} "
          "when the peers started.")
        a("")
    head = ["frame", f"robustream ({threads} thread{'s' if threads != '1' else ''})"]
    for p in PEERS:
        head += [f"{p} {PEER_VERSIONS[p]}", "×"]
    a("Full sweep, all corruptions × severities on one frame (criterion median / peer median of sweeps):")
    a("")
    a("| " + " | ".join(head) + " |")
    a("|" + "---|" * len(head))
    for f, desc in FRAMES.items():
        mine_s = None if placeholder else mine["sweep"].get(f)
        row = [desc, fmt_time(mine_s)]
        for p in PEERS:
            d = None if placeholder else peers.get(p, {}).get("sweep", {}).get(f)
            t = None if d is None else d["median_s"]
            calls = "" if d is None or d.get("cells") == 95 else f" ({d['cells']} calls)"
            if placeholder and p == "albumentations":
                calls = " (90 calls)"
            row += [fmt_time(t) + calls, fmt_ratio(t, mine_s)]
        a("| " + " | ".join(row) + " |")
    a("")
    a("Ratio = peer time / robustream time (20× = robustream 20 times faster). albumentations has no "
      "frost, so its sweep has 90 calls against robustream's 95.")
    for f, desc in FRAMES.items():
        a("")
        a(f"Per corruption on the {desc}: robustream's median per call in ms, then each peer's ratio, "
          "for severities 1 · 2 · 3 · 4 · 5:")
        a("")
        head = ["corruption", "robustream ms"] + [f"{p} ×" for p in PEERS]
        a("| " + " | ".join(head) + " |")
        a("|" + "---|" * len(head))
        for n in NAMES:
            m = [None if placeholder else mine["cells"][f][n][s] for s in SEVERITIES]
            row = [n, " · ".join(fmt_ms(v) for v in m)]
            for p in PEERS:
                if p == "albumentations" and n == "frost":
                    row.append("—")
                    continue
                pc = [None if placeholder else peer_cell(peers.get(p), f, n, s) for s in SEVERITIES]
                row.append(" · ".join(fmt_ratio(x, y) for x, y in zip(pc, m)))
            a("| " + " | ".join(row) + " |")
        albu = {} if placeholder else peers.get("albumentations", {})
        for n, d in albu.get("also", {}).get(f, {}).items():
            spec = albu.get("also_mapping", {}).get(n, {})
            m = [mine["cells"][f][n][s] for s in SEVERITIES]
            pc = [d.get(s, {}).get("median_s") for s in SEVERITIES]
            a("")
            a(f"Also timed on this frame, not the nearest equivalent: {n} against albumentations' "
              f"`{spec.get('transform', '?')}` ({spec.get('note', '')}): "
              + " · ".join(fmt_ratio(x, y) for x, y in zip(pc, m)) + ".")
    return "\n".join(lines)


def update(path: Path, block: str) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{path}: no {BEGIN} … {END} block to replace")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{block}\n{END}{tail}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--criterion", default=str(ROOT / "target" / "criterion"), help="criterion's output folder")
    ap.add_argument("--peers", nargs="*", default=[], help="JSON files written by benches/peers.py")
    ap.add_argument("--threads", default="1", help="rayon threads of the criterion run (for the header)")
    ap.add_argument("--since", type=float, default=0.0,
                    help="ignore criterion results older than this Unix time (stale runs)")
    ap.add_argument("--placeholder", action="store_true", help="the tables with empty cells")
    ap.add_argument("--update", metavar="MARKDOWN", help="replace the marked block in this file")
    ap.add_argument("--json", metavar="FILE", help="write the merged numbers here")
    args = ap.parse_args()

    peers = {}
    for p in args.peers:
        d = json.loads(Path(p).read_text())
        peers[d["peer"]] = d
    mine = ours(Path(args.criterion), args.since)
    block = render(mine, peers, args.threads, args.placeholder)
    try:
        print(block)
    except BrokenPipeError:
        pass
    if args.update:
        update(Path(args.update), block)
    if args.json:
        Path(args.json).write_text(json.dumps({"robustream": mine, "peers": peers}, indent=1) + "\n")


if __name__ == "__main__":
    main()
