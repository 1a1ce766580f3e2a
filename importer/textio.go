package importer

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// readBufSize is the buffer size of the text parsers.
const readBufSize = 1 << 20

// compressedFile is an opened input file, decompressed if needed.
type compressedFile struct {
	f *os.File
	r *decompressed
}

// Read reads decompressed bytes; the decompressor's errors say that the
// compressed data is damaged (a bare "unexpected EOF" read as the text's).
func (c *compressedFile) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF && c.r.kind != "plain" {
		err = fmt.Errorf("%s data truncated or corrupt: %w", c.r.kind, err)
	}
	return n, err
}

func (c *compressedFile) Close() error { return c.f.Close() }

// openText opens path for reading, undoing gzip or bzip2 compression
// detected from the magic bytes. A .gz or .bz2 name whose contents do not
// start with the matching magic bytes is an error.
func openText(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := decompress(f)
	if err == nil {
		lower := strings.ToLower(path)
		switch {
		case strings.HasSuffix(lower, ".gz") && r.kind != "gzip":
			err = fmt.Errorf("%s: name ends in .gz but the data is not gzip-compressed", path)
		case strings.HasSuffix(lower, ".bz2") && r.kind != "bzip2":
			err = fmt.Errorf("%s: name ends in .bz2 but the data is not bzip2-compressed", path)
		}
	} else {
		err = fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &compressedFile{f: f, r: r}, nil
}

type decompressed struct {
	io.Reader
	kind string // "gzip", "bzip2" or "plain"
}

// decompress returns a reader of the decompressed contents of r, detecting
// gzip and bzip2 by their magic bytes.
func decompress(r io.Reader) (*decompressed, error) {
	br := bufio.NewReaderSize(r, readBufSize)
	magic, _ := br.Peek(3)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return &decompressed{z, "gzip"}, nil
	case len(magic) == 3 && string(magic) == "BZh":
		return &decompressed{bzip2.NewReader(br), "bzip2"}, nil
	}
	return &decompressed{br, "plain"}, nil
}

// lineReader returns the lines of a text stream without their line
// terminators ("\n" or "\r\n"), reusing an internal buffer: a line is only
// valid until the next call.
type lineReader struct {
	br   *bufio.Reader
	long []byte
	line int // number of the last line returned, 1-based
}

func newLineReader(r io.Reader) *lineReader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < readBufSize {
		br = bufio.NewReaderSize(r, readBufSize)
	}
	return &lineReader{br: br}
}

// next returns the next line or io.EOF after the last one. Read errors
// (including decompression errors) are returned as they are.
func (l *lineReader) next() ([]byte, error) {
	b, err := l.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.long = append(l.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = l.br.ReadSlice('\n')
			l.long = append(l.long, b...)
		}
		b = l.long
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if err == io.EOF && len(b) == 0 {
		return nil, io.EOF
	}
	l.line++
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// errNegative and errOverflow explain why parseUint failed.
var (
	errNegative = errors.New("negative id")
	errOverflow = errors.New("id overflows int64")
	errNotInt   = errors.New("not an integer")
)

// parseUint parses the decimal digits of a non-negative integer starting
// at b[i] and returns the value and the index after the last digit.
func parseUint(b []byte, i int) (int64, int, error) {
	j := i
	var v uint64
	for j < len(b) {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		v = v*10 + uint64(c)
		j++
	}
	if j-i > 18 {
		// Up to 18 digits always fit; longer numbers are checked again.
		return parseUintSlow(b, i)
	}
	if j == i {
		if j < len(b) && b[j] == '-' {
			return 0, j, errNegative
		}
		if j < len(b) && b[j] == '+' {
			return parseUintPlus(b, j)
		}
		return 0, j, errNotInt
	}
	return int64(v), j, nil
}

func parseUintSlow(b []byte, i int) (int64, int, error) {
	j := i
	var v int64
	for j < len(b) {
		c := b[j] - '0'
		if c > 9 {
			break
		}
		if v > (math.MaxInt64-int64(c))/10 {
			return 0, j, errOverflow
		}
		v = v*10 + int64(c)
		j++
	}
	return v, j, nil
}

func parseUintPlus(b []byte, j int) (int64, int, error) {
	if j+1 < len(b) && b[j+1]-'0' <= 9 {
		return parseUint(b, j+1)
	}
	return 0, j, errNotInt
}

// token returns the end of the token starting at b[i]: the first space,
// tab or comma.
func tokenEnd(b []byte, i int) int {
	for i < len(b) && !isSpace(b[i]) && b[i] != ',' {
		i++
	}
	return i
}

// quote shortens a line for an error message.
func quote(b []byte) string {
	const max = 60
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

// trimBOM drops a UTF-8 byte order mark at the start of a first line.
func trimBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) }

// baseName returns the file name of path without directories and without
// compression and format extensions.
func baseName(path string) string {
	b := path
	if i := strings.LastIndexAny(b, `/\`); i >= 0 {
		b = b[i+1:]
	}
	for _, ext := range []string{".gz", ".bz2", ".txt", ".csv", ".tsv", ".edges", ".edgelist", ".graph", ".metis", ".npz"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}
