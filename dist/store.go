package dist

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Store is the rendezvous key-value store rank 0 serves (the role of
// torch's TCPStore): ranks set their addresses and wait for the others'.
// Clients authenticate like peers do.
type Store struct {
	ln  net.Listener
	sec *Security

	mu      sync.Mutex
	kv      map[string]string
	changed chan struct{} // closed and replaced on every set
	conns   map[net.Conn]bool
	closed  bool
	wg      sync.WaitGroup
}

// storeRank is the rank the store uses in handshakes.
const storeRank = -2

type storeReq struct {
	Op        string   `json:"op"` // "set" or "wait"
	Key       string   `json:"key,omitempty"`
	Value     string   `json:"value,omitempty"`
	Keys      []string `json:"keys,omitempty"`
	TimeoutMs int64    `json:"timeout_ms,omitempty"`
}

type storeResp struct {
	Values  []string `json:"values,omitempty"`
	Missing []string `json:"missing,omitempty"`
	Err     string   `json:"err,omitempty"`
}

// ServeStore listens on addr ("host:port") and serves the store until
// Close.
func ServeStore(addr string, sec *Security) (*Store, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rendezvous store: listening on %s: %w", addr, err)
	}
	s := &Store{ln: ln, sec: sec, kv: map[string]string{}, changed: make(chan struct{}), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr returns the address the store listens on.
func (s *Store) Addr() string { return s.ln.Addr().String() }

// storeCloseGrace is how long Close lets connected clients finish before
// it cuts them off.
const storeCloseGrace = 2 * time.Second

// Close stops the store: it accepts no one new, ends every wait, lets each
// client read the reply to its last request and hang up (for at most
// storeCloseGrace), then drops whoever is still connected. Cutting clients
// off at once could lose the reply to a rank's final set, whose key is
// what let the store's owner go on and close it.
func (s *Store) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.changed)
	s.mu.Unlock()
	s.ln.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(storeCloseGrace):
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	<-done
}

func (s *Store) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ac, _, err := s.sec.acceptAuth(c, storeRank, 10*time.Second)
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				ac.Close()
				return
			}
			s.conns[ac] = true
			s.mu.Unlock()
			s.serve(ac)
			s.mu.Lock()
			delete(s.conns, ac)
			s.mu.Unlock()
			ac.Close()
		}()
	}
}

func (s *Store) serve(c net.Conn) {
	dec := json.NewDecoder(bufio.NewReader(c))
	enc := json.NewEncoder(c)
	for {
		var q storeReq
		if err := dec.Decode(&q); err != nil {
			return
		}
		var r storeResp
		switch q.Op {
		case "set":
			s.mu.Lock()
			if !s.closed {
				s.kv[q.Key] = q.Value
				close(s.changed)
				s.changed = make(chan struct{})
			}
			s.mu.Unlock()
		case "wait":
			r.Values, r.Missing = s.wait(q.Keys, time.Duration(q.TimeoutMs)*time.Millisecond)
		default:
			r.Err = fmt.Sprintf("unknown store op %q", q.Op)
		}
		if err := enc.Encode(&r); err != nil {
			return
		}
	}
}

// wait returns the values of keys once all are set, or the missing keys
// when the timeout passes first.
func (s *Store) wait(keys []string, timeout time.Duration) ([]string, []string) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		var missing []string
		vals := make([]string, len(keys))
		for i, k := range keys {
			v, ok := s.kv[k]
			if !ok {
				missing = append(missing, k)
			}
			vals[i] = v
		}
		ch, closed := s.changed, s.closed
		s.mu.Unlock()
		if len(missing) == 0 {
			return vals, nil
		}
		if closed {
			return nil, missing
		}
		select {
		case <-ch:
		case <-deadline.C:
			return nil, missing
		}
	}
}

// StoreClient talks to a Store.
type StoreClient struct {
	c   net.Conn
	dec *json.Decoder
	enc *json.Encoder
}

// DialStore connects to the store at addr as rank, retrying until timeout
// (rank 0 may start after the others).
func DialStore(ctx context.Context, addr string, sec *Security, rank int, timeout time.Duration) (*StoreClient, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		d := net.Dialer{Timeout: time.Until(deadline)}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			ac, _, err := sec.dialAuth(c, int32(rank), max(time.Until(deadline), time.Second))
			if err != nil {
				c.Close()
				if errors.Is(err, ErrAuth) {
					return nil, fmt.Errorf("rendezvous store at %s: %w", addr, err)
				}
				last = err
			} else {
				return &StoreClient{c: ac, dec: json.NewDecoder(bufio.NewReader(ac)), enc: json.NewEncoder(ac)}, nil
			}
		} else {
			last = err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("rendezvous: could not reach rank 0's store at %s within %v: %v", addr, timeout, last)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *StoreClient) call(ctx context.Context, q storeReq, timeout time.Duration) (storeResp, error) {
	var r storeResp
	c.c.SetDeadline(time.Now().Add(timeout + 10*time.Second))
	defer c.c.SetDeadline(time.Time{})
	// A cancelled context ends the call at once: a deadline in the past
	// wakes the blocked read or write.
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	err := c.enc.Encode(&q)
	if err == nil {
		err = c.dec.Decode(&r)
	}
	if err != nil {
		if ctx.Err() != nil {
			return r, fmt.Errorf("rendezvous store: %w", ctx.Err())
		}
		return r, fmt.Errorf("rendezvous store: %w", err)
	}
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	return r, nil
}

// Set stores value under key.
func (c *StoreClient) Set(ctx context.Context, key, value string) error {
	_, err := c.call(ctx, storeReq{Op: "set", Key: key, Value: value}, 0)
	return err
}

// Wait returns the values of keys once every one is set; after timeout it
// returns the keys still missing instead (and no error). A cancelled ctx
// ends the wait with an error wrapping ctx.Err() (the connection is then
// of no further use).
func (c *StoreClient) Wait(ctx context.Context, keys []string, timeout time.Duration) (values, missing []string, err error) {
	r, err := c.call(ctx, storeReq{Op: "wait", Keys: keys, TimeoutMs: timeout.Milliseconds()}, timeout)
	return r.Values, r.Missing, err
}

// Close closes the connection.
func (c *StoreClient) Close() error { return c.c.Close() }
