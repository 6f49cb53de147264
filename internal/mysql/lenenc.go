package mysql

import "errors"

// errShort is returned by the decoders when a packet ends early.
var errShort = errors.New("mysql: malformed packet: too short")

// ReadLenEncInt decodes a length-encoded integer at the start of b and returns it with the
// number of bytes it took. null reports the 0xfb NULL marker.
func ReadLenEncInt(b []byte) (v uint64, n int, null bool, err error) {
	if len(b) == 0 {
		return 0, 0, false, errShort
	}
	switch b[0] {
	case 0xfb:
		return 0, 1, true, nil
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, false, errShort
		}
		return uint64(b[1]) | uint64(b[2])<<8, 3, false, nil
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, false, errShort
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, false, nil
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, false, errShort
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16 | uint64(b[4])<<24 |
			uint64(b[5])<<32 | uint64(b[6])<<40 | uint64(b[7])<<48 | uint64(b[8])<<56, 9, false, nil
	case 0xff:
		return 0, 0, false, errors.New("mysql: malformed packet: invalid length-encoded integer")
	default:
		return uint64(b[0]), 1, false, nil
	}
}

// ReadLenEncString decodes a length-encoded string at the start of b; the result aliases b.
func ReadLenEncString(b []byte) (s []byte, n int, err error) {
	v, k, null, err := ReadLenEncInt(b)
	if err != nil {
		return nil, 0, err
	}
	if null {
		return nil, k, nil
	}
	if uint64(len(b)-k) < v {
		return nil, 0, errShort
	}
	return b[k : k+int(v)], k + int(v), nil
}

// AppendLenEncInt appends v as a length-encoded integer.
func AppendLenEncInt(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	default:
		return append(b, 0xfe, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
			byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
	}
}

// AppendLenEncString appends s as a length-encoded string.
func AppendLenEncString(b []byte, s []byte) []byte {
	return append(AppendLenEncInt(b, uint64(len(s))), s...)
}

func appendUint16(b []byte, v uint16) []byte { return append(b, byte(v), byte(v>>8)) }
func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}
func getUint16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func getUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// readNulString returns the bytes before the first NUL and the count consumed (NUL included).
func readNulString(b []byte) ([]byte, int, error) {
	for i, c := range b {
		if c == 0 {
			return b[:i], i + 1, nil
		}
	}
	return nil, 0, errShort
}
