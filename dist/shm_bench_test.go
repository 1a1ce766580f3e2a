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
