package mysql

// OK is a decoded OK packet (or the OK that replaces EOF under CLIENT_DEPRECATE_EOF).
// Byte slices alias the packet they were decoded from.
type OK struct {
	Header       byte // 0x00, or 0xfe when it terminates a result set
	AffectedRows uint64
	LastInsertID uint64
	Status       uint16
	Warnings     uint16
	Info         []byte
	SessionState []byte // raw session-state block, when SESSION_TRACK and SESSION_STATE_CHANGED
}

// IsOK reports whether payload is an OK packet (header 0x00, long enough) at the start of a
// response.
func IsOK(payload []byte) bool { return len(payload) >= 7 && payload[0] == iOK }

// IsERR reports whether payload is an ERR packet.
func IsERR(payload []byte) bool { return len(payload) > 0 && payload[0] == iERR }

// IsEOF reports whether a physical packet of payload length n starting with payload is an EOF
// packet or an OK packet in the place of one (CLIENT_DEPRECATE_EOF): header 0xfe and shorter
// than a full 16 MiB packet, which a row starting with 0xfe (an 8-byte length) would need.
func IsEOF(payload []byte, n int) bool {
	return len(payload) > 0 && payload[0] == iEOF && n < maxPacketPayload
}

// ParseOK decodes an OK packet. caps are the capabilities negotiated on the connection it came
// from: the session-state block exists only with SESSION_TRACK. The info string is
// length-encoded either way: MySQL and MariaDB both write it with net_store_data, and the client
// libraries (libmysqlclient, mysqlnd, Connector/J, PyMySQL) read it so.
func ParseOK(payload []byte, caps uint32) (OK, error) {
	var ok OK
	if len(payload) < 1 {
		return ok, errShort
	}
	ok.Header = payload[0]
	p := payload[1:]
	v, n, _, err := ReadLenEncInt(p)
	if err != nil {
		return ok, err
	}
	ok.AffectedRows, p = v, p[n:]
	if v, n, _, err = ReadLenEncInt(p); err != nil {
		return ok, err
	}
	ok.LastInsertID, p = v, p[n:]
	if len(p) < 4 {
		return ok, errShort
	}
	ok.Status, ok.Warnings, p = getUint16(p), getUint16(p[2:]), p[4:]
	if len(p) == 0 {
		return ok, nil
	}
	if ok.Info, n, err = ReadLenEncString(p); err != nil {
		return ok, err
	}
	p = p[n:]
	if caps&ClientSessionTrack != 0 && ok.Status&StatusSessionStateChange != 0 && len(p) > 0 {
		if ok.SessionState, _, err = ReadLenEncString(p); err != nil {
			return ok, err
		}
	}
	return ok, nil
}

// AppendOK encodes ok for a connection with the given capabilities, as the servers do. Session
// state is written only when the capabilities include SESSION_TRACK; without it the
// SESSION_STATE_CHANGED flag is cleared, since such a client cannot read the block, and the info
// string, length-encoded, only when it is not empty.
func AppendOK(b []byte, ok OK, caps uint32) []byte {
	h := ok.Header
	if h != iEOF {
		h = iOK
	}
	b = append(b, h)
	b = AppendLenEncInt(b, ok.AffectedRows)
	b = AppendLenEncInt(b, ok.LastInsertID)
	status := ok.Status
	if caps&ClientSessionTrack == 0 || len(ok.SessionState) == 0 {
		status &^= StatusSessionStateChange
	}
	b = appendUint16(b, status)
	b = appendUint16(b, ok.Warnings)
	if caps&ClientSessionTrack == 0 {
		if len(ok.Info) > 0 {
			b = AppendLenEncString(b, ok.Info)
		}
		return b
	}
	if len(ok.Info) > 0 || status&StatusSessionStateChange != 0 {
		b = AppendLenEncString(b, ok.Info)
	}
	if status&StatusSessionStateChange != 0 {
		b = AppendLenEncString(b, ok.SessionState)
	}
	return b
}

// AppendOKWithoutSessionState appends to dst the OK packet payload as a server writes it for a
// client without SESSION_TRACK: the server's own bytes up to the end of the info string, with
// the session-state block and the SESSION_STATE_CHANGED flag removed and nothing else touched.
// payload comes from a connection with SESSION_TRACK. An empty info string is left out, as the
// servers leave it out for such a client.
func AppendOKWithoutSessionState(dst, payload []byte) ([]byte, error) {
	if len(payload) < 1 {
		return dst, errShort
	}
	p := payload[1:]
	_, n, _, err := ReadLenEncInt(p)
	if err != nil {
		return dst, err
	}
	p = p[n:]
	if _, n, _, err = ReadLenEncInt(p); err != nil {
		return dst, err
	}
	p = p[n:]
	if len(p) < 4 {
		return dst, errShort
	}
	statusAt := len(payload) - len(p)
	end := statusAt + 4
	if rest := p[4:]; len(rest) > 0 {
		info, n, err := ReadLenEncString(rest)
		if err != nil {
			return dst, err
		}
		if len(info) > 0 {
			end += n
		}
	}
	start := len(dst)
	dst = append(dst, payload[:end]...)
	status := getUint16(dst[start+statusAt:]) &^ StatusSessionStateChange
	dst[start+statusAt], dst[start+statusAt+1] = byte(status), byte(status>>8)
	return dst, nil
}

// AppendOKHidingVars appends to dst the OK packet payload (from a connection with
// SESSION_TRACK, for a client with it) with the system-variable entries of its session-state
// block for which hide returns true taken out, and reports whether it took any: when it took
// none, dst is returned as it was and the caller sends the payload itself. Everything else is
// the server's bytes; a block left empty is written as a server writes an OK without state
// changes (no block, no SESSION_STATE_CHANGED flag, an empty info string left out). hide gets
// names that alias payload. It does not allocate beyond dst's growth.
func AppendOKHidingVars(dst, payload []byte, hide func(name []byte) bool) ([]byte, bool, error) {
	ok, err := ParseOK(payload, ClientSessionTrack)
	if err != nil || ok.Status&StatusSessionStateChange == 0 || len(ok.SessionState) == 0 {
		return dst, false, err
	}
	keep, hidden := 0, false
	for block := ok.SessionState; len(block) > 0; {
		sc, rest, err := NextSessionChange(block)
		if err != nil {
			return dst, false, err
		}
		if sc.Type == SessionTrackSystemVariables && hide(sc.Name) {
			hidden = true
		} else {
			keep += len(block) - len(rest)
		}
		block = rest
	}
	if !hidden {
		return dst, false, nil
	}
	if keep == 0 {
		b, err := AppendOKWithoutSessionState(dst, payload)
		return b, err == nil, err
	}
	// Everything before the block's length (read as ParseOK did) is kept as it is.
	p := payload[1:]
	for range 2 {
		_, n, _, _ := ReadLenEncInt(p)
		p = p[n:]
	}
	_, n, _ := ReadLenEncString(p[4:])
	dst = append(dst, payload[:len(payload)-len(p)+4+n]...)
	dst = AppendLenEncInt(dst, uint64(keep))
	for block := ok.SessionState; len(block) > 0; {
		sc, rest, _ := NextSessionChange(block)
		if !(sc.Type == SessionTrackSystemVariables && hide(sc.Name)) {
			dst = append(dst, block[:len(block)-len(rest)]...)
		}
		block = rest
	}
	return dst, true, nil
}

// EOF is a decoded classic EOF packet.
type EOF struct {
	Warnings uint16
	Status   uint16
}

// ParseEOF decodes a classic 5-byte EOF packet (older servers may send just the header).
func ParseEOF(payload []byte) EOF {
	if len(payload) < 5 {
		return EOF{}
	}
	return EOF{Warnings: getUint16(payload[1:]), Status: getUint16(payload[3:])}
}

// AppendEOF encodes a classic EOF packet.
func AppendEOF(b []byte, warnings, status uint16) []byte {
	b = append(b, iEOF)
	b = appendUint16(b, warnings)
	return appendUint16(b, status)
}

// TerminatorStatus returns the server status of a result-set terminator (classic EOF or an OK
// with the 0xfe header), given the capabilities of the connection it came from.
func TerminatorStatus(payload []byte, caps uint32) (uint16, error) {
	if caps&ClientDeprecateEOF == 0 || len(payload) < 7 {
		if len(payload) < 5 {
			return 0, nil
		}
		return ParseEOF(payload).Status, nil
	}
	ok, err := ParseOK(payload, caps)
	return ok.Status, err
}

// ParseERR decodes an ERR packet (PROTOCOL_41 layout, with or without the SQLSTATE marker).
func ParseERR(payload []byte) *SQLError {
	if len(payload) < 3 || payload[0] != iERR {
		return NewError(ErrUnknown, "HY000", "malformed error packet")
	}
	e := &SQLError{Code: getUint16(payload[1:]), State: "HY000"}
	p := payload[3:]
	if len(p) >= 6 && p[0] == '#' {
		e.State = string(p[1:6])
		p = p[6:]
	}
	e.Message = string(p)
	return e
}

// AppendERR encodes an ERR packet in the PROTOCOL_41 layout. An error with a client-side code
// (IsClientCode) or 0xffff (the header of MariaDB's progress-report packet, which libmariadb
// reads as one) is written as ER_UNKNOWN_ERROR (1105), its SQLSTATE and message kept: with
// those codes a client would not show the message (libmariadb reports 2027 or drops it).
func AppendERR(b []byte, e *SQLError) []byte {
	code := e.Code
	if IsClientCode(code) || code == 0xffff {
		code = ErrUnknown
	}
	b = append(b, iERR)
	b = appendUint16(b, code)
	state := e.State
	if len(state) != 5 {
		state = "HY000"
	}
	b = append(b, '#')
	b = append(b, state...)
	return append(b, e.Message...)
}

// SessionChange is one entry of a session-state block. Fields alias the block.
type SessionChange struct {
	Type  byte
	Name  []byte // system variable name (SYSTEM_VARIABLES)
	Value []byte // variable value, schema name, GTID text, or the raw data for other types
}

// NextSessionChange decodes the first entry of a session-state block and returns the rest.
func NextSessionChange(block []byte) (SessionChange, []byte, error) {
	var sc SessionChange
	if len(block) < 1 {
		return sc, nil, errShort
	}
	sc.Type = block[0]
	data, n, err := ReadLenEncString(block[1:])
	if err != nil {
		return sc, nil, err
	}
	rest := block[1+n:]
	switch sc.Type {
	case SessionTrackSystemVariables:
		name, k, err := ReadLenEncString(data)
		if err != nil {
			return sc, nil, err
		}
		val, _, err := ReadLenEncString(data[k:])
		if err != nil {
			return sc, nil, err
		}
		sc.Name, sc.Value = name, val
	case SessionTrackSchema:
		v, _, err := ReadLenEncString(data)
		if err != nil {
			return sc, nil, err
		}
		sc.Value = v
	case SessionTrackGTIDs:
		// One byte of encoding specification, then the GTID text.
		if len(data) < 1 {
			return sc, nil, errShort
		}
		v, _, err := ReadLenEncString(data[1:])
		if err != nil {
			return sc, nil, err
		}
		sc.Value = v
	default:
		sc.Value = data
	}
	return sc, rest, nil
}
