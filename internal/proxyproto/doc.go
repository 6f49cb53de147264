// Package proxyproto writes the PROXY protocol header (HAProxy's PROXY protocol, versions 1
// and 2) that sluice sends first on a node connection it opens for a client, so that a node
// trusting sluice's address (MariaDB's proxy_protocol_networks) takes the client's address
// as the connection's: USER(), the processlist, logs and host-based grants then name the
// client, not the proxy.
//
// Only what sluice sends is here: a TCP over IPv4 or IPv6 connection (the PROXY command),
// and UNKNOWN/LOCAL for a client that has no IP address. sluice never reads the header.
// stdlib only.
package proxyproto
