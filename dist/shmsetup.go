package dist

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// Transport says how this rank's collectives travel: "shared memory"
// when every rank shares this host, else "tcp" (with the reason).
func (g *TCP) Transport() string { return g.transport }

// setupShm agrees, through the rendezvous store, whether every rank
// shares this host and, if so, maps one segment for the group (rank 0
// creates it, the others open it by the name the store gives, rank 0
// unlinks it once all have it mapped). Any failure on any rank leaves
// every rank on TCP. The rank serving the store waits until every rank
// is done with it.
func (g *TCP) setupShm(sc *StoreClient, servesStore bool) error {
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
	}
	all := func(prefix string) []string {
		ks := make([]string, n)
		for i := range ks {
			ks[i] = prefix + strconv.Itoa(i)
		}
		return ks
	}
	wait := func(keys []string) ([]string, error) {
		vals, missing, err := sc.Wait(keys, g.opts.RendezvousTimeout)
		if err != nil {
			return nil, fmt.Errorf("rendezvous (shared memory): %w", err)
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("rendezvous (shared memory): %s never set within %v", strings.Join(missing, ", "), g.opts.RendezvousTimeout)
		}
		return vals, nil
	}
	if err := sc.Set("shm/host/"+strconv.Itoa(r), key); err != nil {
		return err
	}
	hosts, err := wait(all("shm/host/"))
	if err != nil {
		return err
	}
	same := key != "-"
	for _, h := range hosts {
		same = same && h == key
	}
	if !same {
		if key != "-" {
			g.transport = "tcp (ranks on several hosts)"
		}
		return g.storeDone(sc, servesStore, all)
	}
	slot := shmSlotBytes(n, g.opts.ShmSlotBytes)
	ring := shmRingBytes(n, g.opts.ShmRingBytes)
	data, p2pCtl, rings, total := shmLayout(n, slot, ring)
	var mem []byte
	var name string
	var serr error
	if r == 0 {
		var nonce [16]byte
		rand.Read(nonce[:])
		if mem, name, serr = createSegment(total); serr == nil {
			binary.LittleEndian.PutUint64(mem[0:], shmMagic)
			binary.LittleEndian.PutUint64(mem[8:], uint64(n))
			binary.LittleEndian.PutUint64(mem[16:], uint64(slot))
			copy(mem[24:40], nonce[:])
			binary.LittleEndian.PutUint64(mem[40:], uint64(ring))
			err = sc.Set("shm/seg", name+" "+hex.EncodeToString(nonce[:]))
		} else {
			err = sc.Set("shm/seg", "!"+serr.Error())
		}
		if err != nil {
			return err
		}
	} else {
		v, err := wait([]string{"shm/seg"})
		if err != nil {
			return err
		}
		nm, nonceHex, ok := strings.Cut(v[0], " ")
		switch {
		case strings.HasPrefix(v[0], "!"):
			serr = fmt.Errorf("rank 0: %s", v[0][1:])
		case !ok:
			serr = fmt.Errorf("bad segment description %q", v[0])
		default:
			if mem, serr = openSegment(nm, total); serr == nil {
				nonce, _ := hex.DecodeString(nonceHex)
				if binary.LittleEndian.Uint64(mem[0:]) != shmMagic || binary.LittleEndian.Uint64(mem[8:]) != uint64(n) ||
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
	if err := sc.Set("shm/ok/"+strconv.Itoa(r), ok); err != nil {
		return err
	}
	oks, err := wait(all("shm/ok/"))
	if r == 0 && name != "" {
		removeSegment(name) // mapped by all (or abandoned): nothing left behind
	}
	if err != nil {
		if mem != nil {
			unmapSegment(mem)
		}
		return err
	}
	for j, v := range oks {
		if v != "1" {
			if mem != nil {
				unmapSegment(mem)
			}
			g.transport = fmt.Sprintf("tcp (shared memory failed on rank %d: %s)", j, strings.TrimPrefix(v, "!"))
			g.opts.Security.logf("rank %d: shared memory transport not used: rank %d: %s", r, j, strings.TrimPrefix(v, "!"))
			return g.storeDone(sc, servesStore, all)
		}
	}
	g.shm = &shmSeg{mem: mem, n: n, rank: r, slot: slot, data: data, p2pCtl: p2pCtl, rings: rings, ringLen: ring, spins: shmSpinsBusy, maxSpins: shmSpinsBusy, close: func() error { return unmapSegment(mem) }}
	if n <= runtime.NumCPU() { // every rank can have a processor: poll longer, as Open MPI does
		g.shm.maxSpins = shmSpinsMax
	}
	g.transport = "shared memory"
	return g.storeDone(sc, servesStore, all)
}

// storeDone: every rank says it is done with the store; the rank serving
// it waits for all (closing it earlier would cut the others off).
func (g *TCP) storeDone(sc *StoreClient, servesStore bool, all func(string) []string) error {
	if err := sc.Set("shm/done/"+strconv.Itoa(g.rank), "1"); err != nil {
		return err
	}
	if servesStore {
		if _, missing, err := sc.Wait(all("shm/done/"), g.opts.RendezvousTimeout); err != nil || len(missing) > 0 {
			return fmt.Errorf("rendezvous: ranks did not finish (%v, missing %v)", err, missing)
		}
	}
	return nil
}
