"""Streaming readers for the compressed forms of Spark event logs, chosen by file suffix.

Spark names a compressed log after its codec's short name (``app-1.zstd``, ``events_1_app-1.lz4``)
and writes each codec's *stream* format, not a standard frame format:

- ``zstd``: standard zstd frames (decoded by pyarrow's streaming decompressor);
- ``lz4``: lz4-java's ``LZ4BlockOutputStream`` (magic ``LZ4Block``, then per block a token,
  little-endian compressed/original lengths and an xxhash32 checksum, then a raw LZ4 block);
- ``snappy``: xerial's ``SnappyOutputStream`` (header ``\\x82SNAPPY\\x00`` + two big-endian
  version ints, then big-endian length-prefixed raw snappy blocks);
- ``lzf``: Ning compress-lzf's ``LZFOutputStream`` (``ZV`` chunks, type 0 stored / 1 compressed).

The raw LZ4 and snappy blocks are decoded by pyarrow; LZF, which pyarrow lacks, by a small
pure-Python decoder (a few MB/s; LZF is rarely chosen for event logs). Every reader
yields decompressed chunks of bounded size, so memory does not grow with the log.
A stream that ends early (an in-progress or truncated log) raises :class:`TruncatedStream`
after yielding everything that could be decoded.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa

#: codec short names as Spark writes them (``CompressionCodec.shortCompressionCodecNames``).
CODECS = ("zstd", "lz4", "snappy", "lzf")
_READ = 1 << 20


class TruncatedStream(Exception):
    """The compressed stream ended in the middle of a block (data before it was yielded)."""


class CorruptStream(Exception):
    """The bytes are not in the codec's format."""


def codec_of(name: str) -> str | None:
    """Codec from a Spark event-log file name (``.inprogress`` ignored), or ``None`` for plain."""
    name = name.removesuffix(".inprogress")
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ext == "zst":
        return "zstd"
    if ext in CODECS or ext == "gz":
        return ext
    return None


def _read_exact(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) < n:
        raise TruncatedStream(f"stream ended inside a block ({len(data)} of {n} bytes)")
    return data


def _plain(f: BinaryIO) -> Iterator[bytes]:
    while chunk := f.read(_READ):
        yield chunk


def _arrow_stream(f: BinaryIO, codec: str) -> Iterator[bytes]:
    stream = pa.CompressedInputStream(pa.PythonFile(f, mode="r"), codec)
    while True:
        try:
            chunk = stream.read1(1 << 16)  # read1 of a small size: a cut stream still yields what precedes the cut
        except OSError as exc:  # pyarrow reports a cut frame and garbage alike
            msg = str(exc).lower()
            if "truncat" in msg or "unexpected end" in msg or "premature" in msg:
                raise TruncatedStream(str(exc)) from exc
            raise CorruptStream(str(exc)) from exc
        if not chunk:
            return
        yield bytes(chunk)


_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<Biii")  # token, compressed len, original len, checksum


def _lz4_block(f: BinaryIO) -> Iterator[bytes]:
    """lz4-java LZ4BlockOutputStream; an empty block ends one stream, another may follow."""
    codec = pa.Codec("lz4_raw")
    first = True
    while True:
        magic = f.read(len(_LZ4_MAGIC))
        if not magic and not first:
            return
        first = False
        if magic != _LZ4_MAGIC:
            if len(magic) < len(_LZ4_MAGIC) and _LZ4_MAGIC.startswith(magic):
                raise TruncatedStream("stream ended inside an LZ4 block header")
            raise CorruptStream("not an lz4-java block stream (no 'LZ4Block' magic)")
        token, clen, olen, _checksum = _LZ4_HEADER.unpack(_read_exact(f, _LZ4_HEADER.size))
        method = token & 0xF0
        if clen < 0 or olen < 0 or method not in (0x10, 0x20) or olen > (1 << 26):
            raise CorruptStream(f"bad LZ4 block header (method {method:#x}, lengths {clen}/{olen})")
        if olen == 0:
            continue  # end mark of this stream; Spark may concatenate streams
        data = _read_exact(f, clen)
        if method == 0x10:
            yield data
        else:
            try:
                yield codec.decompress(data, decompressed_size=olen).to_pybytes()
            except (OSError, ValueError) as exc:
                raise CorruptStream(f"bad LZ4 block: {exc}") from exc


_SNAPPY_MAGIC = b"\x82SNAPPY\x00"


def _varint(data: bytes) -> int:
    shift = value = 0
    for b in data[:5]:
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value
        shift += 7
    raise CorruptStream("bad snappy block length")


def _snappy_xerial(f: BinaryIO) -> Iterator[bytes]:
    """xerial SnappyOutputStream framing: header, then [int32 BE length][raw snappy block]*."""
    codec = pa.Codec("snappy")
    head = f.read(16)
    if len(head) < 16 and (_SNAPPY_MAGIC.startswith(head) or head.startswith(_SNAPPY_MAGIC)):
        # the magic whole and the versions cut read as an empty stream: "not a Spark event log"
        raise TruncatedStream("stream ended inside the snappy header")
    if not head.startswith(_SNAPPY_MAGIC):
        raise CorruptStream("not a xerial snappy stream (no '\\x82SNAPPY' magic)")
    while True:
        raw = f.read(4)
        if not raw:
            return
        if len(raw) < 4:
            raise TruncatedStream("stream ended inside a snappy block length")
        if raw == _SNAPPY_MAGIC[:4]:  # a concatenated stream's header
            rest = _read_exact(f, 12)
            if rest[:4] != _SNAPPY_MAGIC[4:]:
                raise CorruptStream("bad snappy stream header")
            continue
        (clen,) = struct.unpack(">i", raw)
        if clen <= 0 or clen > (1 << 27):
            raise CorruptStream(f"bad snappy block length {clen}")
        data = _read_exact(f, clen)
        olen = _varint(data)
        if olen > (1 << 27):
            raise CorruptStream(f"bad snappy block size {olen}")
        try:
            yield codec.decompress(data, decompressed_size=olen).to_pybytes()
        except (OSError, ValueError) as exc:
            raise CorruptStream(f"bad snappy block: {exc}") from exc


def lzf_decompress(src: bytes, size: int) -> bytes:
    """Decode one LZF block (liblzf format) of ``size`` original bytes."""
    out = bytearray()
    ip, n = 0, len(src)
    try:
        while ip < n:
            ctrl = src[ip]
            ip += 1
            if ctrl < 32:  # literal run of ctrl + 1 bytes
                ctrl += 1
                if ip + ctrl > n:
                    raise CorruptStream("LZF literal runs past the block")
                out += src[ip: ip + ctrl]
                ip += ctrl
                continue
            length = ctrl >> 5
            if length == 7:
                length += src[ip]
                ip += 1
            ref = len(out) - ((ctrl & 0x1F) << 8) - src[ip] - 1
            ip += 1
            length += 2
            if ref < 0:
                raise CorruptStream("LZF back-reference before the block start")
            if ref + length <= len(out):
                out += out[ref: ref + length]
            else:  # overlapping copy repeats the last (len(out) - ref) bytes
                pattern = out[ref:]
                reps, rem = divmod(length, len(pattern))
                out += pattern * reps + pattern[:rem]
    except IndexError:
        raise CorruptStream("LZF block ends inside a back-reference") from None
    if len(out) != size:
        raise CorruptStream(f"LZF block decoded to {len(out)} bytes, header said {size}")
    return bytes(out)


def _lzf(f: BinaryIO) -> Iterator[bytes]:
    """Ning compress-lzf chunks: 'Z' 'V' type; 0 = [len16] stored, 1 = [clen16][ulen16] LZF."""
    while True:
        head = f.read(5)
        if not head:
            return
        if len(head) < 5 or head[:2] != b"ZV":
            if head[:2] == b"ZV" or (len(head) < 2 and b"ZV".startswith(head)):
                raise TruncatedStream("stream ended inside an LZF chunk header")
            raise CorruptStream("not an LZF stream (no 'ZV' chunk header)")
        kind, n = head[2], struct.unpack(">H", head[3:5])[0]
        if kind == 0:
            yield _read_exact(f, n)
        elif kind == 1:
            olen = struct.unpack(">H", _read_exact(f, 2))[0]
            yield lzf_decompress(_read_exact(f, n), olen)
        else:
            raise CorruptStream(f"unknown LZF chunk type {kind}")


_READERS = {"lz4": _lz4_block, "snappy": _snappy_xerial, "lzf": _lzf}


def iter_decompressed(f: BinaryIO, codec: str | None) -> Iterator[bytes]:
    """Decompressed chunks of an open binary file in ``codec`` (``None`` = plain text)."""
    if codec is None:
        return _plain(f)
    if codec in ("zstd", "gz"):
        return _arrow_stream(f, "gzip" if codec == "gz" else codec)
    if codec in _READERS:
        return _READERS[codec](f)
    raise CorruptStream(f"unknown codec {codec!r}")


def iter_lines(chunks: Iterator[bytes], max_line: int = 64 << 20, *,
               cut: list[bytes] | None = None) -> Iterator[bytes]:
    """Split chunks into lines (without the newline); a last line without newline is yielded too,
    or, when ``cut`` is given, appended to it instead.

    Spark ends every event with a newline, so a last line without one was cut off (a log still
    being written, or a partial copy): ``cut`` lets the caller say so once, rather than
    parse it as a bad line. A single line longer than ``max_line`` bytes raises
    :class:`CorruptStream` rather than holding an unbounded buffer (a garbled file with no newlines).
    """
    pending: list[bytes] = []  # pieces of a line that spans chunks (joined once, not quadratic)
    pending_len = 0
    for chunk in chunks:
        if b"\n" not in chunk:
            pending.append(chunk)
            pending_len += len(chunk)
            if pending_len > max_line:
                raise CorruptStream(f"a line longer than {max_line} bytes: not an event log")
            continue
        lines = chunk.split(b"\n")
        if pending:
            lines[0] = b"".join(pending) + lines[0]
            pending.clear()
        rest = lines.pop()
        if rest:
            pending.append(rest)
        pending_len = len(rest)
        yield from lines
    if pending:
        if cut is None:
            yield b"".join(pending)
        else:
            cut.append(b"".join(pending))
