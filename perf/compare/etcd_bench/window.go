package main

import (
	"context"
	"sync"
)

// window bounds the messages this client has sent and not yet seen delivered back (the
// contract's --inflight): etcd has no flow control of its own towards a client, its gRPC server
// queues whatever arrives. A slot is taken before a put is issued and given back when the
// watch delivers the message, or when the put fails for good, whichever comes first.
type window struct {
	slots   chan struct{} // one token per outstanding message
	mu      sync.Mutex
	pending map[uint64]struct{} // seqs holding a slot
}

func newWindow(inflight int) *window {
	return &window{slots: make(chan struct{}, inflight), pending: make(map[uint64]struct{}, inflight)}
}

// acquire waits for a slot for seq; false if ctx ended first.
func (w *window) acquire(ctx context.Context, seq uint64) bool {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	w.mu.Lock()
	w.pending[seq] = struct{}{}
	w.mu.Unlock()
	return true
}

// release gives seq's slot back; a second release of the same seq does nothing.
func (w *window) release(seq uint64) {
	w.mu.Lock()
	_, held := w.pending[seq]
	delete(w.pending, seq)
	w.mu.Unlock()
	if held {
		<-w.slots
	}
}

// outstanding is how many of this client's messages are sent and not yet delivered back.
func (w *window) outstanding() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}
