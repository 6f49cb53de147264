package classify

import "bytes"

// hint reads a routing hint comment before the statement's first token: /*FORCE_MASTER*/,
// /*FORCE_SLAVE*/, /*FORCE_NODE='name'*/ ("name" or a bare name also), with spaces allowed
// inside the comment and the words in any case. FORCE_PRIMARY and FORCE_REPLICA are accepted as
// the same hints under today's names.
//
// The hint may follow other leading comments and whitespace (/* app:checkout */ /*FORCE_MASTER*/
// SELECT …, -- tag\n/*FORCE_SLAVE*/ …): ORMs and tracing libraries prepend comments of their
// own. The first hint among the leading comments counts. A hint after the first token is
// ignored: it may sit inside code the application did not write for routing (a query
// builder's fragment). An executable comment (/*!…*/, /*M!…*/) is statement text, so the
// leading comments end there.
//
// On a hint, the lexer starts after its comment (the comments before it are only comments);
// otherwise it starts at 0 and skips the comments as usual.
func (c *classifier) hint() {
	s := c.lx.s
	for i := skipSpace(s, 0); i < len(s); i = skipSpace(s, i) {
		switch {
		case s[i] == '#':
			i = skipLine(s, i+1)
		case s[i] == '-' && i+1 < len(s) && s[i+1] == '-' && (i+2 == len(s) || s[i+2] <= ' ' || s[i+2] == 0x7f):
			i = skipLine(s, i+2)
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*':
			if i+2 < len(s) && (s[i+2] == '!' || s[i+2] == 'M' && i+3 < len(s) && s[i+3] == '!') {
				return // an executable comment: statement text
			}
			if end, ok := c.hintAt(i); ok {
				c.lx.i = end
				return
			}
			i = skipComment(s, i+2)
		default:
			return // the statement's first token
		}
	}
}

// hintAt reads the comment that starts at s[i] ("/*") as a hint; when it is one, it sets the
// result's Hint and NodeName and returns the index after the comment.
//
// The comment ends at its first "*/", as in the server, quotes or not: a quoted node name
// cannot hold one (/*FORCE_NODE='a*/ INSERT … -- '*/ SELECT 1 is an INSERT to the server,
// and no hint).
func (c *classifier) hintAt(i int) (end int, ok bool) {
	closing := bytes.Index(c.lx.s[i+2:], []byte("*/"))
	if closing < 0 {
		return 0, false
	}
	s := c.lx.s[:i+2+closing] // the comment's text, without its "*/"
	i = skipSpace(s, i+2)
	w := i
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	var h Hint
	switch word := s[w:i]; {
	case eqFold(word, "FORCE_MASTER"), eqFold(word, "FORCE_PRIMARY"):
		h = HintForceMaster
	case eqFold(word, "FORCE_SLAVE"), eqFold(word, "FORCE_REPLICA"):
		h = HintForceSlave
	case eqFold(word, "FORCE_NODE"):
		h = HintForceNode
	default:
		return 0, false
	}
	var name [2]int32
	if h == HintForceNode {
		i = skipSpace(s, i)
		if i >= len(s) || s[i] != '=' {
			return 0, false
		}
		i = skipSpace(s, i+1)
		if i >= len(s) {
			return 0, false
		}
		start := i
		if q := s[i]; q == '\'' || q == '"' {
			start++
			i++
			for i < len(s) && s[i] != q {
				i++
			}
			if i >= len(s) {
				return 0, false
			}
			name = [2]int32{int32(start), int32(i)}
			i++
		} else {
			for i < len(s) && charClass[s[i]] != cSpace && s[i] != '*' && s[i] != '\'' && s[i] != '"' && s[i] != '/' {
				i++
			}
			name = [2]int32{int32(start), int32(i)}
		}
		if name[0] == name[1] {
			return 0, false
		}
	}
	if skipSpace(s, i) != len(s) {
		return 0, false
	}
	c.res.Hint, c.res.NodeName = h, name
	return len(s) + 2, true
}

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(s []byte, i int) int {
	for i < len(s) && charClass[s[i]] == cSpace {
		i++
	}
	return i
}

// ProxyCommand is a statement that sluice answers itself instead of sending it to a node.
type ProxyCommand uint8

// The proxy commands. Each has two spellings: SLUICE SHOW … (a keyword statement, which
// survives clients that strip comments, such as the mariadb CLI without -c) and
// /*PROXY_INTERNAL*/ SHOW … (the marker comment keeps it from meaning anything to a server).
const (
	ProxyNone       ProxyCommand = iota
	ShowLastRoute                // SLUICE SHOW LAST ROUTE: where the session's previous statement went, and why
	ShowNodes                    // SLUICE SHOW NODES: every node as the monitor last saw it
	ShowConsistency              // SLUICE SHOW CONSISTENCY: the endpoint's level and its waits
	ShowCluster                  // SLUICE SHOW CLUSTER: the sluice nodes sharing a store, and this one's link to it
	// ProxyUnknown: the statement is addressed to sluice (SLUICE …, or after the
	// /*PROXY_INTERNAL*/ marker) but names no command sluice knows. It must be answered with
	// an error listing the commands (ProxyCommands), never sent to a node: a node would answer
	// a misleading syntax error.
	ProxyUnknown
)

// ProxyCommands lists the commands sluice answers itself, as a user types them.
const ProxyCommands = "SLUICE SHOW LAST ROUTE, SLUICE SHOW NODES, SLUICE SHOW CONSISTENCY, SLUICE SHOW CLUSTER"

// proxyWords are the commands' words after SLUICE or the /*PROXY_INTERNAL*/ marker.
var proxyWords = [...]struct {
	cmd   ProxyCommand
	words []string
}{{ShowLastRoute, []string{"SHOW", "LAST", "ROUTE"}}, {ShowNodes, []string{"SHOW", "NODES"}},
	{ShowConsistency, []string{"SHOW", "CONSISTENCY"}}, {ShowCluster, []string{"SHOW", "CLUSTER"}}}

// IsProxyInternal recognises a statement addressed to sluice, in any case, with any
// whitespace around and between the words, and an optional trailing ';':
//
//   - SLUICE <command>, after leading whitespace and ordinary comments: a statement whose
//     first word is SLUICE is never valid SQL for a server, so sluice may take it.
//   - /*PROXY_INTERNAL*/ <command>, the marker being the first comment.
//
// ok reports whether the statement is addressed to sluice; cmd is then the command, or
// ProxyUnknown when the words after SLUICE or the marker name none (SLUICE SHOW ENDPOINTS).
// It never allocates.
func IsProxyInternal(stmt []byte) (cmd ProxyCommand, ok bool) {
	i := skipSpace(stmt, 0)
	if i+1 < len(stmt) && stmt[i] == '/' && stmt[i+1] == '*' {
		if j, marked := proxyMarker(stmt, i); marked {
			return proxyCommand(stmt, j), true
		}
	}
	i = skipLeading(stmt, i)
	w := i
	for i < len(stmt) && isWordByte(stmt[i]) {
		i++
	}
	if !eqFold(stmt[w:i], "SLUICE") {
		return ProxyNone, false
	}
	if j := skipLeading(stmt, i); j < len(stmt) && (stmt[j] == ':' || stmt[j] == '/') {
		// sluice: BEGIN NOT ATOMIC …, MariaDB's labelled block (comments may stand before
		// the ':'), or an executable comment that may hold the ':': the server's.
		return ProxyNone, false
	}
	return proxyCommand(stmt, i), true
}

// proxyMarker reads the comment at stmt[i] ("/*") as the /*PROXY_INTERNAL*/ marker and
// returns the index after it.
func proxyMarker(stmt []byte, i int) (int, bool) {
	i = skipSpace(stmt, i+2)
	w := i
	for i < len(stmt) && isWordByte(stmt[i]) {
		i++
	}
	if !eqFold(stmt[w:i], "PROXY_INTERNAL") {
		return 0, false
	}
	i = skipSpace(stmt, i)
	if i+1 >= len(stmt) || stmt[i] != '*' || stmt[i+1] != '/' {
		return 0, false
	}
	return i + 2, true
}

// proxyCommand is the command whose words stmt holds from i, or ProxyUnknown.
func proxyCommand(stmt []byte, i int) ProxyCommand {
	for _, c := range proxyWords {
		if words(stmt, i, c.words) {
			return c.cmd
		}
	}
	return ProxyUnknown
}

// skipLeading returns the index of the first byte at or after i that is neither whitespace nor
// in an ordinary comment (/* */, #, -- ); an executable comment (/*!, /*M!) is statement text
// and stops it, as does an unterminated comment's end.
func skipLeading(s []byte, i int) int {
	for i = skipSpace(s, i); i < len(s); i = skipSpace(s, i) {
		switch {
		case s[i] == '#':
			i = skipLine(s, i+1)
		case s[i] == '-' && i+1 < len(s) && s[i+1] == '-' && (i+2 == len(s) || s[i+2] <= ' ' || s[i+2] == 0x7f):
			i = skipLine(s, i+2)
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*':
			if i+2 < len(s) && (s[i+2] == '!' || s[i+2] == 'M' && i+3 < len(s) && s[i+3] == '!') {
				return i
			}
			i = skipComment(s, i+2)
		default:
			return i
		}
	}
	return i
}

// words reports whether stmt from i is exactly the words want (separated by whitespace),
// then an optional ';', with whitespace around.
func words(stmt []byte, i int, want []string) bool {
	for k, w := range want {
		j := skipSpace(stmt, i)
		if j == i && k > 0 {
			return false // words must be separated
		}
		i = j
		for j < len(stmt) && isWordByte(stmt[j]) {
			j++
		}
		if !eqFold(stmt[i:j], w) {
			return false
		}
		i = j
	}
	i = skipSpace(stmt, i)
	if i < len(stmt) && stmt[i] == ';' {
		i = skipSpace(stmt, i+1)
	}
	return i == len(stmt)
}
