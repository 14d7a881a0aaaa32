package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

const (
	// Records reserved at start so that growing the slice does not copy megabytes mid-run.
	recordsReservedMax = 1 << 22
	// The topology's clients (perf/compare/README.md "Topology"), for the reservation only.
	expectedSenders = 4
	// A watch that etcd ended (not compacted) is opened again from the next revision after this.
	watchReopenPause = 100 * time.Millisecond
)

type record struct {
	sender uint32
	seq    uint64
	sendNs int64
	recvNs int64
}

// receiver is the delivery side: one watch of the prefix, opened at a known revision before
// --start-at. etcd sends a watch's events in revision order, its total order, so the records
// are in the order etcd committed the puts. The records stay in memory until the end.
type receiver struct {
	cli    *clientv3.Client
	opts   *options
	window *window

	life     context.Context // ends at stop
	end      context.CancelFunc
	watch    clientv3.WatchChan
	endWatch context.CancelFunc
	nextRev  int64 // the revision the watch resumes from if etcd ends it

	records        []record
	delivered      map[uint32][]uint64 // per sender, a bitmap of the seqs delivered
	lastDeliveryNs atomic.Int64        // recv_ns of the last record
}

func newReceiver(cli *clientv3.Client, opts *options, w *window) *receiver {
	reserved := recordsReservedMax / 4
	if opts.rate > 0 {
		reserved = min(recordsReservedMax, int(opts.rate*opts.duration.Seconds()*expectedSenders*1.1)+1024)
	}
	life, end := context.WithCancel(context.Background())
	return &receiver{cli: cli, opts: opts, window: w, life: life, end: end,
		records: make([]record, 0, reserved), delivered: make(map[uint32][]uint64)}
}

// establish opens the watch at the revision after the store's current one and returns once etcd
// has confirmed it (the created notification): every put made after this call is delivered.
func (r *receiver) establish(ctx context.Context) error {
	resp, err := r.cli.Get(ctx, r.opts.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("reading the store's revision: %w", err)
	}
	r.nextRev = resp.Header.Revision + 1
	return r.open(ctx)
}

// open opens the watch at nextRev and waits, at most until waitCtx ends, for etcd to confirm it.
// WithRequireLeader: a member that loses its leader ends the watch instead of staying silent,
// and run opens it again (on any member) from the next revision.
func (r *receiver) open(waitCtx context.Context) error {
	if r.endWatch != nil {
		r.endWatch()
	}
	watchCtx, endWatch := context.WithCancel(clientv3.WithRequireLeader(r.life))
	r.endWatch = endWatch
	r.watch = r.cli.Watch(watchCtx, r.opts.prefix, clientv3.WithPrefix(),
		clientv3.WithRev(r.nextRev), clientv3.WithCreatedNotify())
	select {
	case created, ok := <-r.watch:
		if !ok {
			return fmt.Errorf("the watch of %s closed before etcd confirmed it", r.opts.prefix)
		}
		if err := created.Err(); err != nil || !created.Created {
			return fmt.Errorf("the watch of %s was not created: %v", r.opts.prefix, err)
		}
		return nil
	case <-waitCtx.Done():
		return fmt.Errorf("the watch of %s was not confirmed: %w", r.opts.prefix, waitCtx.Err())
	}
}

// stop ends the watch; run returns.
func (r *receiver) stop() {
	r.end()
}

// run records deliveries until stop; an error means messages may have been missed.
func (r *receiver) run() error {
	ctx := r.life
	for {
		for resp := range r.watch {
			recvNs := time.Now().UnixNano()
			if resp.CompactRevision != 0 {
				return fmt.Errorf("the watch fell behind a compaction at revision %d: messages lost", resp.CompactRevision)
			}
			for _, ev := range resp.Events {
				// Not the header's revision: a watch catching up gets its events in batches
				// that can end below it.
				r.nextRev = max(r.nextRev, ev.Kv.ModRevision+1)
				r.deliver(ev, recvNs)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		// etcd ended the watch (its member lost the leader, or went away): open it again.
		if err := r.reopen(ctx); err != nil {
			return err
		}
	}
}

// reopen opens the watch again from nextRev, trying for up to clusterLostAfter.
func (r *receiver) reopen(ctx context.Context) error {
	giveUp := time.Now().Add(clusterLostAfter)
	for {
		select {
		case <-time.After(watchReopenPause):
		case <-ctx.Done():
			return nil
		}
		openCtx, cancel := context.WithTimeout(ctx, putAttemptTimeout)
		err := r.open(openCtx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("the watch could not be opened again for %v: %w", clusterLostAfter, err)
		}
	}
}

// deliver records one event if it is the first delivery of one of the contract's messages.
func (r *receiver) deliver(ev *clientv3.Event, recvNs int64) {
	if ev.Type != mvccpb.PUT {
		return
	}
	m, ok := decodeMessage(ev.Kv.Value)
	if !ok || !keyMatches(r.opts.prefix, ev.Kv.Key, m) {
		return
	}
	bits := r.delivered[m.node]
	word, bit := m.seq/64, m.seq%64
	if word >= uint64(len(bits)) {
		bits = append(bits, make([]uint64, int(word)+1-len(bits))...)
		r.delivered[m.node] = bits
	}
	if bits[word]&(1<<bit) != 0 {
		return // a second copy: a put tried again after an attempt that did commit
	}
	bits[word] |= 1 << bit
	r.records = append(r.records, record{sender: m.node, seq: m.seq, sendNs: m.sendNs, recvNs: recvNs})
	r.lastDeliveryNs.Store(recvNs)
	if m.node == r.opts.node {
		r.window.release(m.seq)
	}
}
