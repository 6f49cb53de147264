// Package proxy is sluice's front end: listeners, the accept loop, and one session per client
// connection, which authenticates the client, reads its commands, sends each to a node and
// relays the node's response back byte for byte, decoding only the packets that carry state
// (the first packet of a response and its terminators).
package proxy
