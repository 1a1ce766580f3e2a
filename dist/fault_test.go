package dist

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func group(t *testing.T, n int, o Options) []*TCP {
	t.Helper()
	if o.OpTimeout == 0 {
		o.OpTimeout = 20 * time.Second
	}
	if o.PeerTimeout == 0 {
		o.PeerTimeout = 2 * time.Second
	}
	gs, err := LocalGroup(context.Background(), n, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, g := range gs {
			go g.Close()
		}
	})
	return gs
}

// transports runs f once per transport of local ranks.
func transports(t *testing.T, f func(t *testing.T, o Options)) {
	for _, tr := range []struct {
		name string
		o    Options
	}{{"shared memory", Options{}}, {"tcp", Options{NoSharedMemory: true}}} {
		t.Run(tr.name, func(t *testing.T) { f(t, tr.o) })
	}
}

// each runs f on every rank and returns the errors and the time taken.
func each(gs []*TCP, f func(g *TCP) error) ([]error, time.Duration) {
	t0 := time.Now()
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for r, g := range gs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(g) }()
	}
	wg.Wait()
	return errs, time.Since(t0)
}

func TestMismatchedCollectiveIsAnErrorOnEveryRank(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		odd  func(g *TCP) error
		want []string
	}{
		{"different collective", func(g *TCP) error { return g.Broadcast(ctx, make([]float32, 1000), 0) }, []string{"broadcast #1", "all-reduce #1"}},
		{"different size", func(g *TCP) error { return g.AllReduce(ctx, make([]float32, 999), Sum) }, []string{"float32 × 999", "float32 × 1000"}},
		{"different type", func(g *TCP) error { return g.AllReduce(ctx, make([]float64, 1000), Sum) }, []string{"float64 × 1000", "float32 × 1000"}},
		{"large, different size", func(g *TCP) error { return g.AllReduce(ctx, make([]float32, 300001), Sum) }, []string{"float32 × 300001", "float32 × 300000"}},
	}
	transports(t, func(t *testing.T, o Options) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				gs := group(t, 3, o)
				size := 1000
				if strings.HasPrefix(tc.name, "large") {
					size = 300000
				}
				errs, dt := each(gs, func(g *TCP) error {
					if err := g.Barrier(ctx); err != nil { // collective #0 matches
						return err
					}
					if g.Rank() == 1 {
						return tc.odd(g)
					}
					return g.AllReduce(ctx, make([]float32, size), Sum)
				})
				for r, err := range errs {
					if err == nil {
						t.Fatalf("rank %d: no error", r)
					}
				}
				joined := ""
				for _, err := range errs {
					joined += err.Error() + "\n"
				}
				for _, w := range tc.want {
					if !strings.Contains(joined, w) {
						t.Errorf("errors do not mention %q:\n%s", w, joined)
					}
				}
				if dt > 10*time.Second {
					t.Errorf("took %v", dt)
				}
			})
		}
	})
}

func TestDeadRankFailsEveryOtherRank(t *testing.T) { transports(t, testDeadRank) }

func testDeadRank(t *testing.T, o Options) {
	ctx := context.Background()
	gs := group(t, 4, o)
	errs, dt := each(gs, func(g *TCP) error {
		buf := make([]float32, 1<<20)
		for i := 0; ; i++ {
			if g.Rank() == 2 && i == 3 {
				// Die as kill -9 would: connections drop, no goodbye.
				for _, p := range g.peers {
					if p != nil {
						p.c.Close()
					}
				}
				return nil
			}
			if err := g.AllReduce(ctx, buf, Sum); err != nil {
				return err
			}
		}
	})
	for r, err := range errs {
		if r == 2 {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "rank 2") || !strings.Contains(err.Error(), "all-reduce #") {
			t.Errorf("rank %d: %v, want an error naming rank 2 and the all-reduce", r, err)
		}
	}
	if dt > 10*time.Second {
		t.Errorf("took %v", dt)
	}
}

func TestSilentPeerDetectedByHeartbeat(t *testing.T) { transports(t, testSilentPeer) }

func testSilentPeer(t *testing.T, o Options) {
	// A stopped process (SIGSTOP) or a cut link sends nothing, not even a
	// FIN: only the missing heartbeats tell.
	ctx := context.Background()
	o.PeerTimeout = time.Second
	gs := group(t, 2, o)
	gs[1].closing.Store(true) // rank 1's side neither reports nor heartbeats
	close(gs[1].closeCh)
	errs, dt := each(gs[:1], func(g *TCP) error { return g.AllReduce(ctx, make([]float32, 10), Sum) })
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank 1 is gone: nothing received") {
		t.Errorf("got %v", errs[0])
	}
	if dt > 5*time.Second {
		t.Errorf("took %v", dt)
	}
}

func TestOpTimeout(t *testing.T) { transports(t, testOpTimeout) }

func testOpTimeout(t *testing.T, o Options) {
	o.OpTimeout = 500 * time.Millisecond
	gs := group(t, 2, o)
	err := gs[0].AllReduce(context.Background(), make([]float32, 10), Sum)
	if err == nil || !strings.Contains(err.Error(), "nothing from rank 1 within 500ms") {
		t.Errorf("got %v", err)
	}
	_, err = gs[1].Recv(context.Background(), 0, 7)
	if err == nil {
		t.Errorf("receive without a sender: no error")
	}
}

// freePort returns a loopback port that is free now, chosen below Linux's
// ephemeral range (32768 and up): a port the kernel handed out for
// "port 0" and took back could be handed out again at once to another
// listener (another rank's mesh listener, another test's store) before
// the test binds it, and a rank dialling it would then reach a stranger.
func freePort(t *testing.T) int {
	t.Helper()
	for range 200 {
		p := 20000 + mrand.IntN(12000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free port in [20000, 32000)")
	return 0
}

func TestWrongSecretIsRefused(t *testing.T) {
	port := freePort(t)
	var logged []string
	var mu sync.Mutex
	good := &Security{Secret: []byte("right"), Log: func(s string) { mu.Lock(); logged = append(logged, s); mu.Unlock() }}
	bad := &Security{Secret: []byte("wrong")}
	o := Options{RendezvousTimeout: 2 * time.Second}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			oo := o
			oo.Security = good
			if r == 1 {
				oo.Security = bad
			}
			g, err := Join(context.Background(), Info{Rank: r, Size: 2, MasterAddr: "127.0.0.1", MasterPort: port}, oo)
			if g != nil {
				g.Close()
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "authentication failed") {
		t.Errorf("rank with the wrong secret: %v", errs[1])
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank(s) 1 of 2 never arrived") {
		t.Errorf("rank 0: %v", errs[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) == 0 || !strings.Contains(logged[0], "refused a connection") {
		t.Errorf("refusal not logged: %v", logged)
	}
}

func TestRendezvousNamesMissingRanks(t *testing.T) {
	port := freePort(t)
	sec := &Security{Secret: []byte("s")}
	t0 := time.Now()
	_, err := Join(context.Background(), Info{Rank: 0, Size: 4, MasterAddr: "127.0.0.1", MasterPort: port}, Options{Security: sec, RendezvousTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "rank(s) 1, 2, 3 of 4 never arrived within 1s") {
		t.Errorf("got %v", err)
	}
	if time.Since(t0) > 5*time.Second {
		t.Errorf("took %v", time.Since(t0))
	}
}

func TestStartOrderDoesNotMatter(t *testing.T) {
	port := freePort(t)
	sec := &Security{Secret: []byte("s")}
	gs := make([]*TCP, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for _, r := range []int{2, 1, 0} { // rank 0 (the store) last
		wg.Add(1)
		go func() {
			defer wg.Done()
			gs[r], errs[r] = Join(context.Background(), Info{Rank: r, Size: 3, MasterAddr: "127.0.0.1", MasterPort: port}, Options{Security: sec, RendezvousTimeout: 20 * time.Second})
		}()
		time.Sleep(300 * time.Millisecond)
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	errs, _ = each(gs, func(g *TCP) error {
		x := []int64{int64(g.Rank())}
		if err := g.AllReduce(context.Background(), x, Sum); err != nil {
			return err
		}
		if x[0] != 3 {
			t.Errorf("sum %d", x[0])
		}
		return g.Close()
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// writeCA writes a CA and a certificate signed by it (key usage for both
// client and server) under dir/prefix.
func writeCA(t *testing.T, dir, prefix string) TLSFiles {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: prefix + " CA"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	lt := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: prefix + " rank"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, lt, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	f := TLSFiles{Cert: filepath.Join(dir, prefix+".crt"), Key: filepath.Join(dir, prefix+".key"), CA: filepath.Join(dir, prefix+"-ca.crt")}
	os.WriteFile(f.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(f.Key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	os.WriteFile(f.CA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	return f
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	good := writeCA(t, dir, "job")
	other := writeCA(t, dir, "other")
	t.Run("same CA", func(t *testing.T) {
		gs := group(t, 3, Options{Security: &Security{Secret: []byte("s"), TLS: &good}})
		errs, _ := each(gs, func(g *TCP) error {
			x := make([]float64, 100000)
			for i := range x {
				x[i] = 1
			}
			if err := g.AllReduce(context.Background(), x, Sum); err != nil {
				return err
			}
			if x[7] != 3 {
				t.Errorf("sum %v", x[7])
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
	t.Run("certificate from another CA", func(t *testing.T) {
		port := freePort(t)
		var logged []string
		var mu sync.Mutex
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f := good
				if r == 1 {
					f = TLSFiles{Cert: other.Cert, Key: other.Key, CA: good.CA}
				}
				sec := &Security{Secret: []byte("s"), TLS: &f, Log: func(s string) { mu.Lock(); logged = append(logged, s); mu.Unlock() }}
				g, err := Join(context.Background(), Info{Rank: r, Size: 2, MasterAddr: "127.0.0.1", MasterPort: port}, Options{Security: sec, RendezvousTimeout: 2 * time.Second})
				if g != nil {
					g.Close()
				}
				errs[r] = err
			}()
		}
		wg.Wait()
		if errs[0] == nil || errs[1] == nil {
			t.Errorf("joined with a foreign certificate: %v / %v", errs[0], errs[1])
		}
		mu.Lock()
		if len(logged) == 0 {
			t.Errorf("refusal not logged")
		}
		mu.Unlock()
	})
}

var _ = strconv.Itoa
