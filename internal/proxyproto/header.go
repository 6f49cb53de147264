package proxyproto

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
)

// Version is the header's version: Off (no header), V1 (text) or V2 (binary).
type Version uint8

const (
	Off Version = iota
	V1
	V2
)

// ParseVersion reads "off", "v1" or "v2" (the configuration's spelling).
func ParseVersion(s string) (Version, error) {
	switch s {
	case "off", "":
		return Off, nil
	case "v1":
		return V1, nil
	case "v2":
		return V2, nil
	}
	return Off, fmt.Errorf("proxy protocol %q: want off, v1 or v2", s)
}

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return "off"
}

// signature opens every version 2 header.
var signature = [12]byte{0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A}

// Version 2's second half-bytes: version 2 with the PROXY or LOCAL command, and the address
// families over a stream.
const (
	v2Proxy = 0x21
	v2Local = 0x20
	tcp4    = 0x11
	tcp6    = 0x21
)

// Append appends to b the header of version v for a connection from src (the client) to dst
// (the address the client connected to: sluice's listener), and returns the extended slice;
// Off appends nothing.
//
// Addresses of both families are written as IPv6 when either is IPv6 (the IPv4 one
// IPv4-mapped, as a dual-stack socket would show it); an IPv4-mapped address alone is written
// as IPv4. When src or dst is not a valid address (the client is not on IP), the header says
// so (v1 UNKNOWN, v2 LOCAL): the node then uses the connection's own address, sluice's.
func Append(b []byte, v Version, src, dst netip.AddrPort) []byte {
	if v == Off {
		return b
	}
	// A zone (fe80::1%eth0) has no place in either version: the address alone.
	s, d := src.Addr().Unmap().WithZone(""), dst.Addr().Unmap().WithZone("")
	known := src.IsValid() && dst.IsValid()
	if known && s.Is4() != d.Is4() {
		s, d = netip.AddrFrom16(s.As16()), netip.AddrFrom16(d.As16())
	}
	if v == V1 {
		if !known {
			return append(b, "PROXY UNKNOWN\r\n"...)
		}
		b = append(b, "PROXY TCP4 "...)
		if !s.Is4() {
			b[len(b)-2] = '6'
		}
		b = s.AppendTo(b)
		b = append(b, ' ')
		b = d.AppendTo(b)
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(src.Port()), 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(dst.Port()), 10)
		return append(b, "\r\n"...)
	}
	b = append(b, signature[:]...)
	if !known {
		// LOCAL, family UNSPEC, no addresses: the receiver keeps the connection's own.
		return append(b, v2Local, 0x00, 0x00, 0x00)
	}
	if s.Is4() {
		b = append(b, v2Proxy, tcp4, 0x00, 12)
		a4, b4 := s.As4(), d.As4()
		b = append(b, a4[:]...)
		b = append(b, b4[:]...)
	} else {
		b = append(b, v2Proxy, tcp6, 0x00, 36)
		a16, b16 := s.As16(), d.As16()
		b = append(b, a16[:]...)
		b = append(b, b16[:]...)
	}
	b = binary.BigEndian.AppendUint16(b, src.Port())
	return binary.BigEndian.AppendUint16(b, dst.Port())
}
