package mysql

import (
	"errors"
)

// Handshake is the server's initial HandshakeV10 packet.
type Handshake struct {
	ServerVersion string
	ConnectionID  uint32
	Nonce         []byte // auth plugin data, 20 bytes for the usual plugins (no trailing NUL)
	Capabilities  uint32
	Charset       uint8
	Status        uint16
	AuthPlugin    string
	// MariaDBCapabilities are the extended capabilities a MariaDB server sends in the last four
	// reserved bytes when it clears CLIENT_MYSQL (bit 0 of Capabilities).
	MariaDBCapabilities uint32
}

// ParseHandshake decodes a HandshakeV10 packet.
func ParseHandshake(p []byte) (*Handshake, error) {
	if len(p) < 1 {
		return nil, errShort
	}
	if p[0] == iERR {
		return nil, ParseERR(p)
	}
	if p[0] != 10 {
		return nil, errors.New("mysql: unsupported protocol version in server handshake")
	}
	h := &Handshake{}
	ver, n, err := readNulString(p[1:])
	if err != nil {
		return nil, err
	}
	h.ServerVersion = string(ver)
	p = p[1+n:]
	if len(p) < 4+8+1+2 {
		return nil, errShort
	}
	h.ConnectionID = getUint32(p)
	nonce := make([]byte, 0, 20)
	nonce = append(nonce, p[4:12]...)
	h.Capabilities = uint32(getUint16(p[13:]))
	p = p[15:]
	authLen := 0
	if len(p) >= 1+2+2+1+10 {
		h.Charset = p[0]
		h.Status = getUint16(p[1:])
		h.Capabilities |= uint32(getUint16(p[3:])) << 16
		authLen = int(p[5])
		if h.Capabilities&ClientLongPassword == 0 {
			h.MariaDBCapabilities = getUint32(p[12:])
		}
		p = p[16:]
	} else {
		p = nil
	}
	if h.Capabilities&ClientSecureConnection != 0 && len(p) > 0 {
		n := authLen - 8
		if n < 13 {
			n = 13
		}
		if n > len(p) {
			n = len(p)
		}
		part := p[:n]
		// The second part is NUL-terminated (12 bytes + NUL for a 20-byte nonce).
		if len(part) > 0 && part[len(part)-1] == 0 {
			part = part[:len(part)-1]
		}
		nonce = append(nonce, part...)
		p = p[n:]
	}
	h.Nonce = nonce
	if h.Capabilities&ClientPluginAuth != 0 && len(p) > 0 {
		name, _, err := readNulString(p)
		if err != nil {
			name = p // some servers omit the final NUL
		}
		h.AuthPlugin = string(name)
	}
	if h.AuthPlugin == "" {
		h.AuthPlugin = AuthNativePassword
	}
	return h, nil
}

// AppendHandshake encodes h as a HandshakeV10 packet. Nonce must be 20 bytes.
func AppendHandshake(b []byte, h *Handshake) []byte {
	b = append(b, 10)
	b = append(b, h.ServerVersion...)
	b = append(b, 0)
	b = appendUint32(b, h.ConnectionID)
	b = append(b, h.Nonce[:8]...)
	b = append(b, 0)
	b = appendUint16(b, uint16(h.Capabilities))
	b = append(b, h.Charset)
	b = appendUint16(b, h.Status)
	b = appendUint16(b, uint16(h.Capabilities>>16))
	if h.Capabilities&ClientPluginAuth != 0 {
		b = append(b, byte(len(h.Nonce)+1))
	} else {
		b = append(b, 0)
	}
	b = append(b, make([]byte, 6)...)
	if h.Capabilities&ClientLongPassword == 0 {
		b = appendUint32(b, h.MariaDBCapabilities)
	} else {
		b = append(b, 0, 0, 0, 0)
	}
	if h.Capabilities&ClientSecureConnection != 0 {
		b = append(b, h.Nonce[8:]...)
		b = append(b, 0)
	}
	if h.Capabilities&ClientPluginAuth != 0 {
		b = append(b, h.AuthPlugin...)
		b = append(b, 0)
	}
	return b
}

// HandshakeResponse is the client's HandshakeResponse41 (or the SSL request, its prefix).
type HandshakeResponse struct {
	Capabilities  uint32
	MaxPacketSize uint32
	Charset       uint8
	User          string
	AuthResponse  []byte
	Database      string
	AuthPlugin    string
	// Attrs is the raw connection-attributes block (length-encoded key/value pairs, without the
	// total length prefix), relayed as it came.
	Attrs []byte
	// SSLRequest is set when the packet was only the 32-byte SSL request.
	SSLRequest bool
	// MariaDBCapabilities are extended capabilities a MariaDB client sent in the filler.
	MariaDBCapabilities uint32
}

// ParseHandshakeResponse decodes a HandshakeResponse41. Byte slices are copied, so the result
// outlives the packet buffer.
func ParseHandshakeResponse(p []byte) (*HandshakeResponse, error) {
	if len(p) < 4 {
		return nil, errShort
	}
	r := &HandshakeResponse{Capabilities: getUint32(p)}
	if r.Capabilities&ClientProtocol41 == 0 {
		return nil, errors.New("mysql: client does not support protocol 4.1")
	}
	if len(p) < 32 {
		return nil, errShort
	}
	r.MaxPacketSize = getUint32(p[4:])
	r.Charset = p[8]
	if r.Capabilities&ClientLongPassword == 0 {
		r.MariaDBCapabilities = getUint32(p[28:])
	}
	if len(p) == 32 {
		if r.Capabilities&ClientSSL != 0 {
			r.SSLRequest = true
			return r, nil
		}
		return nil, errShort
	}
	p = p[32:]
	user, n, err := readNulString(p)
	if err != nil {
		return nil, err
	}
	r.User = string(user)
	p = p[n:]
	switch {
	case r.Capabilities&ClientPluginAuthLenencClientData != 0:
		auth, n, err := ReadLenEncString(p)
		if err != nil {
			return nil, err
		}
		r.AuthResponse, p = append([]byte(nil), auth...), p[n:]
	case r.Capabilities&ClientSecureConnection != 0:
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return nil, errShort
		}
		r.AuthResponse, p = append([]byte(nil), p[1:1+int(p[0])]...), p[1+int(p[0]):]
	default:
		auth, n, err := readNulString(p)
		if err != nil {
			return nil, err
		}
		r.AuthResponse, p = append([]byte(nil), auth...), p[n:]
	}
	if r.Capabilities&ClientConnectWithDB != 0 && len(p) > 0 {
		db, n, err := readNulString(p)
		if err != nil {
			return nil, err
		}
		r.Database, p = string(db), p[n:]
	}
	if r.Capabilities&ClientPluginAuth != 0 && len(p) > 0 {
		name, n, err := readNulString(p)
		if err != nil {
			name, n = p, len(p) // tolerate a missing final NUL
		}
		r.AuthPlugin, p = string(name), p[n:]
	}
	if r.Capabilities&ClientConnectAttrs != 0 && len(p) > 0 {
		attrs, _, err := ReadLenEncString(p)
		if err != nil {
			return nil, err
		}
		// Validate the pairs so a malformed block is refused here, not by the backend.
		for rest := attrs; len(rest) > 0; {
			_, k, err := ReadLenEncString(rest)
			if err != nil {
				return nil, err
			}
			rest = rest[k:]
			_, k, err = ReadLenEncString(rest)
			if err != nil {
				return nil, err
			}
			rest = rest[k:]
		}
		r.Attrs = append([]byte(nil), attrs...)
	}
	return r, nil
}

// AppendHandshakeResponse encodes r as a HandshakeResponse41.
func AppendHandshakeResponse(b []byte, r *HandshakeResponse) []byte {
	b = appendUint32(b, r.Capabilities)
	b = appendUint32(b, r.MaxPacketSize)
	b = append(b, r.Charset)
	b = append(b, make([]byte, 19)...)
	if r.Capabilities&ClientLongPassword == 0 {
		b = appendUint32(b, r.MariaDBCapabilities)
	} else {
		b = append(b, 0, 0, 0, 0)
	}
	if r.SSLRequest {
		return b
	}
	b = append(b, r.User...)
	b = append(b, 0)
	switch {
	case r.Capabilities&ClientPluginAuthLenencClientData != 0:
		b = AppendLenEncString(b, r.AuthResponse)
	case r.Capabilities&ClientSecureConnection != 0:
		b = append(b, byte(len(r.AuthResponse)))
		b = append(b, r.AuthResponse...)
	default:
		b = append(b, r.AuthResponse...)
		b = append(b, 0)
	}
	if r.Capabilities&ClientConnectWithDB != 0 {
		b = append(b, r.Database...)
		b = append(b, 0)
	}
	if r.Capabilities&ClientPluginAuth != 0 {
		b = append(b, r.AuthPlugin...)
		b = append(b, 0)
	}
	if r.Capabilities&ClientConnectAttrs != 0 {
		b = AppendLenEncString(b, r.Attrs)
	}
	return b
}

// AppendAuthSwitchRequest encodes an auth-switch request to plugin with a fresh nonce.
func AppendAuthSwitchRequest(b []byte, plugin string, nonce []byte) []byte {
	b = append(b, authSwitchHeader)
	b = append(b, plugin...)
	b = append(b, 0)
	b = append(b, nonce...)
	return append(b, 0)
}

// ParseAuthSwitchRequest decodes an auth-switch request (header 0xfe).
func ParseAuthSwitchRequest(p []byte) (plugin string, nonce []byte, err error) {
	if len(p) < 1 || p[0] != authSwitchHeader {
		return "", nil, errors.New("mysql: not an auth switch request")
	}
	name, n, err := readNulString(p[1:])
	if err != nil {
		return string(p[1:]), nil, nil
	}
	data := p[1+n:]
	if len(data) > 0 && data[len(data)-1] == 0 {
		data = data[:len(data)-1]
	}
	return string(name), append([]byte(nil), data...), nil
}

// AppendAuthMoreData encodes an AuthMoreData packet (0x01 + data).
func AppendAuthMoreData(b []byte, data ...byte) []byte {
	b = append(b, authMoreDataHeader)
	return append(b, data...)
}

// AttrsSet appends one key/value pair to a raw connection-attributes block.
func AttrsSet(attrs []byte, key, value string) []byte {
	attrs = AppendLenEncString(attrs, []byte(key))
	return AppendLenEncString(attrs, []byte(value))
}
