// Package rng is a small, fast, concrete pseudo-random generator for hot
// loops (sampling, synthetic graphs). It is wyrand with Lemire's bounded
// multiply: about 1.4 ns a draw here, against 8-10 ns for math/rand/v2
// through its Source interface, which is why graphmill has its own. It is
// not cryptographic. A Rand is not safe for concurrent use: give each worker
// its own, seeded with Derive so results do not depend on the worker count.
package rng

import (
	"fmt"
	"math/bits"
)

// Rand is a wyrand generator. The zero value is a valid generator.
type Rand struct{ state uint64 }

// New returns a generator seeded with seed.
func New(seed uint64) *Rand { return &Rand{state: Mix(seed)} }

// Seed resets the generator.
func (r *Rand) Seed(seed uint64) { r.state = Mix(seed) }

// Uint64 returns 64 random bits.
func (r *Rand) Uint64() uint64 {
	r.state += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(r.state, r.state^0xe7037ed1a0b428db)
	return hi ^ lo
}

// Skip advances the stream by n draws (as n calls of Uint64 would) at
// the cost of one: the state is a counter.
func (r *Rand) Skip(n uint64) { r.state += n * 0xa0761d6478bd642f }

// Lanes16 fills dst with the next len(dst) 16-bit lanes of the stream:
// four per Uint64 draw, lowest first; a trailing partial draw is consumed
// whole. It equals calling Uint64 ceil(len(dst)/4) times and splitting the
// results, with the state kept in a register (dropout draws its masks so).
// On amd64 with AVX-512 or AVX2, whole groups of eight or four draws are
// computed by vector kernels (lanes_amd64.s), the same lanes.
func (r *Rand) Lanes16(dst []uint16) {
	d := lanesFast(dst, r.state)
	r.Skip(uint64(d))
	s := r.state
	i := 4 * d
	for ; i+4 <= len(dst); i += 4 {
		s += 0xa0761d6478bd642f
		hi, lo := bits.Mul64(s, s^0xe7037ed1a0b428db)
		v := hi ^ lo
		l := dst[i : i+4 : i+4]
		l[0], l[1], l[2], l[3] = uint16(v), uint16(v>>16), uint16(v>>32), uint16(v>>48)
	}
	if i < len(dst) {
		s += 0xa0761d6478bd642f
		hi, lo := bits.Mul64(s, s^0xe7037ed1a0b428db)
		for v := hi ^ lo; i < len(dst); i++ {
			dst[i] = uint16(v)
			v >>= 16
		}
	}
	r.state = s
}

// Lanes fills dst with the next len(dst) lanes of width bits (16 or 1)
// of the stream, widened to 16 bits with their bits on top (Lane): with
// width 16 it is Lanes16; with width 1, lane i is 0x8000 where bit i%64
// of draw i/64 is set and 0 where it is clear, and a trailing partial
// draw is consumed whole. A dropout of probability 1/2 needs only one
// bit an element, a sixteenth of the draws of 16-bit lanes. On amd64
// with AVX-512 (BW) or AVX2, whole draws are widened by vector kernels.
func (r *Rand) Lanes(dst []uint16, width uint) {
	if width == 16 {
		r.Lanes16(dst)
		return
	}
	if width != 1 {
		panic(fmt.Sprintf("rng: Lanes of width %d (1 or 16)", width))
	}
	if d := bitsFast(dst, r.state); d > 0 {
		r.Skip(uint64(d))
		return
	}
	for i := 0; i < len(dst); i += 64 {
		v := r.Uint64()
		seg := dst[i:min(i+64, len(dst))]
		for j := range seg {
			seg[j] = uint16(v << 15) // bit 0 on top
			v >>= 1
		}
	}
}

// Lane returns lane i (0 <= i < 64/width) of width bits of the draw v
// (the lowest lanes first), widened to 16 bits as Lanes widens it: its
// width bits on top of the 16. Width 16 gives the 16-bit lane itself.
func Lane(v uint64, i int, width uint) uint64 {
	// The counts masked (they are below 64 anyway), so that Go adds no
	// check for larger ones.
	return v >> (uint(i) * width & 63) << ((64 - width) & 63) >> 48
}

// IntN returns a uniform int in [0, n) for n > 0 (Lemire's multiply-shift,
// with the rejection step that makes it exactly uniform).
func (r *Rand) IntN(n int) int {
	un := uint64(n)
	hi, lo := bits.Mul64(r.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), un)
		}
	}
	return int(hi)
}

// Shuffle puts s in a uniformly random order (Fisher-Yates from the end,
// one IntN(i+1) per position i > 0).
func Shuffle[T any](r *Rand, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// FloydMask draws k distinct values of [0, d), 0 < k <= d <= 64, by
// Floyd's algorithm and returns them as the set bits of a mask: for j from
// d-k to d-1, t = IntN(j+1), or j if t was drawn before. The draws and the
// stream's state afterwards are exactly those of calling IntN so; the
// generator's state stays in a register and the common case of the bounded
// multiply is inline (the sampler's hottest loop, about 10 % faster than
// calling IntN).
func (r *Rand) FloydMask(d, k int) uint64 {
	s := r.state
	var mask uint64
	for j := d - k; j < d; j++ {
		un := uint64(j + 1)
		s += 0xa0761d6478bd642f
		h, l := bits.Mul64(s, s^0xe7037ed1a0b428db)
		hi, lo := bits.Mul64(h^l, un)
		if lo < un {
			thresh := -un % un
			for lo < thresh {
				s += 0xa0761d6478bd642f
				h, l = bits.Mul64(s, s^0xe7037ed1a0b428db)
				hi, lo = bits.Mul64(h^l, un)
			}
		}
		// The value's bit and j's are made off the mask's dependency
		// chain, which is then a test, a conditional move and an or a
		// draw (testing mask>>t and then shifting t in, with the shift's
		// range check, made it eight instructions long: 1.3-1.5x the
		// time, AMD EPYC Zen 5).
		bit := uint64(1) << (hi & 63)
		if mask&bit != 0 {
			bit = uint64(1) << (uint(j) & 63)
		}
		mask |= bit
	}
	r.state = s
	return mask
}

// FloydMasks8 draws eight FloydMasks at once: for each lane i set in
// lanes, masks[i] becomes what FloydMask(int(ds[i]), k) returns from a
// Rand seeded with seeds[i] (Seed), for 1 <= k <= ds[i] <= 64; the other
// lanes' masks are left unspecified. Where FloydMasksVector, the lanes
// are drawn side by side by an AVX-512 or AVX2 kernel (in assembly for
// the reason the Lanes kernels are: Go does not vectorize 64x64->128-bit
// products), or a scalar one on CPUs whose 256-bit vectors run in two
// halves (isa.HalfWidth256), and a lane whose draw FloydMask might reject
// (odds of about 2^-58 a draw) is drawn again here; elsewhere every lane
// is drawn one at a time. Measured (AMD EPYC Zen 5, one core,
// BenchmarkFloydMasks8): eight lanes of FloydMask(20, 5) with their
// seeding took 42-43 ns side by side with AVX-512, 57-59 with AVX2,
// against 77-80 one at a time; on AMD EPYC Zen 1 122-124 ns with the
// scalar kernel, 154-155 with AVX2, 195 one at a time.
func FloydMasks8(seeds, ds *[8]uint64, k int, lanes uint8, masks *[8]uint64) {
	redo := lanes & uint8(floydFast(seeds, ds, k, masks))
	for redo != 0 {
		i := bits.TrailingZeros8(redo)
		redo &= redo - 1
		var r Rand
		r.Seed(seeds[i])
		masks[i] = r.FloydMask(int(ds[i]), k)
	}
}

// Float32 returns a uniform float32 in [0, 1).
func (r *Rand) Float32() float32 { return float32(r.Uint64()>>40) * (1.0 / (1 << 24)) }

// Float64 returns a uniform float64 in [0, 1).
func (r *Rand) Float64() float64 { return float64(r.Uint64()>>11) * (1.0 / (1 << 53)) }

// Normalish returns an approximately standard normal float32 from one draw:
// the Irwin-Hall sum of four 16-bit uniforms, scaled to variance 1 (bounded
// in ±3.46). It is for synthetic data, where speed matters more than tails.
func (r *Rand) Normalish() float32 {
	x := r.Uint64()
	s := (x & 0xffff) + (x >> 16 & 0xffff) + (x >> 32 & 0xffff) + (x >> 48)
	// Sum of four U(0,1) has mean 2 and variance 1/3.
	return (float32(s)*(1.0/65536) - 2) * 1.7320508
}

// Mix is a strong 64-bit mixer (splitmix64's finaliser), used to derive
// independent seeds.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Derive returns a seed for stream i of a computation seeded with seed, so
// that chunk i gets the same numbers whichever worker runs it.
func Derive(seed, i uint64) uint64 { return Mix(seed ^ Mix(i+0x632be59bd9b4e019)) }
