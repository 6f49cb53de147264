package mysql

// CopyN relays the next n bytes of the read stream to dst as they are: part of a packet whose
// header the caller wrote itself (when it rewrites a field at the start of a packet and streams
// the rest). It does not touch sequence ids.
func (c *Conn) CopyN(dst *Conn, n int) error {
	size := c.br.Size()
	for n > 0 {
		chunk := min(n, size)
		if b := c.br.Buffered(); b > 0 && b < chunk {
			chunk = b
		}
		b, err := c.br.Peek(chunk)
		if err != nil {
			return unexpectedEOF(err)
		}
		if _, err := dst.bw.Write(b); err != nil {
			return &WriteError{err}
		}
		if _, err := c.br.Discard(chunk); err != nil {
			return unexpectedEOF(err)
		}
		n -= chunk
	}
	return nil
}
