// Package backend is sluice's client side towards the nodes: it dials a node, performs the
// handshake and authentication (mysql_native_password and caching_sha2_password, including the
// RSA exchange), and hands the session a ready connection whose capabilities mirror what the
// proxy's own client negotiated.
package backend
