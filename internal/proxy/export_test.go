package proxy

// ParseKill exposes parseKill to the external tests.
func ParseKill(q string) (uint64, bool, bool) { return parseKill([]byte(q)) }
