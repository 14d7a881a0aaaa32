package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	// A put that waits longer has most likely been lost with a dead leader (etcd's own request
	// timeout is 7 s with the default election timeout): try again, the receiver drops a second
	// copy.
	putAttemptTimeout = 2 * time.Second
	// Attempts per message, and the pause between them (doubled each time, up to the cap).
	putAttemptsMax  = 6
	putBackoffFirst = 50 * time.Millisecond
	putBackoffMax   = 800 * time.Millisecond
)

// sender issues the puts: open loop at --rate from --start-at (a late put does not delay the
// next instant), each put in a goroutine of its own so that a slow round trip does not slow the
// pace, at most --inflight outstanding (window).
type sender struct {
	cli    *clientv3.Client
	opts   *options
	window *window

	sent       atomic.Int64 // puts acknowledged
	sendErrors atomic.Int64 // puts failed for good (after retries, or cut short at the end)
	retries    atomic.Int64 // attempts repeated after a transient failure
	puts       sync.WaitGroup

	// Written by run only, read after it returned.
	issued      uint64
	firstSendNs int64
	lastSendNs  int64
}

// run paces the puts until endNs (CLOCK_REALTIME) or until ctx ends; the puts themselves live on
// putCtx, which the caller ends after the drain.
func (s *sender) run(ctx, putCtx context.Context, endNs int64) {
	interval := 0.0
	if s.opts.rate > 0 {
		interval = float64(time.Second) / s.opts.rate
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for seq := uint64(0); ; seq++ {
		if interval > 0 {
			dueNs := s.opts.startAtNs + int64(float64(seq)*interval)
			if dueNs >= endNs || !sleepUntil(ctx, timer, dueNs) {
				return
			}
		}
		if !s.window.acquire(ctx, seq) {
			return
		}
		nowNs := time.Now().UnixNano()
		if nowNs >= endNs {
			s.window.release(seq)
			return
		}
		value := make([]byte, s.opts.sizeBytes)
		encodeMessage(value, message{node: s.opts.node, seq: seq, sendNs: nowNs})
		if s.issued == 0 {
			s.firstSendNs = nowNs
		}
		s.lastSendNs = nowNs
		s.issued++
		s.puts.Add(1)
		go s.put(putCtx, messageKey(s.opts.prefix, s.opts.node, seq), value, seq)
	}
}

// put writes one message, trying again after a transient failure.
func (s *sender) put(ctx context.Context, key string, value []byte, seq uint64) {
	defer s.puts.Done()
	backoff := putBackoffFirst
	for attempt := 1; ; attempt++ {
		attemptCtx, cancel := context.WithTimeout(ctx, putAttemptTimeout)
		_, err := s.cli.Put(attemptCtx, key, string(value))
		cancel()
		if err == nil {
			s.sent.Add(1)
			return
		}
		if ctx.Err() != nil || attempt >= putAttemptsMax || !transient(err) {
			s.sendErrors.Add(1)
			s.window.release(seq)
			return
		}
		s.retries.Add(1)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, putBackoffMax)
	}
}

// transient: a failure that another attempt may not meet (a leader change, a member gone, a
// timeout). A refused request (too large, no space, no permission) fails every attempt.
func transient(err error) bool {
	if errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return false
	}
	code := status.Code(err)
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		code = etcdErr.Code()
	}
	switch code {
	case codes.InvalidArgument, codes.PermissionDenied, codes.Unauthenticated, codes.Unimplemented,
		codes.OutOfRange, codes.FailedPrecondition:
		return false
	}
	return true
}

// sleepUntil waits for CLOCK_REALTIME atNs; false if ctx ended first.
func sleepUntil(ctx context.Context, timer *time.Timer, atNs int64) bool {
	d := time.Duration(atNs - time.Now().UnixNano())
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
