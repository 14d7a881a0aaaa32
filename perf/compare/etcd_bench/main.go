// etcd_bench is the etcd client of perf/compare (README.md "The client contract"): it puts
// messages into a 3-member etcd cluster and records their deliveries through a watch.
//
//	etcd_bench --node K --rate R --size B --start-at NS --duration S --drain S [--drain-max S]
//	           --records FILE.csv --summary FILE.json [--events FILE.csv] [--inflight N]
//	           --endpoints host:port,... [--prefix /bench/]
//
// A message is a Put of key PREFIX<node>/<seq> whose value is the contract's message; a delivery
// is that Put's event on a Watch of PREFIX that every client opens before --start-at. A watch
// delivers the events in revision order, and the revision is etcd's total order. Events: the
// leader, polled from the members every 10 ms. Exit 0 after the drain or a SIGTERM/SIGINT, 1 if
// the cluster was lost (the files are written all the same, with "error" set), 2 for bad options.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

const (
	// Connecting, learning the members and the leader, opening the watch: at most this long, and
	// never less than until shortly after --start-at.
	setupTimeout      = 20 * time.Second
	setupAfterStartAt = 5 * time.Second
	dialTimeout       = 5 * time.Second
	keepAliveTime     = 10 * time.Second // etcd refuses pings more often than every 5 s
	keepAliveTimeout  = 3 * time.Second
	lostCheckInterval = 100 * time.Millisecond
	// After SIGTERM or a lost cluster, the puts already issued get this long to be acknowledged.
	putsGraceOnStop = 1 * time.Second
)

func main() {
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd_bench: %v\n(etcd_bench -h lists the options)\n", err)
		os.Exit(2)
	}
	os.Exit(run(&opts))
}

// run does the whole benchmark and writes the files; its result is the exit status.
func run(opts *options) int {
	signalled, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopSignals()
	b := &bench{opts: opts}
	err := b.run(signalled)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd_bench node %d: %v\n", opts.node, err)
	}
	if werr := b.writeFiles(err); werr != nil {
		fmt.Fprintf(os.Stderr, "etcd_bench node %d: writing the files: %v\n", opts.node, werr)
		return 1
	}
	fmt.Fprintf(os.Stderr, "etcd_bench node %d: sent %d, send errors %d, retries %d, delivered %d\n",
		opts.node, b.sender.sent.Load(), b.sender.sendErrors.Load(), b.sender.retries.Load(), len(b.receiver.records))
	if err != nil {
		return 1
	}
	return 0
}

type bench struct {
	opts     *options
	cli      *clientv3.Client
	window   *window
	sender   *sender
	receiver *receiver
	poller   *leaderPoller
}

// run: set up before --start-at, send for --duration, drain. An error is a cluster lost (or
// never reached); a signal ends it early without one.
func (b *bench) run(signalled context.Context) error {
	b.window = newWindow(b.opts.inflight)
	b.sender = &sender{opts: b.opts, window: b.window}
	b.receiver = newReceiver(nil, b.opts, b.window)
	if err := b.setUp(signalled); err != nil {
		if signalled.Err() != nil {
			return nil
		}
		return err
	}
	defer b.cli.Close()
	defer b.poller.close()

	running, lose := context.WithCancelCause(signalled)
	defer lose(nil)
	puts, endPuts := context.WithCancel(context.Background())
	defer endPuts()
	defer b.receiver.stop()
	polling, endPoll := context.WithCancel(context.Background())
	defer endPoll()

	var background sync.WaitGroup
	background.Add(3)
	go func() {
		defer background.Done()
		if err := b.receiver.run(); err != nil {
			lose(err)
		}
	}()
	go func() {
		defer background.Done()
		b.poller.run(polling)
	}()
	go func() {
		defer background.Done()
		b.watchForLoss(running, lose)
	}()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	endNs := b.opts.startAtNs + b.opts.duration.Nanoseconds()
	if sleepUntil(running, timer, b.opts.startAtNs) {
		// A full window at the end of the sending does not hold the sender past it.
		sending, endSending := context.WithDeadline(running, time.Unix(0, endNs))
		b.sender.run(sending, puts, endNs)
		endSending()
	}
	b.drain(running, time.Now().UnixNano())
	if running.Err() != nil {
		waitTimeout(&b.sender.puts, putsGraceOnStop)
	}
	endPuts()
	b.sender.puts.Wait()
	b.receiver.stop()
	endPoll()
	failure := context.Cause(running)
	lose(nil) // ends watchForLoss
	background.Wait()
	if failure != nil && !errors.Is(failure, context.Canceled) {
		return failure
	}
	return nil
}

// setUp connects, learns the members and the leader, and opens the watch.
func (b *bench) setUp(signalled context.Context) error {
	deadline := time.Now().Add(setupTimeout)
	if startAt := time.Unix(0, b.opts.startAtNs).Add(setupAfterStartAt); startAt.After(deadline) {
		deadline = startAt
	}
	ctx, cancel := context.WithDeadline(signalled, deadline)
	defer cancel()
	logConfig := zap.NewProductionConfig()
	logConfig.Level = zap.NewAtomicLevelAt(zap.ErrorLevel) // not a warning per put retried
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            b.opts.endpoints,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		LogConfig:            &logConfig,
		DialOptions: []grpc.DialOption{
			grpc.WithDisableServiceConfig(),
			grpc.WithDefaultServiceConfig(`{"loadBalancingPolicy": "pick_first"}`),
		},
	})
	if err != nil {
		return fmt.Errorf("connecting to %v: %w", b.opts.endpoints, err)
	}
	b.cli = cli
	b.sender.cli = cli
	b.receiver.cli = cli
	if b.poller, err = newLeaderPoller(cli, b.opts.endpoints); err != nil {
		cli.Close()
		return err
	}
	err = retryUntil(ctx, b.poller.learnMembers)
	if err == nil {
		err = b.poller.first(ctx)
	}
	if err == nil {
		err = retryUntil(ctx, b.receiver.establish)
	}
	if err != nil {
		b.receiver.stop()
		b.poller.close()
		cli.Close()
		return fmt.Errorf("setting up: %w", err)
	}
	fmt.Fprintf(os.Stderr, "etcd_bench node %d: watching %s from revision %d, leader %s\n",
		b.opts.node, b.opts.prefix, b.receiver.nextRev, b.poller.events[0].detail)
	return nil
}

// drain receives only, from sendEndNs until --drain passes without a delivery (not before
// sendEndNs + --drain) and with none of this client's own messages outstanding (etcd may commit
// them later than a quiet period), or --drain-max after sendEndNs at the latest, or until ctx ends.
func (b *bench) drain(ctx context.Context, sendEndNs int64) {
	const check = 10 * time.Millisecond
	hardEndNs := sendEndNs + b.opts.drainMax.Nanoseconds()
	ticker := time.NewTicker(check)
	defer ticker.Stop()
	for {
		nowNs := time.Now().UnixNano()
		quietEndNs := max(sendEndNs, b.receiver.lastDeliveryNs.Load()) + b.opts.drain.Nanoseconds()
		if nowNs >= hardEndNs || (nowNs >= quietEndNs && b.window.outstanding() == 0) {
			return
		}
		select {
		case <-ticker.C:
		case <-ctx.Done():
			return
		}
	}
}

// watchForLoss ends the run when no member has named a leader for clusterLostAfter.
func (b *bench) watchForLoss(ctx context.Context, lose context.CancelCauseFunc) {
	ticker := time.NewTicker(lostCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if lost := time.Duration(b.poller.lostForNs()); lost > clusterLostAfter {
				lose(fmt.Errorf("the cluster is lost: no member named a leader for %v", lost.Round(time.Millisecond)))
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func (b *bench) writeFiles(failure error) error {
	s := summary{
		Node:        b.opts.node,
		Clock:       "realtime",
		Sent:        b.sender.sent.Load(),
		SendErrors:  b.sender.sendErrors.Load(),
		Retries:     b.sender.retries.Load(),
		Delivered:   int64(len(b.receiver.records)),
		FirstSendNs: b.sender.firstSendNs,
		LastSendNs:  b.sender.lastSendNs,
	}
	if failure != nil {
		text := failure.Error()
		s.Error = &text
	}
	var events []event
	if b.poller != nil {
		events = b.poller.events
	}
	for _, path := range []string{b.opts.recordsPath, b.opts.summaryPath, b.opts.eventsPath} {
		if path != "" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
		}
	}
	if err := writeRecords(b.opts.recordsPath, b.receiver.records); err != nil {
		return err
	}
	if b.opts.eventsPath != "" {
		if err := writeEvents(b.opts.eventsPath, events); err != nil {
			return err
		}
	}
	return writeSummary(b.opts.summaryPath, s)
}

// retryUntil calls f until it succeeds or ctx ends (the cluster may still be electing).
func retryUntil(ctx context.Context, f func(context.Context) error) error {
	const pause = 100 * time.Millisecond
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, dialTimeout)
		err := f(attemptCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return fmt.Errorf("%w (%v)", err, ctx.Err())
		}
	}
}

// waitTimeout waits for wg, at most d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}
