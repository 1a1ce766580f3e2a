package samplersvc

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// AuthKey is the metadata key of a call's credentials.
const AuthKey = "graphmill-auth"

// authWindow bounds the clock difference a call's timestamp may have, and
// how long nonces are remembered against replays.
const authWindow = 5 * time.Minute

// AuthValue returns the credentials of one call to method (its full gRPC
// name, e.g. "/graphmill.v1.Sampler/Stream") under the shared secret:
// "v1:<unix nanoseconds>:<32 hex nonce>:<hex HMAC-SHA256(secret,
// "graphmill-sampler-v1|<time>|<nonce>|<method>")>". Nothing secret is on
// the wire and the server refuses a replayed value. This is the runtime's
// shared-secret challenge-response (package dist) in one message, since a
// gRPC call cannot run a handshake; the Python client computes the same.
func AuthValue(secret []byte, method string, now time.Time) string {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		panic(err)
	}
	ts := strconv.FormatInt(now.UnixNano(), 10)
	n := hex.EncodeToString(nonce[:])
	return "v1:" + ts + ":" + n + ":" + hex.EncodeToString(authMAC(secret, ts, n, method))
}

func authMAC(secret []byte, ts, nonce, method string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("graphmill-sampler-v1|" + ts + "|" + nonce + "|" + method))
	return m.Sum(nil)
}

// callCreds attaches AuthValue to every call.
type callCreds struct{ secret []byte }

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (c callCreds) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	method := ""
	if ri, ok := credentialsRequestInfo(ctx); ok {
		method = ri
	}
	return map[string]string{AuthKey: AuthValue(c.secret, method, time.Now())}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: the
// HMAC needs no TLS (nothing secret is sent).
func (callCreds) RequireTransportSecurity() bool { return false }

// verifier checks calls' credentials on the server.
type verifier struct {
	secret []byte
	log    func(string)
	mu     sync.Mutex
	seen   map[string]time.Time
}

func (v *verifier) check(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(AuthKey)
	who := "a client"
	if p, ok := peer.FromContext(ctx); ok {
		who = p.Addr.String()
	}
	refuse := func(why string) error {
		v.log(fmt.Sprintf("refused %s from %s: %s", method, who, why))
		return status.Errorf(codes.Unauthenticated, "graphmill sampler: authentication failed (%s); set %s to the server's secret", why, "GRAPHMILL_DIST_TOKEN")
	}
	if len(vals) != 1 {
		return refuse("no credentials")
	}
	parts := strings.Split(vals[0], ":")
	if len(parts) != 4 || parts[0] != "v1" {
		return refuse("malformed credentials")
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return refuse("malformed timestamp")
	}
	now := time.Now()
	if d := now.Sub(time.Unix(0, ns)); d > authWindow || d < -authWindow {
		return refuse(fmt.Sprintf("timestamp %v away from the server's clock", d.Round(time.Second)))
	}
	got, err := hex.DecodeString(parts[3])
	if err != nil || !hmac.Equal(got, authMAC(v.secret, parts[1], parts[2], method)) {
		return refuse("wrong secret")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, dup := v.seen[parts[2]]; dup {
		return refuse("replayed credentials")
	}
	for k, t := range v.seen {
		if now.Sub(t) > 2*authWindow {
			delete(v.seen, k)
		}
	}
	v.seen[parts[2]] = now
	return nil
}

func (v *verifier) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := v.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (v *verifier) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := v.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return h(srv, ss)
}

func credentialsRequestInfo(ctx context.Context) (string, bool) {
	ri, ok := credentials.RequestInfoFromContext(ctx)
	return ri.Method, ok
}
