package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func FuzzNPY(f *testing.F) {
	f.Add(npyBytes("<f4", "(2,)", le(float32(1), float32(2))))
	f.Add(npyBytes("|i1", "(2, 2)", []byte{1, 2, 3, 4}))
	f.Add(npyBytes("<U2", "(1,)", le(int32('a'), int32('b'))))
	f.Add(npyBytes("|O", "()", []byte("\x80\x02N.")))
	f.Add([]byte("\x93NUMPY\x02\x00\x10\x00\x00\x00{'descr': '>i8', 'fortran_order': True, 'shape': (1,)}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseNPY(data)
		if err != nil {
			return
		}
		x, err := a.numeric()
		if err != nil {
			return
		}
		n := 1
		for _, s := range x.shape {
			n *= s
		}
		if x.len() != n || len(x.raw) != n*x.kind.size {
			t.Fatalf("shape %v with %d bytes of %s", x.shape, len(x.raw), x.dtypeName())
		}
		x.floats()
		x.ints()
	})
}

func FuzzNPZ(f *testing.F) {
	f.Add(npzBytes(tinyNPZ()), false, uint64(0))
	m := tinyNPZ()
	for _, k := range []string{"data", "indices", "indptr", "shape"} {
		m["adj_matrix."+k] = m["adj_"+k]
		delete(m, "adj_"+k)
	}
	f.Add(npzBytes(m), true, uint64(1))
	old := maxDenseFeatures
	f.Cleanup(func() { maxDenseFeatures = old })
	maxDenseFeatures = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte, split bool, seed uint64) {
		opts := NPZOptions{RandomSplit: split, Seed: seed, TrainPerClass: 1, Val: 1}
		r, err := ReadNPZ(bytes.NewReader(data), int64(len(data)), "f.npz", opts)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.npz: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := validate(r); err != nil {
			t.Fatal(err)
		}
		if split && len(r.Train) != r.NumClasses {
			t.Fatalf("%d training nodes for %d classes", len(r.Train), r.NumClasses)
		}
	})
}

func FuzzOGB(f *testing.F) {
	f.Add("0,1\n1,2\n", "1,2\n3,4\n5,6\n", "0\n1\nnan\n", "0\n", "1\n", "")
	f.Add("0,1\n", "", "", "", "", "")
	f.Add("0,5\n", "0.5\n", "1\n2\n", "1\n", "", "0\n")
	// One directory per fuzzing process, rewritten by every input: a new
	// directory per input held the fuzzer to about 100 runs/s.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, edges, feats, labels, train, valid, test string) {
		os.RemoveAll(filepath.Join(dir, "raw"))
		os.RemoveAll(filepath.Join(dir, "split"))
		write := func(name, content string, keepEmpty bool) {
			if content == "" && !keepEmpty {
				return
			}
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("raw/edge.csv", edges, true)
		write("raw/node-feat.csv", feats, false)
		write("raw/node-label.csv", labels, false)
		if train != "" || valid != "" || test != "" {
			write("split/s/train.csv", train, true)
			write("split/s/valid.csv", valid, true)
			write("split/s/test.csv", test, true)
		}
		r, err := OGB(dir, "")
		if err != nil {
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := validate(r); err != nil {
			t.Fatal(err)
		}
	})
}

// refEdges parses the edge lines of an edge list the simple, slow way.
func refEdges(t *testing.T, data []byte) (src, dst []int64) {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimPrefix(line, "\xef\xbb\xbf")
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' || r == '\v' || r == '\f' })
		if len(fields) == 0 || fields[0][0] == '#' || fields[0][0] == '%' {
			continue
		}
		u, err1 := strconv.ParseInt(strings.TrimPrefix(fields[0], "+"), 10, 64)
		v, err2 := strconv.ParseInt(strings.TrimPrefix(fields[1], "+"), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("accepted line %q has bad ids", line)
		}
		src, dst = append(src, u), append(dst, v)
	}
	return src, dst
}

func FuzzEdgeList(f *testing.F) {
	f.Add([]byte("# c\n0 1\n1\t2\n"), uint8(0))
	f.Add([]byte("0,1,0.5\n1,2,1e3\r\n"), uint8(1))
	f.Add([]byte("5 9000000000\n% x\n\n7 5"), uint8(2))
	f.Add([]byte("\xef\xbb\xbf1 2 # t\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := EdgeListOptions{Relabel: Relabel(mode % 3)}
		r, info, err := ReadEdgeList(bytes.NewReader(data), "f.txt", opts)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.txt: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := validate(r); err != nil {
			t.Fatal(err)
		}
		src, dst := refEdges(t, data)
		if len(src) != len(r.Src) || info.Edges != len(src) {
			t.Fatalf("%d edges, reference parser finds %d", len(r.Src), len(src))
		}
		for i := range src {
			u, v := int64(r.Src[i]), int64(r.Dst[i])
			if info.Relabelled {
				u, v = info.OrigIDs[u], info.OrigIDs[v]
			}
			if u != src[i] || v != dst[i] {
				t.Fatalf("edge %d: %d->%d, reference %d->%d", i, u, v, src[i], dst[i])
			}
		}
	})
}

func FuzzMETIS(f *testing.F) {
	f.Add([]byte("% c\n3 3\n2 3\n1 3\n1 2\n"))
	f.Add([]byte("2 1 1\n2 5\n1 5\n"))
	f.Add([]byte("2 1 111 2\n1 4 4 2 3\n1 4 4 1 3\n"))
	f.Add([]byte("3 1\n2\n1\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ReadMETIS(bytes.NewReader(data), "f.graph")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.graph: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := validate(r); err != nil {
			t.Fatal(err)
		}
		if len(r.Src)%2 != 0 {
			t.Fatalf("%d adjacency entries, want an even count", len(r.Src))
		}
		for i := range r.Src {
			if r.Src[i] == r.Dst[i] {
				t.Fatalf("self-loop %d accepted", r.Src[i])
			}
		}
	})
}
