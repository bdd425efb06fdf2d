package realtime

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gobwas/ws"
)

// fanout writes events to their subscribers on one worker per core, so
// that a publisher returns at once and an event to 10,000 sockets uses
// every core. Each connection belongs to one worker for its lifetime, and
// a worker handles its jobs in order, so one connection's events arrive in
// the order they were published. Workers never wait on a socket (see send).
type fanout struct {
	workers []*fanWorker
	next    atomic.Uint32
}

// fanWorker is one worker's queue of jobs, unbounded so that publishing
// never waits.
type fanWorker struct {
	mu   sync.Mutex
	jobs []fanJob
	wake chan struct{} // cap 1: jobs are waiting
}

// fanJob is one event frame for some of a worker's connections.
type fanJob struct {
	frame []byte
	conns []*conn
}

// startFanout starts one worker per core; they stop with ctx.
func startFanout(ctx context.Context, wg *sync.WaitGroup) *fanout {
	f := &fanout{workers: make([]*fanWorker, runtime.GOMAXPROCS(0))}
	for i := range f.workers {
		w := &fanWorker{wake: make(chan struct{}, 1)}
		f.workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx)
		}()
	}
	return f
}

// assign picks the worker of a new connection, round robin.
func (f *fanout) assign() int {
	return int(f.next.Add(1) % uint32(len(f.workers)))
}

// push queues a job on worker i.
func (f *fanout) push(i int, j fanJob) {
	w := f.workers[i]
	w.mu.Lock()
	w.jobs = append(w.jobs, j)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *fanWorker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		for {
			w.mu.Lock()
			jobs := w.jobs
			w.jobs = nil
			w.mu.Unlock()
			if len(jobs) == 0 {
				break
			}
			for _, j := range jobs {
				for _, c := range j.conns {
					if !c.send(j.frame) {
						c.drop(ws.StatusPolicyViolation, "slow consumer: send queue full")
					}
				}
			}
		}
	}
}
