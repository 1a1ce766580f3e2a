package tensor

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	a, b := randMatrix(rng, 70, 513), randMatrix(rng, 70, 513)
	cases := []struct {
		name string
		run  func(dst Matrix) error
		ref  func(x, y float32) float32
	}{
		{"Add", func(d Matrix) error { return Add(d, a, b) }, func(x, y float32) float32 { return x + y }},
		{"Mul", func(d Matrix) error { return Mul(d, a, b) }, func(x, y float32) float32 { return x * y }},
		{"Scale", func(d Matrix) error { return Scale(d, 3, a) }, func(x, _ float32) float32 { return 3 * x }},
		{"ReLU", func(d Matrix) error { return ReLU(d, a) }, func(x, _ float32) float32 { return max(x, 0) }},
		{"LeakyReLU", func(d Matrix) error { return LeakyReLU(d, a, 0.1) }, func(x, _ float32) float32 {
			if x < 0 {
				return 0.1 * x
			}
			return x
		}},
		{"ELU", func(d Matrix) error { return ELU(d, a, 1) }, func(x, _ float32) float32 {
			if x < 0 {
				return float32(math.Exp(float64(x)) - 1)
			}
			return x
		}},
	}
	forEachKernel(t, func(t *testing.T) {
		for _, c := range cases {
			d := New(70, 513)
			if err := c.run(d); err != nil {
				t.Fatal(err)
			}
			for i := range d.Data {
				if w := c.ref(a.Data[i], b.Data[i]); math.Abs(float64(d.Data[i]-w)) > 1e-6 {
					t.Fatalf("%s[%d] = %v, want %v", c.name, i, d.Data[i], w)
				}
			}
			if err := c.run(New(70, 512)); !errors.Is(err, ErrShape) {
				t.Fatalf("%s with wrong shape: %v", c.name, err)
			}
		}
	})
}

func TestLogSoftmaxNLL(t *testing.T) {
	x, _ := FromSlice(2, 3, []float32{1, 2, 3, 1000, 0, -1000})
	y := New(2, 3)
	if err := LogSoftmax(y, x); err != nil {
		t.Fatal(err)
	}
	lse := math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3))
	want := []float64{1 - lse, 2 - lse, 3 - lse, 0, -1000, -2000}
	for i, w := range want {
		if math.Abs(float64(y.Data[i])-w) > 1e-4*(1+math.Abs(w)) {
			t.Fatalf("logsoftmax %v, want %v", y.Data, want)
		}
	}
	loss, n, err := NLLLoss(y, []int32{2, -1})
	if err != nil || n != 1 || math.Abs(float64(loss)-(lse-3)) > 1e-5 {
		t.Fatalf("NLL = %v, %d, %v", loss, n, err)
	}
	if _, _, err := NLLLoss(y, []int32{3, 0}); !errors.Is(err, ErrShape) {
		t.Fatalf("out-of-range label: %v", err)
	}
}

// TestCrossEntropyMatchesLogSoftmaxNLL checks the fused cross-entropy
// against NLLLoss of LogSoftmax and their gradients (NLLLossGrad, then
// LogSoftmaxGrad), bitwise, with every row, some rows and no row
// labelled, on one and two threads, into a gradient holding values.
func TestCrossEntropyMatchesLogSoftmaxNLL(t *testing.T) {
	defer SetThreads(Threads())
	rng := rand.New(rand.NewPCG(4, 5))
	for _, c := range []struct {
		rows, cols int
		labelled   float64 // share of the rows with a label
	}{{1, 1, 1}, {300, 7, 1}, {2708, 7, 0.05}, {517, 47, 0.5}, {40, 3, 0}} {
		x := randMatrix(rng, c.rows, c.cols)
		for i := range x.Data {
			x.Data[i] *= 8 // logits far apart too
		}
		labels := make([]int32, c.rows)
		for i := range labels {
			labels[i] = -1
			if rng.Float64() < c.labelled {
				labels[i] = int32(rng.IntN(c.cols))
			}
		}
		base := randMatrix(rng, c.rows, c.cols) // what the gradients are added to
		for _, th := range []int{1, 2} {
			SetThreads(th)
			logp := New(c.rows, c.cols)
			if err := LogSoftmax(logp, x); err != nil {
				t.Fatal(err)
			}
			want, wantN, err := NLLLoss(logp, labels)
			if err != nil {
				t.Fatal(err)
			}
			dlogp, wantDx := New(c.rows, c.cols), base.Clone()
			if err := errors.Join(NLLLossGrad(dlogp, labels, wantN, 0.7), LogSoftmaxGrad(wantDx, logp, dlogp)); err != nil {
				t.Fatal(err)
			}
			lse := make([]float32, c.rows)
			got, gotN, err := CrossEntropy(x, labels, lse)
			if err != nil {
				t.Fatal(err)
			}
			dx := base.Clone()
			if err := CrossEntropyGrad(dx, x, labels, lse, gotN, 0.7); err != nil {
				t.Fatal(err)
			}
			if math.Float32bits(got) != math.Float32bits(want) || gotN != wantN {
				t.Fatalf("%+v, %d threads: loss %v over %d rows, want %v over %d", c, th, got, gotN, want, wantN)
			}
			for i := range dx.Data {
				if math.Float32bits(dx.Data[i]) != math.Float32bits(wantDx.Data[i]) {
					t.Fatalf("%+v, %d threads: gradient %d is %v, want %v", c, th, i, dx.Data[i], wantDx.Data[i])
				}
			}
		}
	}
	x := New(2, 3)
	for _, bad := range []struct {
		labels []int32
		lse    int
	}{{[]int32{0, 3}, 2}, {[]int32{0}, 2}, {[]int32{0, 1}, 1}} {
		if _, _, err := CrossEntropy(x, bad.labels, make([]float32, bad.lse)); !errors.Is(err, ErrShape) {
			t.Errorf("labels %v, %d log-sum-exps: %v, want ErrShape", bad.labels, bad.lse, err)
		}
	}
	if _, _, err := CrossEntropy(New(2, 0), []int32{-1, -1}, make([]float32, 2)); !errors.Is(err, ErrEmpty) {
		t.Errorf("no columns: %v", err)
	}
}

func TestBCEWithLogitsStable(t *testing.T) {
	x, _ := FromSlice(1, 4, []float32{0, 100, -100, 2})
	tg, _ := FromSlice(1, 4, []float32{1, 1, 0, 0})
	got, err := BCEWithLogits(x, tg)
	want := (math.Log(2) + 0 + 0 + (2 + math.Log1p(math.Exp(-2)))) / 4
	if err != nil || math.Abs(float64(got)-want) > 1e-5 {
		t.Fatalf("BCE = %v (%v), want %v", got, err, want)
	}
}

func TestReductions(t *testing.T) {
	x, _ := FromSlice(3, 3, []float32{1, 5, 2, -1, -3, -2, 7, 7, 0})
	sum, mx := make([]float32, 3), make([]float32, 3)
	arg := make([]int32, 3)
	if err := errors.Join(RowSum(sum, x), RowMax(mx, x), RowArgmax(arg, x)); err != nil {
		t.Fatal(err)
	}
	if [3]float32(sum) != [3]float32{8, -6, 14} || [3]float32(mx) != [3]float32{5, -1, 7} || [3]int32(arg) != [3]int32{1, 0, 0} {
		t.Fatalf("sum %v max %v argmax %v", sum, mx, arg)
	}
	if err := RowSum(make([]float32, 2), x); !errors.Is(err, ErrShape) {
		t.Fatalf("short dst: %v", err)
	}
	if err := RowMax(make([]float32, 2), New(2, 0)); !errors.Is(err, ErrEmpty) {
		t.Fatalf("no columns: %v", err)
	}
}

func TestDropoutSeeded(t *testing.T) {
	x := New(100, 100)
	for i := range x.Data {
		x.Data[i] = 1
	}
	run := func(seed uint64) Matrix {
		d, m := New(100, 100), New(100, 100)
		if err := Dropout(d, m, x, 0.25, seed); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b, c := run(1), run(1), run(2)
	var zeros, same int
	for i := range a.Data {
		if a.Data[i] != b.Data[i] {
			t.Fatal("same seed, different masks")
		}
		if a.Data[i] == 0 {
			zeros++
		} else if a.Data[i] != 1/0.75 {
			t.Fatalf("kept value %v, want %v", a.Data[i], 1/0.75)
		}
		if a.Data[i] == c.Data[i] {
			same++
		}
	}
	if zeros < 2300 || zeros > 2700 || same == len(a.Data) {
		t.Fatalf("%d zeros of 10000 at p=0.25; %d equal to another seed", zeros, same)
	}
	noMask := New(100, 100)
	if err := Dropout(noMask, Matrix{}, x, 0.25, 1); err != nil {
		t.Fatal(err)
	}
	for i := range noMask.Data {
		if noMask.Data[i] != a.Data[i] {
			t.Fatal("dropout without a mask differs from dropout with one")
		}
	}
	if err := Dropout(a, b, x, 1, 1); err == nil {
		t.Fatal("p = 1 accepted")
	}
}

func TestCheckFinite(t *testing.T) {
	m := New(3, 4)
	if err := CheckFinite("m", m); err != nil {
		t.Fatal(err)
	}
	m.Set(2, 1, float32(math.NaN()))
	err := CheckFinite("m", m)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Row != 2 || nf.Col != 1 || !errors.Is(err, ErrNonFinite) {
		t.Fatalf("CheckFinite = %v", err)
	}
}

func TestDropoutThreadInvariantAndRate(t *testing.T) {
	x := New(300, 300) // several random-stream chunks
	for i := range x.Data {
		x.Data[i] = 1
	}
	for _, p := range []float64{0.1, 0.5, 0.6} {
		var masks [][]float32
		for _, th := range []int{1, 4} {
			SetThreads(th)
			d, m := New(300, 300), New(300, 300)
			if err := Dropout(d, m, x, p, 123); err != nil {
				t.Fatal(err)
			}
			masks = append(masks, m.Data)
		}
		SetThreads(0)
		zeros := 0
		for i := range masks[0] {
			if masks[0][i] != masks[1][i] {
				t.Fatalf("p=%v: mask differs between 1 and 4 threads at %d", p, i)
			}
			if masks[0][i] == 0 {
				zeros++
			}
		}
		// 90000 Bernoulli(p) draws: 5 standard deviations is under 0.009.
		if rate := float64(zeros) / 90000; math.Abs(rate-p) > 0.009 {
			t.Errorf("p=%v: dropped fraction %.4f", p, rate)
		}
	}
}

// TestDropoutRowsKeyed checks that DropoutRows drops a row by its key, not
// its position: the same keys in another order (and within other rows)
// give the same rows; the drop rate is p; the mask scales what it keeps.
func TestDropoutRowsKeyed(t *testing.T) {
	const rows, cols, p = 500, 37, 0.3
	x := New(rows, cols)
	for i := range x.Data {
		x.Data[i] = float32(i%11) + 1
	}
	keys := make([]int32, rows)
	for i := range keys {
		keys[i] = int32(i*7 + 3)
	}
	a, ma := New(rows, cols), New(rows, cols)
	if err := DropoutRows(a, ma, x, p, 42, keys); err != nil {
		t.Fatal(err)
	}
	// Reverse the rows and keys, and take a subset.
	sub := 123
	xr, kr := New(sub, cols), make([]int32, sub)
	for i := 0; i < sub; i++ {
		src := rows - 1 - i
		copy(xr.Row(i), x.Row(src))
		kr[i] = keys[src]
	}
	b := New(sub, cols)
	if err := DropoutRows(b, Matrix{}, xr, p, 42, kr); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < sub; i++ {
		src := rows - 1 - i
		for j := 0; j < cols; j++ {
			if b.At(i, j) != a.At(src, j) {
				t.Fatalf("row of key %d differs at column %d: %v vs %v", kr[i], j, b.At(i, j), a.At(src, j))
			}
		}
	}
	dropped := 0
	for i, m := range ma.Data {
		switch m {
		case 0:
			dropped++
			if a.Data[i] != 0 {
				t.Fatal("a dropped element is not zero")
			}
		case float32(1 / (1 - p)):
			if a.Data[i] != x.Data[i]*m {
				t.Fatal("a kept element is not scaled")
			}
		default:
			t.Fatalf("mask value %v", m)
		}
	}
	if rate := float64(dropped) / float64(len(ma.Data)); math.Abs(rate-p) > 0.02 {
		t.Fatalf("drop rate %.3f, want %.2f", rate, p)
	}
	c := New(rows, cols)
	if err := DropoutRows(c, Matrix{}, x, p, 43, keys); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(c.Data, a.Data) {
		t.Fatal("another seed drops the same elements")
	}
	if err := DropoutRows(c, Matrix{}, x, p, 43, keys[:3]); err == nil {
		t.Fatal("3 keys for 500 rows: no error")
	}
}

// TestDropoutMaskSegmentsKeyed: a segment's factors depend on its key, not
// on where it sits; the rate is p.
func TestDropoutMaskSegmentsKeyed(t *testing.T) {
	const p = 0.4
	lens := []int64{5, 0, 17, 300, 3}
	keys := []int32{11, 12, 13, 14, 15}
	off := []int64{0}
	for _, n := range lens {
		off = append(off, off[len(off)-1]+n)
	}
	m := New(1, int(off[len(off)-1]))
	if err := DropoutMaskSegments(m, p, 9, off, keys); err != nil {
		t.Fatal(err)
	}
	// Segment of key 14 alone.
	one := New(1, 300)
	if err := DropoutMaskSegments(one, p, 9, []int64{0, 300}, []int32{14}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.Data, m.Data[off[3]:off[4]]) {
		t.Fatal("a segment's mask depends on its position")
	}
	zero := 0
	for _, f := range m.Data {
		if f == 0 {
			zero++
		} else if f != float32(1/(1-p)) {
			t.Fatalf("factor %v", f)
		}
	}
	if r := float64(zero) / float64(len(m.Data)); math.Abs(r-p) > 0.08 {
		t.Fatalf("drop rate %.3f", r)
	}
	if err := DropoutMaskSegments(m, p, 9, off[:3], keys); err == nil {
		t.Fatal("short offsets: no error")
	}
}
