package dist

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// testHostKey, when set (by tests), gives each rank's host identity.
var testHostKey func(rank int) string

// Transport says how this rank's collectives travel: "shared memory"
// when every rank shares this host, else "tcp" (with the reason).
func (g *TCP) Transport() string { return g.transport }

// setupShm groups the ranks by host through the rendezvous store and
// maps one segment per host with two ranks or more (its lowest rank
// creates it, the others open it by the name the store gives, and the
// creator unlinks it once all have it mapped). When every rank is on one
// host, collectives and messages all go through it; otherwise the ranks
// of a host send their messages and collective traffic to each other
// through its rings and use TCP for the others. Any failure on a rank
// of a host leaves that host's ranks on TCP. The rank serving the store
// waits until every rank is done with it.
func (g *TCP) setupShm(ctx context.Context, sc *StoreClient, servesStore bool) error {
	n, r := g.size, g.rank
	g.transport = "tcp"
	if n == 1 {
		return nil
	}
	key := "-"
	switch {
	case g.opts.NoSharedMemory:
		g.transport = "tcp (shared memory turned off)"
	case !shmSupported:
		g.transport = "tcp (no shared-memory transport on this system)"
	default:
		if k := hostKey(); k != "" {
			key = k
		}
		if testHostKey != nil {
			key = testHostKey(r)
		}
	}
	all := func(prefix string) []string {
		ks := make([]string, n)
		for i := range ks {
			ks[i] = prefix + strconv.Itoa(i)
		}
		return ks
	}
	wait := func(keys []string) ([]string, error) {
		vals, missing, err := sc.Wait(ctx, keys, g.opts.RendezvousTimeout)
		if err != nil {
			return nil, fmt.Errorf("rendezvous (shared memory): %w", err)
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("rendezvous (shared memory): %s never set within %v", abbreviate(missing, ", "), g.opts.RendezvousTimeout)
		}
		return vals, nil
	}
	if err := sc.Set(ctx, "shm/host/"+strconv.Itoa(r), key); err != nil {
		return err
	}
	hosts, err := wait(all("shm/host/"))
	if err != nil {
		return err
	}
	// this host's ranks (global ranks in order; local index = position)
	var members []int
	if key != "-" {
		for j, h := range hosts {
			if h == key {
				members = append(members, j)
			}
		}
	}
	full := len(members) == n
	if len(members) < 2 {
		if key != "-" {
			g.transport = "tcp (no other rank on this host)"
		}
		if err := sc.Set(ctx, "shm/ok/"+strconv.Itoa(r), "1"); err != nil {
			return err
		}
		return g.storeDone(ctx, sc, servesStore, all)
	}
	m, leader := len(members), members[0]
	me := 0
	for i, j := range members {
		if j == r {
			me = i
		}
	}
	slot := 0 // ranks on several hosts: rings only, collectives over TCP
	if full {
		slot = shmSlotBytes(m, g.opts.ShmSlotBytes)
	}
	ring := shmRingBytes(m, g.opts.ShmRingBytes)
	data, p2pCtl, rings, total := shmLayout(m, slot, ring)
	segKey := "shm/seg/" + strconv.Itoa(leader)
	var mem []byte
	var name string
	var serr error
	if r == leader {
		var nonce [16]byte
		rand.Read(nonce[:])
		if mem, name, serr = createSegment(total); serr == nil {
			binary.LittleEndian.PutUint64(mem[0:], shmMagic)
			binary.LittleEndian.PutUint64(mem[8:], uint64(m))
			binary.LittleEndian.PutUint64(mem[16:], uint64(slot))
			copy(mem[24:40], nonce[:])
			binary.LittleEndian.PutUint64(mem[40:], uint64(ring))
			err = sc.Set(ctx, segKey, name+" "+hex.EncodeToString(nonce[:]))
		} else {
			err = sc.Set(ctx, segKey, "!"+serr.Error())
		}
		if err != nil {
			return err
		}
	} else {
		v, err := wait([]string{segKey})
		if err != nil {
			return err
		}
		nm, nonceHex, ok := strings.Cut(v[0], " ")
		switch {
		case strings.HasPrefix(v[0], "!"):
			serr = fmt.Errorf("rank %d: %s", leader, v[0][1:])
		case !ok:
			serr = fmt.Errorf("bad segment description %q", v[0])
		default:
			if mem, serr = openSegment(nm, total); serr == nil {
				nonce, _ := hex.DecodeString(nonceHex)
				if binary.LittleEndian.Uint64(mem[0:]) != shmMagic || binary.LittleEndian.Uint64(mem[8:]) != uint64(m) ||
					binary.LittleEndian.Uint64(mem[16:]) != uint64(slot) || string(mem[24:40]) != string(nonce) ||
					binary.LittleEndian.Uint64(mem[40:]) != uint64(ring) {
					serr = fmt.Errorf("segment %s is not this group's", nm)
				}
			}
		}
	}
	ok := "1"
	if serr != nil {
		ok = "!" + serr.Error()
	}
	if err := sc.Set(ctx, "shm/ok/"+strconv.Itoa(r), ok); err != nil {
		return err
	}
	okKeys := make([]string, m)
	for i, j := range members {
		okKeys[i] = "shm/ok/" + strconv.Itoa(j)
	}
	oks, err := wait(okKeys)
	if r == leader && name != "" {
		removeSegment(name) // mapped by all (or abandoned): nothing left behind
	}
	if err != nil {
		if mem != nil {
			unmapSegment(mem)
		}
		return err
	}
	for i, v := range oks {
		if v != "1" {
			if mem != nil {
				unmapSegment(mem)
			}
			g.transport = fmt.Sprintf("tcp (shared memory failed on rank %d: %s)", members[i], strings.TrimPrefix(v, "!"))
			g.opts.Security.logf("rank %d: shared memory transport not used: rank %d: %s", r, members[i], strings.TrimPrefix(v, "!"))
			return g.storeDone(ctx, sc, servesStore, all)
		}
	}
	seg := &shmSeg{mem: mem, n: m, rank: me, slot: slot, data: data, p2pCtl: p2pCtl, rings: rings, ringLen: ring,
		spins: shmSpinsBusy, maxSpins: shmSpinsBusy, global: members, local: make([]int, n), close: func() error { return unmapSegment(mem) }}
	for j := range seg.local {
		seg.local[j] = -1
	}
	for i, j := range members {
		seg.local[j] = i
		if j != r {
			g.peers[j].link = ringLink{g, j}
		}
	}
	if m <= runtime.NumCPU() { // every rank can have a processor: poll longer, as Open MPI does
		seg.maxSpins = shmSpinsMax
	}
	g.seg = seg
	if full {
		g.shm = seg
		g.transport = "shared memory"
	} else {
		g.transport = fmt.Sprintf("shared memory with ranks %s on this host, tcp with the others", ranksString(append([]int(nil), members...)))
	}
	return g.storeDone(ctx, sc, servesStore, all)
}

// storeDone: every rank says it is done with the store; the rank serving
// it waits for all (closing it earlier would cut the others off).
func (g *TCP) storeDone(ctx context.Context, sc *StoreClient, servesStore bool, all func(string) []string) error {
	if err := sc.Set(ctx, "shm/done/"+strconv.Itoa(g.rank), "1"); err != nil {
		return err
	}
	if servesStore {
		if _, missing, err := sc.Wait(ctx, all("shm/done/"), g.opts.RendezvousTimeout); err != nil || len(missing) > 0 {
			if err != nil {
				return fmt.Errorf("rendezvous: ranks did not finish: %w", err)
			}
			return fmt.Errorf("rendezvous: ranks did not finish: %s missing", abbreviate(missing, ", "))
		}
	}
	return nil
}
