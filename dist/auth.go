package dist

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// TokenEnv is the environment variable holding the job's shared secret.
const TokenEnv = "GRAPHMILL_DIST_TOKEN"

// Security is how peers prove they belong to the job. Every connection
// (to the store and between ranks) runs a challenge-response over the
// shared Secret: each side sends a fresh random nonce and answers the
// other's with HMAC-SHA256(secret, direction, both nonces, both ranks), so
// nothing secret crosses the wire and a recorded exchange cannot be
// replayed. With TLS set, connections are mutual TLS first (certificates
// checked against the given CA) and the challenge-response runs inside.
type Security struct {
	Secret []byte
	TLS    *TLSFiles
	// Log receives one line per refused connection (nil: stderr).
	Log func(string)
}

// TLSFiles names PEM files for mutual TLS.
type TLSFiles struct {
	Cert, Key, CA string
}

// LoadSecret returns the secret from file (when given) or $GRAPHMILL_DIST_TOKEN.
func LoadSecret(getenv func(string) string, file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the shared secret: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return nil, fmt.Errorf("the shared secret file %s is empty", file)
		}
		return []byte(s), nil
	}
	if s := getenv(TokenEnv); s != "" {
		return []byte(s), nil
	}
	return nil, fmt.Errorf("no shared secret: set %s (or --dist-token-file) to the same value on every rank", TokenEnv)
}

// NewSecret returns a fresh random secret (hex), as graphmill launch gives
// its children.
func NewSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

func (s *Security) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.Log != nil {
		s.Log(msg)
		return
	}
	fmt.Fprintln(os.Stderr, "graphmill dist:", msg)
}

// tlsConfig builds the client or server side of mutual TLS.
func (s *Security) tlsConfig(server bool) (*tls.Config, error) {
	f := s.TLS
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s / key %s: %w", f.Cert, f.Key, err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("TLS CA %s holds no PEM certificate", f.CA)
	}
	// Ranks reach each other by IP address, so the peer's certificate is
	// checked against the CA (chain and validity) but not against a host
	// name.
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("peer sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, r := range raw {
			c, err := x509.ParseCertificate(r)
			if err != nil {
				return err
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		return err
	}
	c := &tls.Config{
		Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
		InsecureSkipVerify: true, VerifyPeerCertificate: verify,
	}
	if server {
		c.ClientAuth = tls.RequireAnyClientCert
	}
	return c, nil
}

const (
	handshakeMagic = "GMDIST01"
	nonceLen       = 32
	helloLen       = len(handshakeMagic) + nonceLen + 4
)

// ErrAuth marks a connection that failed authentication.
var ErrAuth = errors.New("authentication failed")

// mac computes the answer of side (dial or accept) for the exchange.
func mac(secret []byte, side string, dialNonce, acceptNonce []byte, dialRank, acceptRank int32) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(handshakeMagic + side))
	h.Write(dialNonce)
	h.Write(acceptNonce)
	var r [8]byte
	binary.LittleEndian.PutUint32(r[:4], uint32(dialRank))
	binary.LittleEndian.PutUint32(r[4:], uint32(acceptRank))
	h.Write(r[:])
	return h.Sum(nil)
}

func hello(rank int32) ([]byte, []byte) {
	b := make([]byte, helloLen)
	copy(b, handshakeMagic)
	nonce := b[len(handshakeMagic) : len(handshakeMagic)+nonceLen]
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	binary.LittleEndian.PutUint32(b[len(handshakeMagic)+nonceLen:], uint32(rank))
	return b, nonce
}

func parseHello(b []byte) ([]byte, int32, error) {
	if string(b[:len(handshakeMagic)]) != handshakeMagic {
		return nil, 0, fmt.Errorf("%w: not a graphmill peer (bad greeting)", ErrAuth)
	}
	return b[len(handshakeMagic) : len(handshakeMagic)+nonceLen], int32(binary.LittleEndian.Uint32(b[len(handshakeMagic)+nonceLen:])), nil
}

// dialAuth runs the dialing side of the handshake as rank self and
// returns the (possibly TLS-wrapped) connection and the peer's rank.
func (s *Security) dialAuth(c net.Conn, self int32, timeout time.Duration) (net.Conn, int32, error) {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if s.TLS != nil {
		cfg, err := s.tlsConfig(false)
		if err != nil {
			return nil, 0, err
		}
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			return nil, 0, fmt.Errorf("%w: TLS handshake with %s: %v", ErrAuth, c.RemoteAddr(), err)
		}
		c = tc
	}
	h, dn := hello(self)
	if _, err := c.Write(h); err != nil {
		return nil, 0, err
	}
	buf := make([]byte, helloLen+sha256.Size)
	if _, err := io.ReadFull(c, buf); err != nil {
		return nil, 0, fmt.Errorf("%w: %s refused the connection (is the shared secret the same on every rank?): %v", ErrAuth, c.RemoteAddr(), err)
	}
	an, arank, err := parseHello(buf)
	if err != nil {
		return nil, 0, err
	}
	if !hmac.Equal(buf[helloLen:], mac(s.Secret, "accept", dn, an, self, arank)) {
		return nil, 0, fmt.Errorf("%w: %s answered with a wrong secret", ErrAuth, c.RemoteAddr())
	}
	if _, err := c.Write(mac(s.Secret, "dial", dn, an, self, arank)); err != nil {
		return nil, 0, err
	}
	ok := make([]byte, 1)
	if _, err := io.ReadFull(c, ok); err != nil || ok[0] != 1 {
		return nil, 0, fmt.Errorf("%w: %s refused our answer (is the shared secret the same on every rank?)", ErrAuth, c.RemoteAddr())
	}
	return c, arank, nil
}

// acceptAuth runs the accepting side as rank self. A peer that fails is
// logged and refused.
func (s *Security) acceptAuth(c net.Conn, self int32, timeout time.Duration) (net.Conn, int32, error) {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	refuse := func(err error) (net.Conn, int32, error) {
		s.logf("refused a connection from %s: %v", c.RemoteAddr(), err)
		c.Close()
		return nil, 0, err
	}
	if s.TLS != nil {
		cfg, err := s.tlsConfig(true)
		if err != nil {
			return nil, 0, err
		}
		tc := tls.Server(c, cfg)
		if err := tc.Handshake(); err != nil {
			return refuse(fmt.Errorf("%w: TLS: %v", ErrAuth, err))
		}
		c = tc
	}
	buf := make([]byte, helloLen)
	if _, err := io.ReadFull(c, buf); err != nil {
		return refuse(fmt.Errorf("%w: no greeting: %v", ErrAuth, err))
	}
	dn, drank, err := parseHello(buf)
	if err != nil {
		return refuse(err)
	}
	h, an := hello(self)
	if _, err := c.Write(append(h, mac(s.Secret, "accept", dn, an, drank, self)...)); err != nil {
		return refuse(err)
	}
	ans := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, ans); err != nil {
		return refuse(fmt.Errorf("%w: no answer to the challenge (peer claiming rank %d has a different secret?): %v", ErrAuth, drank, err))
	}
	if !hmac.Equal(ans, mac(s.Secret, "dial", dn, an, drank, self)) {
		return refuse(fmt.Errorf("%w: wrong answer to the challenge from a peer claiming rank %d (wrong or missing %s)", ErrAuth, drank, TokenEnv))
	}
	if _, err := c.Write([]byte{1}); err != nil {
		return refuse(err)
	}
	return c, drank, nil
}
