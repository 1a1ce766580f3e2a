package dist

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func BenchmarkAllReduce(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, size := range []int{4 << 10, 1 << 20} {
			for _, tr := range []string{"shm", "tcp"} {
				b.Run(fmt.Sprintf("%d ranks %s %d", n, tr, size), func(b *testing.B) {
					gs, err := LocalGroup(context.Background(), n, Options{NoSharedMemory: tr == "tcp"})
					if err != nil {
						b.Fatal(err)
					}
					defer func() {
						for _, g := range gs {
							go g.Close()
						}
					}()
					b.SetBytes(int64(size))
					var wg sync.WaitGroup
					for r, g := range gs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							buf := make([]float32, size/4)
							for i := 0; i < b.N; i++ {
								if err := g.AllReduce(context.Background(), buf, Sum); err != nil {
									b.Error(r, err)
									return
								}
							}
						}()
					}
					wg.Wait()
				})
			}
		}
	}
}

// BenchmarkAllReduceTwoHosts: 4 ranks, two per simulated host (ranks 0, 1 and 2, 3; rings
// within a host, TCP between), against all over TCP.
func BenchmarkAllReduceTwoHosts(b *testing.B) {
	for _, tr := range []string{"rings+tcp", "tcp"} {
		b.Run(tr, func(b *testing.B) {
			testHostKey = func(r int) string { return []string{"A", "B"}[r/2] }
			defer func() { testHostKey = nil }()
			gs, err := LocalGroup(context.Background(), 4, Options{NoSharedMemory: tr == "tcp"})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, g := range gs {
					go g.Close()
				}
			}()
			const size = 16 << 20
			b.SetBytes(size)
			var wg sync.WaitGroup
			for r, g := range gs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]float32, size/4)
					for i := 0; i < b.N; i++ {
						if err := g.AllReduce(context.Background(), buf, Sum); err != nil {
							b.Error(r, err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
