#!/usr/bin/env python3
"""Where given colours are in a PNG screenshot (the browser tests: every element placed).

    png_colors.py SHOT.png NAME=#rrggbb ...

prints one JSON object: for each NAME, the number of pixels of exactly that colour (alpha
ignored) and their bounding box {count, left, top, right, bottom} (count 0: absent). Reads 8-bit
RGB and RGBA PNGs without interlacing, which is what Chromium's --screenshot writes; the
standard library only (zlib).
"""
import json
import struct
import sys
import zlib


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace != 0:
        raise SystemExit(f"{path}: only 8-bit RGB/RGBA without interlacing is read (depth {depth}, colour type {color})")
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = read_png(sys.argv[1])
    wanted = {}
    for argument in sys.argv[2:]:
        name, colour = argument.split("=", 1)
        wanted[bytes.fromhex(colour.lstrip("#"))] = name
    found = {name: {"count": 0, "left": width, "top": height, "right": -1, "bottom": -1} for name in wanted.values()}
    for y, line in enumerate(rows):
        for x in range(width):
            pixel = bytes(line[x * channels:x * channels + 3])
            name = wanted.get(pixel)
            if name is not None:
                box = found[name]
                box["count"] += 1
                box["left"], box["top"] = min(box["left"], x), min(box["top"], y)
                box["right"], box["bottom"] = max(box["right"], x), max(box["bottom"], y)
    print(json.dumps({"width": width, "height": height, "colours": found}, sort_keys=True))


if __name__ == "__main__":
    main()
