package main

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// The contract's message (perf/compare/README.md "The client contract"), little-endian:
//
//	offset  size  field
//	     0     4  node     the sender's node number
//	     4     4  magic    0x434d5042 ("BPMC")
//	     8     8  seq      0, 1, .. per sender
//	    16     8  send_ns  CLOCK_REALTIME when the put was issued
//	    24     -  zero padding up to --size
//
// In etcd a message is the value of key PREFIX<node>/<seq>.
const (
	messageMagic       uint32 = 0x434d5042
	messageHeaderBytes        = 24
	// Sequence numbers beyond this are not ours: the delivered-set bitmap stays bounded.
	seqMax = 1 << 28
)

type message struct {
	node   uint32
	seq    uint64
	sendNs int64
}

// encodeMessage writes m into buf (len(buf) = --size, the padding already zero).
func encodeMessage(buf []byte, m message) {
	binary.LittleEndian.PutUint32(buf[0:4], m.node)
	binary.LittleEndian.PutUint32(buf[4:8], messageMagic)
	binary.LittleEndian.PutUint64(buf[8:16], m.seq)
	binary.LittleEndian.PutUint64(buf[16:24], uint64(m.sendNs))
}

// decodeMessage reads a value; ok is false for anything that is not one of ours.
func decodeMessage(b []byte) (m message, ok bool) {
	if len(b) < messageHeaderBytes || binary.LittleEndian.Uint32(b[4:8]) != messageMagic {
		return message{}, false
	}
	m = message{
		node:   binary.LittleEndian.Uint32(b[0:4]),
		seq:    binary.LittleEndian.Uint64(b[8:16]),
		sendNs: int64(binary.LittleEndian.Uint64(b[16:24])),
	}
	return m, m.seq < seqMax
}

func messageKey(prefix string, node uint32, seq uint64) string {
	return prefix + strconv.FormatUint(uint64(node), 10) + "/" + strconv.FormatUint(seq, 10)
}

// keyMatches tells whether key is the key messageKey gives for m: a value under a foreign key is
// not a delivery.
func keyMatches(prefix string, key []byte, m message) bool {
	rest, found := strings.CutPrefix(string(key), prefix)
	if !found {
		return false
	}
	nodeText, seqText, found := strings.Cut(rest, "/")
	if !found {
		return false
	}
	node, err1 := strconv.ParseUint(nodeText, 10, 32)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	return err1 == nil && err2 == nil && uint32(node) == m.node && seq == m.seq
}
