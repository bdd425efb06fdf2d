package apptest

import "sync"

// AtOnce runs call(0) … call(n-1) in n goroutines at once and returns their
// results by index once all have returned: the scenarios of races and limits
// send their requests this way, so that they overlap as much as they can.
func AtOnce[T any](n int, call func(i int) T) []T {
	out := make([]T, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = call(i)
		}()
	}
	wg.Wait()
	return out
}
