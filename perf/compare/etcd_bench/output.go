package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
)

// summary is the contract's summary JSON.
type summary struct {
	Node        uint32  `json:"node"`
	Clock       string  `json:"clock"`
	Sent        int64   `json:"sent"`
	SendErrors  int64   `json:"send_errors"`
	Retries     int64   `json:"retries"`
	Delivered   int64   `json:"delivered"`
	FirstSendNs int64   `json:"first_send_ns"`
	LastSendNs  int64   `json:"last_send_ns"`
	Error       *string `json:"error"`
}

func writeRecords(path string, records []record) error {
	return writeFile(path, func(w *bufio.Writer) {
		w.WriteString("sender,seq,send_ns,recv_ns\n")
		line := make([]byte, 0, 80)
		for _, r := range records {
			line = strconv.AppendUint(line[:0], uint64(r.sender), 10)
			line = append(line, ',')
			line = strconv.AppendUint(line, r.seq, 10)
			line = append(line, ',')
			line = strconv.AppendInt(line, r.sendNs, 10)
			line = append(line, ',')
			line = strconv.AppendInt(line, r.recvNs, 10)
			line = append(line, '\n')
			w.Write(line)
		}
	})
}

func writeEvents(path string, events []event) error {
	return writeFile(path, func(w *bufio.Writer) {
		w.WriteString("at_ns,kind,detail\n")
		for _, e := range events {
			w.WriteString(strconv.FormatInt(e.atNs, 10) + "," + e.kind + "," + e.detail + "\n")
		}
	})
}

func writeSummary(path string, s summary) error {
	text, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeFile(path, func(w *bufio.Writer) {
		w.Write(text)
		w.WriteByte('\n')
	})
}

// writeFile writes through a temporary file renamed into place: a reader never sees half a file.
func writeFile(path string, fill func(*bufio.Writer)) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fill(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
