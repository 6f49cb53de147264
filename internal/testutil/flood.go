package testutil

import "io"

// FloodPackets writes to w what a hostile node sends to make its peer buffer without end: full
// 16 MiB protocol packets (sequence ids seq, seq+1, …, each announcing 0xffffff bytes, so a
// continuation always follows), of zeros, until total bytes of payload are written or a write
// fails. It returns how many payload bytes were written: a peer that bounds what it reads stops
// reading long before total, and the writes then block or fail.
func FloodPackets(w io.Writer, seq byte, total int) int {
	chunk := make([]byte, 1<<20)
	written := 0
	for ; written < total; seq++ {
		if _, err := w.Write([]byte{0xff, 0xff, 0xff, seq}); err != nil {
			return written
		}
		for left := 1<<24 - 1; left > 0 && written < total; {
			n, err := w.Write(chunk[:min(left, len(chunk))])
			written += n
			left -= n
			if err != nil {
				return written
			}
		}
	}
	return written
}
